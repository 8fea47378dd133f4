// The id_server UDP codec: exact replies for the documented examples, every error code, the
// echo rules, key order, the code table against docs/UDP.md, and a fuzz that no datagram
// makes it throw or go unanswered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  DEFAULT_MAX_DATAGRAM_BYTES,
  encodeReply,
  errorReply,
  MAX_JSON_DEPTH,
  monitorReply,
  parseRequest,
  successReply,
  UDP_CODES,
  type ParseResult,
  type UdpReply,
  type UdpRequest,
} from '../../src/core/udp-protocol.js';
import { toIdmintError } from '../../src/api/error-policy.js';
import { errorReplyFor, UDP_CODE } from '../../src/api/error-replies.js';
import { ERROR_CODES, IdmintError, type ErrorCode } from '../../src/errors.js';
import { rng, SEED } from '../../tools/prng.js';

const MAX = DEFAULT_MAX_DATAGRAM_BYTES;
const parse = (text: string | Buffer, max = MAX): ParseResult =>
  parseRequest(typeof text === 'string' ? Buffer.from(text) : text, max);
const wire = (r: UdpReply) => encodeReply(r).toString('utf8');

function ok(text: string): UdpRequest {
  const r = parse(text);
  assert.ok(r.ok, `refused: ${r.ok ? '' : wire(r.reply)}`);
  return r.req;
}
function refused(text: string | Buffer, max = MAX): UdpReply {
  const r = parse(text, max);
  assert.ok(!r.ok, 'the datagram was accepted');
  return r.reply;
}

describe('udp: the id_server examples', () => {
  it('answers get with the request echoed, keys sorted', () => {
    const req = ok('{"action":"get","rule_name":"o2o","app_name":"test","seq":"7"}');
    assert.deepEqual(
      { ...req, body: undefined },
      { action: 'get', ruleName: 'o2o', appName: 'test', salt: '', body: undefined },
    );
    assert.equal(
      wire(successReply(req, '505140001')),
      '{"action":"get","app_name":"test","code":0,"data":"505140001","message":"success","rule_name":"o2o","seq":"7"}',
    );
  });

  it('treats create as get and echoes the action as sent', () => {
    const req = ok('{"action":"create","rule_name":"o2o","app_name":"test"}');
    assert.equal(req.action, 'get');
    assert.equal(
      wire(successReply(req, '1')),
      '{"action":"create","app_name":"test","code":0,"data":"1","message":"success","rule_name":"o2o"}',
    );
  });

  it('answers monitor with the counter state', () => {
    const req = ok('{"action":"monitor","rule_name":"o2o","app_name":"test"}');
    assert.equal(req.action, 'monitor');
    assert.equal(
      wire(monitorReply(req, { counter: 3, nodeOffset: 1 })),
      '{"action":"monitor","app_name":"test","code":0,"data":{"counter":3,"node_offset":1},"message":"ok","rule_name":"o2o"}',
    );
  });

  it('echoes seq of any JSON type, nested keys sorted, and no field of its own', () => {
    const req = ok(
      '{"seq":{"z":1,"a":[{"y":2,"b":3}]},"x":null,"action":"get","rule_name":"r","app_name":"a","n":1.5,"t":true}',
    );
    assert.equal(
      wire(successReply(req, '9')),
      '{"action":"get","app_name":"a","code":0,"data":"9","message":"success","rule_name":"r","seq":{"a":[{"b":3,"y":2}],"z":1}}',
    );
    // A value JSON would write back longer than it was sent is not echoed.
    for (const seq of ['1e20', '1E3', '[ 1 ]', '{"a": 1}', '1e2']) {
      const r = ok(`{"action":"get","rule_name":"r","app_name":"a","seq":${seq}}`);
      assert.equal(JSON.parse(wire(successReply(r, '1'))).seq, undefined, seq);
    }
    for (const seq of ['1', '7', '-3.25', 'null', '[1,"2"]', '"é\\u0000"']) {
      const r = ok(`{"action":"get","rule_name":"r","app_name":"a","seq":${seq}}`);
      assert.deepEqual(JSON.parse(wire(successReply(r, '1'))).seq, JSON.parse(seq));
    }
  });

  it('reads the salt (null and absent mean none; monitor ignores it)', () => {
    assert.equal(ok('{"action":"get","rule_name":"r","app_name":"a","salt":"u-1.x_Y"}').salt, 'u-1.x_Y');
    assert.equal(ok('{"action":"get","rule_name":"r","app_name":"a","salt":null}').salt, '');
    assert.equal(ok('{"action":"get","rule_name":"r","app_name":"a","salt":""}').salt, '');
    assert.equal(ok('{"action":"monitor","rule_name":"r","app_name":"a","salt":5}').salt, '');
  });
});

