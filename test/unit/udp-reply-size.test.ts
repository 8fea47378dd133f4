// The UDP reply-size rule as a property over random datagrams: every refusal is no longer than
// the datagram that caused it, every answer at most twice as long, whatever the datagram holds
// (unknown fields, numbers JSON writes longer, long messages, long IDs).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedReply } from '../../src/core/udp-reply-size.js';
import {
  errorReply,
  monitorReply,
  parseRequest,
  successReply,
  UDP_CODES,
  type UdpCodeName,
} from '../../src/core/udp-protocol.js';
import { rng, SEED, type Rng } from '../../tools/prng.js';

const NUMBERS = ['1e20', '1E308', '-1e-7', '12345678901234567890123', '0', '7', '1.50', '2e0'];

function value(r: Rng, depth = 0): string {
  switch (r.int(0, depth > 2 ? 3 : 5)) {
    case 0:
      return r.pick(NUMBERS);
    case 1:
      return r.pick(['null', 'true', 'false', '""', '"x"', '"\\u00e9"', '"\\ud83d\\ude00"']);
    case 2:
      return JSON.stringify('s'.repeat(r.int(0, 40)));
    case 3:
      return r.pick(['[ 1 ]', '{ "a" : 1e3 }', '[1e20,1e20]']);
    case 4:
      return `[${Array.from({ length: r.int(0, 4) }, () => value(r, depth + 1)).join(',')}]`;
    default:
      return `{${Array.from({ length: r.int(0, 3) }, (_, i) => `"k${i}":${value(r, depth + 1)}`).join(',')}}`;
  }
}

/** A datagram: often a well-formed request, always with random extra fields and values. */
function datagram(r: Rng): Buffer {
  const fields: string[] = [];
  if (r.next() < 0.8) fields.push(`"action":${r.pick(['"get"', '"create"', '"monitor"', '"GET"', '1e20', 'null'])}`);
  if (r.next() < 0.8) fields.push(`"rule_name":${r.pick(['"r"', '"o2o"', '"no such"', '1e20'])}`);
  if (r.next() < 0.8) fields.push(`"app_name":${r.pick(['"a"', '"test"', '""', '[1e20]'])}`);
  for (const k of ['seq', 'salt', 'token', 'idempotency_key', 'x', 'data', 'code', 'message', 'pad'])
    if (r.next() < 0.25) fields.push(`"${k}":${value(r)}`);
  const text = r.next() < 0.05 ? value(r) : `{${fields.join(r.pick([',', ' , ']))}}`;
  return Buffer.from(text);
}

const REFUSALS: UdpCodeName[] = [
  'UNKNOWN_RULE',
  'UNAVAILABLE',
  'ID_SPACE_EXHAUSTED',
  'UNAUTHORIZED',
  'INTERNAL',
  'IDEMPOTENCY_KEY_MISMATCH',
];

describe('udp: reply size', () => {
  it(`refusals are never longer than the datagram, answers never more than twice (seed ${SEED})`, () => {
    const r = rng(SEED);
    let answered = 0;
    let refusedSent = 0;
    let silent = 0;
    for (let i = 0; i < 20000; i++) {
      const buf = datagram(r);
      const n = buf.length;
      const what = `seed ${SEED} datagram ${i}: ${buf.toString()}`;
      const parsed = parseRequest(buf);
      const refusals = parsed.ok
        ? [errorReply(parsed.req, r.pick(REFUSALS), r.next() < 0.5 ? undefined : 'm'.repeat(r.int(0, 300)))]
        : [parsed.reply];
      for (const reply of refusals) {
        const out = boundedReply(reply, n);
        if (out === undefined) silent++;
        else {
          refusedSent++;
          assert.ok(out.length <= n, `a refusal of ${out.length} bytes to ${what}: ${out.toString()}`);
          assert.equal(JSON.parse(out.toString()).code, reply.code, what);
        }
      }
      if (!parsed.ok) continue;
      const id = r.pick(['1', '505140001', '9223372036854775807', 'x'.repeat(r.int(20, 120))]);
      for (const reply of [
        successReply(parsed.req, id),
        monitorReply(parsed.req, { counter: r.int(-1, 2 ** 31), nodeOffset: r.int(0, 999) }),
      ]) {
        const out = boundedReply(reply, n);
        assert.ok(out !== undefined, what);
        assert.ok(out.length <= 2 * n, `an answer of ${out.length} bytes to ${what}: ${out.toString()}`);
        const got = JSON.parse(out.toString()) as { code: number; data?: unknown };
        if (got.code === 0) assert.deepEqual(got.data, reply.data, what);
        else assert.equal(got.code, UDP_CODES.TOO_LARGE.code, what);
        answered++;
      }
    }
    assert.ok(
      answered > 1000 && refusedSent > 5000 && silent > 100,
      `${answered} answers, ${refusedSent} refusals sent, ${silent} not`,
    );
  });

  it('answers the shortest request with an ID of up to 54 characters', () => {
    const buf = Buffer.from('{"action":"get","rule_name":"r","app_name":"a"}');
    const parsed = parseRequest(buf);
    assert.ok(parsed.ok);
    const fits = boundedReply(successReply(parsed.req, '9'.repeat(54)), buf.length)!;
    assert.equal(JSON.parse(fits.toString()).data, '9'.repeat(54));
    assert.equal(
      boundedReply(successReply(parsed.req, '9'.repeat(55)), buf.length)!.toString(),
      '{"code":-5,"message":"TOO_LARGE"}',
    );
  });

  it('never answers "{}" (2 bytes), and answers 8 KB of 1e20 numbers within its size', () => {
    const empty = parseRequest(Buffer.from('{}'));
    assert.ok(!empty.ok);
    assert.equal(boundedReply(empty.reply, 2), undefined);
    const fields = Array.from({ length: 680 }, (_, i) => `"f${i}":1e20`).join(',');
    const buf = Buffer.from(`{${fields}}`);
    const parsed = parseRequest(buf);
    assert.ok(!parsed.ok);
    const out = boundedReply(parsed.reply, buf.length)!;
    assert.equal(out.toString(), '{"code":-3,"message":"missing field action"}');
  });
});
