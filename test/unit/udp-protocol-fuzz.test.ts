// A fuzz of the id_server UDP codec: no datagram makes it throw or go unanswered, and every
// datagram it accepts has valid fields.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRequest, successReply, type ParseResult, type UdpReply } from '../../src/core/udp-protocol.js';
import { rng, SEED } from '../../tools/prng.js';
import { MAX, wire } from '../helpers/udp-codec.js';

describe('udp: fuzz', () => {
  const r = rng(SEED);
  const VALID = [
    '{"action":"get","rule_name":"o2o","app_name":"test","seq":"7"}',
    '{"action":"create","rule_name":"o2o","app_name":"test","salt":"u1"}',
    '{"action":"monitor","rule_name":"o2o","app_name":"test","seq":[1,{"a":null}]}',
  ];
  const JUNK = [
    '{',
    '}',
    '[',
    ']',
    '"',
    ':',
    ',',
    '\\',
    'null',
    'true',
    '1e999',
    '-',
    '\u0000',
    '\ud800',
    'é',
    '__proto__',
    '"action"',
    '"get"',
  ];

  function mutate(s: string): Buffer {
    const b = Buffer.from(s);
    switch (r.int(0, 5)) {
      case 0: // random bytes
        return Buffer.from(Array.from({ length: r.int(0, 80) }, () => r.int(0, 255)));
      case 1: {
        // flip bytes
        const c = Buffer.from(b);
        for (let k = r.int(1, 4); k > 0; k--) c[r.int(0, c.length - 1)] = r.int(0, 255);
        return c;
      }
      case 2: // truncate
        return b.subarray(0, r.int(0, b.length));
      case 3: {
        // splice junk tokens in
        let t = s;
        for (let k = r.int(1, 4); k > 0; k--) {
          const at = r.int(0, t.length);
          t = t.slice(0, at) + r.pick(JUNK) + t.slice(at);
        }
        return Buffer.from(t);
      }
      case 4: // a random JSON value
        return Buffer.from(JSON.stringify(randomJson(0)) ?? 'null');
      default: // a valid request with one field replaced
        return Buffer.from(
          JSON.stringify({
            ...(JSON.parse(s) as object),
            [r.pick(['action', 'rule_name', 'app_name', 'salt', 'seq'])]: randomJson(2),
          }),
        );
    }
  }
  function randomJson(depth: number): unknown {
    const k = r.int(0, depth > 3 ? 4 : 6);
    if (k === 0) return null;
    if (k === 1) return r.next() < 0.5;
    if (k === 2) return r.int(-1e6, 1e6) / r.pick([1, 7, 1000]);
    if (k === 3) return r.pick(['get', 'create', 'monitor', '', 'o2o', 'a b', '\u0000', 'x'.repeat(r.int(0, 70))]);
    if (k === 4) return r.pick(JUNK);
    if (k === 5) return Array.from({ length: r.int(0, 3) }, () => randomJson(depth + 1));
    return Object.fromEntries(
      Array.from({ length: r.int(0, 3) }, () => [
        r.pick(['action', 'a', '__proto__', 'seq', 'z']),
        randomJson(depth + 1),
      ]),
    );
  }

  it(`never throws, and answers every refused datagram with a non-zero code (seed ${SEED})`, () => {
    let accepted = 0;
    for (let n = 0; n < 20_000; n++) {
      const buf = mutate(r.pick(VALID));
      let res: ParseResult;
      assert.doesNotThrow(
        () => {
          res = parseRequest(buf, r.pick([MAX, 64]));
        },
        `input ${buf.toString('hex')}`,
      );
      res = res!;
      if (res.ok) {
        accepted++;
        assert.ok(['get', 'monitor'].includes(res.req.action));
        assert.match(res.req.ruleName, /^[A-Za-z0-9_.-]{1,64}$/);
        assert.match(res.req.appName, /^[A-Za-z0-9_.-]{1,64}$/);
        assert.match(res.req.salt, /^[A-Za-z0-9_.-]{0,64}$/);
        JSON.parse(wire(successReply(res.req, '1')));
      } else {
        assert.equal(typeof res.reply.code, 'number');
        assert.notEqual(res.reply.code, 0, `input ${buf.toString('hex')}`);
        assert.equal(typeof res.reply.message, 'string');
        assert.ok((res.reply.message as string).length > 0);
        const back = JSON.parse(wire(res.reply)) as UdpReply;
        assert.equal(back.code, res.reply.code);
        assert.equal(back.data, undefined);
      }
    }
    assert.ok(accepted > 100, `only ${accepted} fuzzed datagrams were accepted`);
  });
});