describe('udp: errors', () => {
  const codeOf = (r: UdpReply) => r.code;

  it('has one distinct code per meaning, 0 and -1 as in id_server', () => {
    const codes = Object.values(UDP_CODES).map((c) => c.code);
    assert.equal(new Set(codes).size, codes.length);
    assert.equal(UDP_CODES.SUCCESS.code, 0);
    assert.equal(UDP_CODES.UNKNOWN_RULE.code, -1);
    for (const c of codes) assert.ok(c <= 0 && Number.isInteger(c));
  });

  it('answers bytes that are no JSON object with code and message only', () => {
    const cases: [input: string | Buffer, message: string][] = [
      ['{"action":', 'the datagram is not valid JSON'],
      ['', 'empty datagram'],
      [Buffer.from([0x7b, 0xff, 0x7d]), 'the datagram is not valid UTF-8'],
      ['[1,2]', 'the request must be a JSON object, got an array'],
      ['"get"', 'the request must be a JSON object, got "get"'],
      ['42', 'the request must be a JSON object, got number'],
      ['null', 'the request must be a JSON object, got null'],
      [
        `{"action":"get","seq":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`,
        `the request is nested deeper than ${MAX_JSON_DEPTH} levels`,
      ],
    ];
    for (const [input, message] of cases) {
      assert.deepEqual(refused(input), { code: UDP_CODES.MALFORMED.code, message }, String(input));
    }
    assert.equal(wire(refused('nope')), '{"code":-2,"message":"the datagram is not valid JSON"}');
    // These replies echo no request: the listener sends one only when it is no longer than the datagram.
    for (const [input] of cases) {
      const r = parse(input);
      assert.ok(!r.ok && !r.echoed, String(input));
    }
    const noAction = parse('{"seq":1}');
    assert.ok(!noAction.ok && noAction.echoed, 'a refused request object is echoed');
    ok(
      `{"action":"get","rule_name":"r","app_name":"a","seq":${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}}`,
    );
  });

  it('accepts a UTF-8 byte order mark and surrounding whitespace', () => {
    ok('\ufeff {"action":"get","rule_name":"r","app_name":"a"}\n');
  });

  it('refuses oversized datagrams without reading them', () => {
    const big = `{"action":"get","rule_name":"r","app_name":"a","seq":"${'x'.repeat(200)}"}`;
    assert.deepEqual(refused(big, 100), {
      code: UDP_CODES.TOO_LARGE.code,
      message: `datagram of ${big.length} bytes is over the limit of 100`,
    });
    ok(big.slice(0, 0) + big);
    assert.ok(parse(big, big.length).ok);
  });

  it('names missing and invalid fields, echoing the request without data', () => {
    const r = refused('{"action":"get","seq":"s1","data":"123"}');
    assert.equal(
      wire(r),
      '{"action":"get","code":-3,"message":"missing field rule_name; missing field app_name","seq":"s1"}',
    );
    const cases: [body: string, message: string][] = [
      ['{"rule_name":"r","app_name":"a"}', 'missing field action'],
      ['{"action":7,"rule_name":"r","app_name":"a"}', 'action must be a string, got number'],
      ['{"action":"get","rule_name":"r b","app_name":"a"}', 'rule_name must match [A-Za-z0-9_.-]{1,64}, got "r b"'],
      ['{"action":"get","rule_name":"","app_name":"a"}', 'rule_name must match [A-Za-z0-9_.-]{1,64}, got ""'],
      ['{"action":"get","rule_name":["r"],"app_name":"a"}', 'rule_name must match [A-Za-z0-9_.-]{1,64}, got an array'],
      ['{"action":"get","rule_name":"r","app_name":1}', 'app_name must match [A-Za-z0-9_.-]{1,64}, got number'],
      ['{"action":"monitor","rule_name":"r"}', 'missing field app_name'],
      [
        '{"action":"get","rule_name":"r","app_name":"a","salt":"x y"}',
        'salt must match [A-Za-z0-9_.-]{0,64}, got "x y"',
      ],
      ['{"action":"get","rule_name":"r","app_name":"a","salt":12}', 'salt must match [A-Za-z0-9_.-]{0,64}, got number'],
      [
        `{"action":"get","rule_name":"r","app_name":"a","salt":"${'s'.repeat(65)}"}`,
        `salt must match [A-Za-z0-9_.-]{0,64}, got "${'s'.repeat(64)}..."`,
      ],
    ];
    for (const [body, message] of cases) {
      const reply = refused(body);
      assert.deepEqual(
        { code: reply.code, message: reply.message },
        { code: UDP_CODES.INVALID_FIELD.code, message },
        body,
      );
      const sent = JSON.parse(body) as Record<string, unknown>;
      const echoed = {
        ...Object.fromEntries(
          Object.entries(sent).filter(([, v]) => typeof v === 'string' || body.includes(JSON.stringify(v))),
        ),
        code: reply.code,
        message,
      };
      assert.deepEqual(JSON.parse(wire(reply)), echoed);
    }
  });

  it('answers an unknown action instead of guessing monitor', () => {
    const r = refused('{"action":"GET","rule_name":"r","app_name":"a","seq":1}');
    assert.equal(
      wire(r),
      '{"action":"GET","app_name":"a","code":-4,"message":"unknown action \\"GET\\"; expected get, create or monitor","rule_name":"r","seq":1}',
    );
    assert.equal(
      codeOf(refused('{"action":"__proto__","rule_name":"r","app_name":"a"}')),
      UDP_CODES.UNKNOWN_ACTION.code,
    );
    assert.equal(
      codeOf(refused('{"action":"toString","rule_name":"r","app_name":"a"}')),
      UDP_CODES.UNKNOWN_ACTION.code,
    );
  });

  it('does not echo a "__proto__" key, nor take it as the prototype', () => {
    const req = ok('{"action":"get","rule_name":"r","app_name":"a","__proto__":{"polluted":1}}');
    const reply = successReply(req, '1');
    assert.equal(
      wire(reply),
      '{"action":"get","app_name":"a","code":0,"data":"1","message":"success","rule_name":"r"}',
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('builds error replies for requests and for thrown errors', () => {
    const req = ok('{"action":"get","rule_name":"nope","app_name":"a","seq":"9"}');
    assert.equal(
      wire(errorReply(req, 'UNKNOWN_RULE', 'no rule named "nope"')),
      '{"action":"get","app_name":"a","code":-1,"message":"no rule named \\"nope\\"","rule_name":"nope","seq":"9"}',
    );
    assert.equal(errorReply(req, 'UNAVAILABLE').message, UDP_CODES.UNAVAILABLE.meaning);
    assert.deepEqual(errorReply(null, 'INTERNAL', 'x'), { code: -9, message: 'x' });
    assert.equal(
      errorReplyFor(req, new IdmintError('ID_SPACE_EXHAUSTED', 'o2o reached max_counter 9999 today')).code,
      UDP_CODES.ID_SPACE_EXHAUSTED.code,
    );
    assert.equal(
      errorReplyFor(req, new IdmintError('ID_SPACE_EXHAUSTED', 'o2o reached max_counter 9999 today')).message,
      'o2o reached max_counter 9999 today',
    );
    assert.equal(errorReplyFor(req, new IdmintError('TAG_NOT_FOUND', 'x')).code, -1);
    assert.equal(errorReplyFor(req, new IdmintError('LEASE_LOST', 'x')).code, UDP_CODES.UNAVAILABLE.code);
    assert.equal(errorReplyFor(req, new IdmintError('UNAUTHORIZED', 'x')).code, UDP_CODES.UNAUTHORIZED.code);
    // Whatever is thrown reaches the reply as the error policy makes it (api/error-policy.ts).
    const internal = errorReplyFor(req, toIdmintError(new Error('password=hunter2 in a stack')));
    assert.deepEqual([internal.code, internal.message], [UDP_CODES.INTERNAL.code, 'internal error']);
    assert.equal(errorReplyFor(null, toIdmintError('a string')).code, UDP_CODES.INTERNAL.code);
    assert.equal(errorReplyFor(req, new IdmintError('INTERNAL', 'secret detail')).message, 'internal error');
  });

  it('maps every registry error code to a UDP code', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[])
      assert.ok(UDP_CODE[code] in UDP_CODES, `${code} has no UDP code`);
  });
});

describe('udp: encoding', () => {
  it('sorts digit-only keys as text too (a JS object lists them first, by number)', () => {
    const r = { 10: 1, 9: 2, a: 3, '007': 4, code: 0 } as unknown as UdpReply;
    assert.equal(wire(r), '{"007":4,"10":1,"9":2,"a":3,"code":0}');
    assert.equal(
      wire({ b: { 2: 'x', 10: 'y' }, a: [1, { 3: null, z: true }] } as unknown as UdpReply),
      '{"a":[1,{"3":null,"z":true}],"b":{"10":"y","2":"x"}}',
    );
    // An own "__proto__" key (JSON.parse makes one) is written like any other key.
    assert.equal(wire(JSON.parse('{"z":1,"__proto__":"p","a":2}') as UdpReply), '{"__proto__":"p","a":2,"z":1}');
  });

  it('sorts keys by code point (UTF-8 byte order), as jsoncpp does', () => {
    const r = { b: 1, B: 2, a: 3, _: 4, é: 5, '\uffff': 6, '😀': 7, aa: 8, '': 9 } as UdpReply;
    assert.deepEqual(Object.keys(JSON.parse(wire(r))), ['', 'B', '_', 'a', 'aa', 'b', 'é', '\uffff', '😀']);
    const keys = Object.keys(r);
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual(Object.keys(JSON.parse(wire(r))), byBytes);
  });

  it('never throws: non-finite numbers become null, cycles become an internal error', () => {
    assert.equal(
      wire({ code: 0, n: Number.NaN, i: Number.POSITIVE_INFINITY } as UdpReply),
      '{"code":0,"i":null,"n":null}',
    );
    const cyclic: Record<string, unknown> = { code: 0 };
    cyclic.self = cyclic;
    assert.equal(wire(cyclic as UdpReply), '{"code":-9,"message":"internal error: the reply could not be encoded"}');
    assert.equal(
      wire({ code: 0, big: 12345678901234567890n } as unknown as UdpReply),
      '{"big":12345678901234567890,"code":0}',
    );
  });
});

describe('udp: the code table in docs/UDP.md', () => {
  it('lists every code with its number, and nothing else', () => {
    const doc = readFileSync(new URL('../../docs/UDP.md', import.meta.url), 'utf8');
    const documented = new Map<string, number>();
    for (const m of doc.matchAll(/^\| (-?\d+) \| `([A-Z_]+)` \|/gm)) documented.set(m[2], Number(m[1]));
    assert.ok(documented.size > 5, 'the code table of docs/UDP.md was not found');
    for (const [name, def] of Object.entries(UDP_CODES))
      assert.equal(documented.get(name), def.code, `docs/UDP.md: ${name}`);
    for (const name of documented.keys()) assert.ok(name in UDP_CODES, `docs/UDP.md lists unknown code ${name}`);
  });
});

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
