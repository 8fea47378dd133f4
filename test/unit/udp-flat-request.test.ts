// The flat reading of a request datagram (src/core/udp-flat-request.ts) against the general
// way it stands in for: over generated datagrams, close to the plain form and just off it
// (escapes, other whitespace, non-string values, fields given twice, bytes outside ASCII,
// trailing bytes, cut or flipped bytes), parseRequest must give exactly what the general way
// (readJsonRequest: UTF-8, JSON.parse, the echo of the protocol's fields) gives, the echoed
// fields in the same order. The seed is printed; FUZZ_SEED replays a run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { readFlatRequest } from '../../src/core/udp-flat-request.js';
import { ECHOED_FIELDS, parseRequest, readJsonRequest, type ParseResult } from '../../src/core/udp-protocol.js';
import { params } from '../helpers/fuzz-run.js';

const RUNS = 20_000;

/** Field names: the echoed ones, near misses and others. */
const key = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...ECHOED_FIELDS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('Action', 'actio', 'actions', 'rule', 'app', '__proto__', 'seq ', 'constructor', ''),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
);

/** Text of a value: plain strings mostly, and every kind the plain form does not take. */
const plainChars = fc.constantFrom(..."abcXYZ019_.-~ !#$%&'()*+,/:;<=>?@[]^`{|}");
const valueText = fc.oneof(
  { weight: 10, arbitrary: fc.string({ unit: plainChars, maxLength: 12 }).map((s) => JSON.stringify(s)) },
  { weight: 3, arbitrary: fc.constantFrom('get', 'create', 'monitor', 'o2o', 'app-1', 'u1', '7').map((s) => `"${s}"`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"a\\"b"',
      '"\\u0061"',
      '"\\n"',
      '"é"',
      '"\u007f"',
      '"\t"',
      '7',
      '-0',
      '1e20',
      'null',
      'true',
      '[1,"2"]',
      '{"a":"b"}',
      '""',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }).map((s) => JSON.stringify(s)) },
);

const space = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  { weight: 3, arbitrary: fc.constantFrom(' ', '\n', '\r\n', '\t', '  ') },
  { weight: 1, arbitrary: fc.constantFrom('\v', '\f', '\u00a0', '\ufeff') },
);

const keyText = fc.oneof(
  { weight: 12, arbitrary: key.map((k) => JSON.stringify(k)) },
  { weight: 1, arbitrary: fc.constantFrom('"\\u0061ction"', '"rule\\u005fname"', 'action', "'seq'") },
);

/** A datagram: an object of members written with random spacing, then perhaps spoiled. */
const datagram = fc
  .record({
    members: fc.array(fc.tuple(space, keyText, space, space, valueText, space), { maxLength: 9 }),
    lead: space,
    inner: space,
    trail: space,
    after: fc.oneof(
      { weight: 12, arbitrary: fc.constant('') },
      { weight: 1, arbitrary: fc.constantFrom(',', '}', 'x', '{}') },
    ),
    spoil: fc.oneof(
      { weight: 10, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }) },
      { weight: 1, arbitrary: fc.record({ at: fc.nat(), byte: fc.constant(-1) }) },
    ),
  })
  .map(({ members, lead, inner, trail, after, spoil }) => {
    const body = members.map(([a, k, b, c, v, d]) => `${a}${k}${b}:${c}${v}${d}`).join(',');
    const buf = Buffer.from(`${lead}{${members.length === 0 ? inner : body}}${trail}${after}`, 'utf8');
    if (spoil === undefined || buf.length === 0) return buf;
    const at = spoil.at % buf.length;
    // -1: cut the datagram there; else set one byte.
    if (spoil.byte < 0) return buf.subarray(0, at);
    const out = Buffer.from(buf);
    out[at] = spoil.byte;
    return out;
  });

/** The result with each body's keys listed in order, so that deepEqual also holds the order. */
function withOrder(r: ParseResult): unknown {
  const body = r.ok ? r.req.body : r.echoed ? r.reply : undefined;
  return { r, keys: body === undefined ? [] : Object.keys(body) };
}

describe('udp: the flat reading of a request', () => {
  it('gives what the general way gives, for every generated datagram', () => {
    let flat = 0;
    fc.assert(
      fc.property(datagram, (buf) => {
        if (readFlatRequest(buf) !== undefined) flat++;
        assert.deepEqual(withOrder(parseRequest(buf)), withOrder(readJsonRequest(buf)), buf.toString('latin1'));
      }),
      params(RUNS),
    );
    // The generator reaches both ways: a property over only the general way would hold trivially.
    assert.ok(flat > RUNS / 10 && flat < RUNS - RUNS / 10, `${flat} of ${RUNS} datagrams read the flat way`);
  });

  it('reads the datagrams of id_server clients the flat way', () => {
    for (const text of [
      '{"action":"create","rule_name":"o2o","app_name":"app3-7","salt":"u12","seq":"123"}',
      '{"action":"get","rule_name":"o2o","app_name":"test","seq":"7"}',
      '{ "action": "get", "rule_name": "o2o", "app_name": "test" }\n',
    ]) {
      const fields = readFlatRequest(Buffer.from(text));
      assert.ok(fields !== undefined, text);
      const parsed = JSON.parse(text) as Record<string, string>;
      assert.deepEqual(fields, parsed);
    }
  });

  it('leaves every datagram off the plain form to the general way', () => {
    for (const text of [
      '{"action":"get","action":"create","rule_name":"o2o","app_name":"a"}',
      '{"action":"get","rule_name":"o2o","app_name":"a","seq":7}',
      '{"action":"get","rule_name":"o\\u0032o","app_name":"a"}',
      '{"action":"get","rule_name":"o2o","app_name":"é"}',
      '{"action":"get","rule_name":"o2o","app_name":"a"} x',
      '{"action":"get","rule_name":"o2o","app_name":"a",}',
      '\u000b{"action":"get"}',
      '{"action":"get"',
    ])
      assert.equal(readFlatRequest(Buffer.from(text)), undefined, text);
  });
});
