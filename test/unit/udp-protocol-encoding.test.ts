// The id_server UDP codec's replies: exact replies for the documented examples, the echo rules
// (seq of any type, no field of its own, the salt), and the encoder's key order and the values
// it cannot write as JSON.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { monitorReply, successReply, type UdpReply } from '../../src/core/udp-protocol.js';
import { ok, wire } from '../helpers/udp-codec.js';

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
