// The id_server UDP codec's errors: every error code and the datagrams refused with it, what a
// refusal echoes, error replies for requests and thrown errors, and the code table against
// docs/UDP.md.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { errorReply, MAX_JSON_DEPTH, successReply, UDP_CODES, type UdpReply } from '../../src/core/udp-protocol.js';
import { toIdmintError } from '../../src/api/error-policy.js';
import { errorReplyFor, UDP_CODE } from '../../src/api/error-replies.js';
import { ERROR_CODES, IdmintError, type ErrorCode } from '../../src/errors.js';
import { ok, parse, refused, wire } from '../helpers/udp-codec.js';

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
