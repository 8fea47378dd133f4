// UDP under fuzzing: the codes UDP.md allows for a datagram, generators of datagrams (requests
// and malformed ones) and the check of each reply.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Json } from '../../tools/udp-client.js';
import { udpRequestShape } from '../helpers/udp-oracle.js';
import { ID_TAGS, lockedToken, RULE_TAGS, UDP_MAX_BYTES } from './fuzz-run.js';
import { nastyString } from './fuzz-values.js';
import { ID_POOL } from './fuzz-http-parts.js';

// ---- UDP ----

/** The codes UDP.md allows for a datagram; `echo` when the reply must echo a request object. */
export function udpExpected(buf: Buffer): { codes: number[]; echo: boolean; tag?: string } {
  const shape = udpRequestShape(buf, UDP_MAX_BYTES);
  if (shape.code !== 0 || !shape.request) return { codes: [shape.code], echo: shape.request !== undefined };
  const o = shape.request;
  const rule = o.rule_name as string;
  const tag = Object.keys(ID_TAGS).find((t) => t === rule);
  // Names that differ from a tag only in letter case: UDP.md does not say how they resolve.
  if (tag === undefined)
    return {
      codes: Object.keys(ID_TAGS).some((t) => t.toLowerCase() === rule.toLowerCase()) ? [-1, 0, -3, -6, -7, -8] : [-1],
      echo: true,
    };
  // Without its token a protected tag answers as a missing one (the exposure policy).
  const authorized = tag !== 'locked' || o.token === lockedToken;
  if (!authorized) return { codes: [-1], echo: true, tag };
  if (tag === 'off') return { codes: [-7], echo: true, tag };
  if (o.action === 'monitor') return { codes: RULE_TAGS.has(tag) ? [0] : [-3], echo: true, tag };
  // A sharded tag needs a key, which the protocol has no field for.
  if (tag === 'shard') return { codes: [-3], echo: true, tag };
  if (tag === 'tiny') return { codes: [0, -6], echo: true, tag };
  return { codes: [0], echo: true, tag };
}

export const jsonText = (v: unknown) => JSON.stringify(v);
export const udpField = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<unknown>(...ID_POOL, 'nope', 'SEG', 'Rule') },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(
      '',
      'a b',
      'x'.repeat(65),
      'x'.repeat(5000),
      'é',
      7,
      -1,
      1.5,
      true,
      null,
      [],
      ['rule'],
      { a: 1 },
    ),
  },
);
export const udpRequest = fc
  .record(
    {
      action: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom<unknown>('get', 'create', 'monitor') },
        {
          weight: 1,
          arbitrary: fc.constantFrom<unknown>('GET', 'delete', '', 'get ', 'x'.repeat(3000), 5, null, ['get'], {
            get: 1,
          }),
        },
      ),
      rule_name: udpField,
      app_name: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom<unknown>('shop', 'a.b-c_D') },
        { weight: 1, arbitrary: udpField },
      ),
      salt: fc.constantFrom<unknown>(null, '', 'u1', 'x'.repeat(64), 'x'.repeat(65), 'bad salt', 5, [], {}),
      token: fc.constantFrom<unknown>('LOCKED', 'nope', '', 5, null),
      seq: fc.jsonValue({ maxDepth: 3 }),
      code: fc.constantFrom<unknown>(0, 99, 'x'),
      data: fc.constantFrom<unknown>('client data', 1, null),
      message: fc.constant<unknown>('from the client'),
      extra: fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.integer({ min: 1, max: 9000 }).map((n) => 'e'.repeat(n)),
      ),
    },
    { requiredKeys: [] },
  )
  .map((o) => (o.token === 'LOCKED' ? { ...o, token: lockedToken } : o));

export const datagramArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 10, arbitrary: udpRequest.map((o) => Buffer.from(jsonText(o))) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 1500 }).map((b) => Buffer.from(b)) },
  { weight: 2, arbitrary: fc.json({ maxDepth: 3 }).map((s) => Buffer.from(s)) },
  {
    weight: 1,
    arbitrary: fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), nastyString).map((s) => Buffer.from(jsonText(s))),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        udpRequest,
        fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80]),
        fc.nat(),
      )
      .map(([o, bad, at]) => {
        const s = Buffer.from(jsonText(o));
        const i = at % (s.length + 1);
        return Buffer.concat([s.subarray(0, i), Buffer.from(bad), s.subarray(i)]);
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 80 })
      .map((n) =>
        Buffer.from(`{"action":"get","rule_name":"rule","app_name":"shop","seq":${'['.repeat(n)}1${']'.repeat(n)}}`),
      ),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: UDP_MAX_BYTES - 200, max: 30_000 })
      .map((n) => Buffer.from(`{"action":"get","rule_name":"rule","app_name":"shop","pad":"${'p'.repeat(n)}"}`)),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        '',
        ' ',
        '{}',
        '[]',
        'null',
        '0',
        '1e309',
        '"x"',
        '{"action":"get"}',
        '{"action":"get","rule_name":"rule","app_name":"shop","action":"GET"}',
        '{"action":"get","rule_name":"rule","app_name":"shop","__proto__":{"x":1}}',
        '{"action":"get","rule_name":"rule","app_name":"shop","n":1e309}',
      )
      .map((s) => Buffer.from(s)),
  },
);

export function checkUdp(buf: Buffer, raw: string): void {
  const exp = udpExpected(buf);
  const what = `datagram ${buf.toString('utf8', 0, 300)} (${buf.length} bytes) → ${raw.slice(0, 300)}`;
  let r: Json;
  try {
    r = JSON.parse(raw) as Json;
  } catch {
    assert.fail(`a reply that is not JSON: ${what}`);
  }
  assert.ok(typeof r === 'object' && r !== null && !Array.isArray(r), what);
  assert.ok(Number.isInteger(r.code), what);
  assert.ok(exp.codes.includes(r.code as number), `code ${String(r.code)}, expected one of ${exp.codes}: ${what}`);
  assert.equal(typeof r.message, 'string', what);
  assert.ok((r.message as string).length > 0, what);
  if (r.code !== 0) {
    assert.equal('data' in r, false, `an error reply carries data: ${what}`);
  } else if ((JSON.parse(buf.toString('utf8')) as Json).action === 'monitor') {
    assert.equal(r.message, 'ok', what);
    assert.ok(Number.isInteger((r.data as Json).counter), what);
  } else {
    assert.equal(r.message, 'success', what);
    assert.ok(exp.tag !== undefined && ID_TAGS[exp.tag](r.data as string), `not a valid ID of ${exp.tag}: ${what}`);
  }
  if (!exp.echo) assert.deepEqual(Object.keys(r).sort(), ['code', 'message'], what);
}
