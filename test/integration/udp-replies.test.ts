// suite: single — the UDP protocol's encoding; rule IDs run on the cluster in rules-two-processes.test.ts
// The id_server-compatible UDP listener against real Redis and MySQL, answering requests:
// replies echo the protocol's fields of the request with keys sorted at every level (by UTF-8
// bytes), \`create\` is \`get\`, unknown rules answer -1 never longer than the request, and
// \`monitor\` reports the counter of the current period (for an order-node rule, the last one
// this process handed out).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Node } from '../../src/process/serve.js';
import { cleanup, testNames } from '../../tools/env.js';
import { UdpClient, type Json, type JsonValue } from '../../tools/udp-client.js';
import { canonical, echoed, todayUtc } from '../helpers/udp-replies.js';
import { startUdpNode } from '../helpers/udp-node.js';

describe('UDP listener (id_server protocol)', () => {
  const names = testNames();
  const MAX = 1024;
  let node: Node;
  let url: string;
  let port: number;
  let c: UdpClient;

  before(async () => {
    ({ node, url, port } = await startUdpNode(names, MAX));
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  it("echoes the protocol's fields and no other, with keys sorted by UTF-8 bytes at every level, as compact JSON", async () => {
    const text =
      '{"seq":{"z":[3,{"b":null,"a":"x"}],"ｚ":1,"😀":2,"é":3,"A":true},"zeta":-1.5,"rule_name":"salted","Alpha":"A",' +
      '"app_name":"shop","salt":"u1","_x":"y","action":"get","data":"client","code":99,"message":"hi","nested":{"deep":{"deeper":[[],{},"\\u00e9\\ud83d\\ude00"]}}}';
    const t0 = Date.now();
    const raw = await c.exchange(port, text);
    const reply = JSON.parse(raw) as Json;
    assert.equal(reply.code, 0, raw);
    assert.equal(reply.message, 'success');
    const day = new Date(t0).toISOString().slice(0, 10).replaceAll('-', '');
    assert.match(reply.data as string, new RegExp(`^shop-${day}-u1\\d{4}$`));
    const want = { ...echoed(JSON.parse(text) as Json, text), code: 0, message: 'success', data: reply.data };
    assert.equal(raw, canonical(want));
    // The order spelled out: upper case, "_", lower case; then é (C3 A9), ｚ (EF BD 9A), 😀 (F0 9F 98 80).
    assert.deepEqual(Object.keys(reply), ['action', 'app_name', 'code', 'data', 'message', 'rule_name', 'salt', 'seq']);
    assert.deepEqual(Object.keys(reply.seq as Json), ['A', 'z', 'é', 'ｚ', '😀']);
    assert.deepEqual(Object.keys(((reply.seq as Json).z as JsonValue[])[1] as Json), ['a', 'b']);
    assert.equal(/\s/.test(raw.replace(/"(?:[^"\\]|\\.)*"/g, '""')), false, `whitespace outside strings: ${raw}`);

    // Each kind of seq comes back as sent, on a plain rule too; HTTP sees the same salt rule.
    for (const seq of ['7', 7, null, false, [1, '2', [3]], { b: 1, a: [{ d: 0, c: 0 }] }, '', 'é😀']) {
      const r = await c.request(port, { action: 'get', app_name: 'test', rule_name: 'o2o', seq });
      assert.equal(r.code, 0);
      assert.deepEqual(r.seq, seq);
      assert.match(r.data as string, new RegExp(`^${todayUtc(t0)}\\d{4}$`));
    }
    const h = (await (await fetch(`${url}/v1/id/salted?app=shop&salt=u1`)).json()) as { id: string };
    assert.equal(h.id, `shop-${day}-u1${String(Number((reply.data as string).slice(-4)) + 1).padStart(4, '0')}`);
  });

  it('treats create as get: one run of counters, the action echoed as sent', async () => {
    const ids: string[] = [];
    for (const action of ['get', 'create', 'get', 'create', 'create']) {
      const r = await c.request(port, { action, rule_name: 'o2o', app_name: 'cr', salt: null, seq: action });
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.equal(r.action, action);
      assert.equal(r.salt, null);
      ids.push(r.data as string);
    }
    const h = (await (await fetch(`${url}/v1/id/o2o?app=cr`)).json()) as { id: string };
    ids.push(h.id);
    assert.deepEqual(
      ids.map((id) => id.slice(5)),
      ['0000', '0001', '0002', '0003', '0004', '0005'],
    );
  });

  it('answers an unknown rule with code -1 and no data, never longer than the request', async () => {
    for (const action of ['get', 'create', 'monitor']) {
      // Room for the whole message (the pad is not echoed): the request's fields echoed.
      const long = JSON.stringify({
        action,
        rule_name: 'nope',
        app_name: 'test',
        seq: 9,
        pad: 'p'.repeat(200),
        data: 'from the client',
        extra: { x: [1] },
      });
      let raw = await c.exchange(port, long);
      const r = JSON.parse(raw) as Json;
      assert.ok(Buffer.byteLength(raw) <= Buffer.byteLength(long), raw);
      assert.ok((r.message as string).includes('nope'), raw);
      assert.equal(
        raw,
        canonical({ action, app_name: 'test', code: -1, message: r.message, rule_name: 'nope', seq: 9 }),
      );
      // No room: code, the code's name and seq only.
      const short = JSON.stringify({ action, rule_name: 'nope', app_name: 'test', seq: 9 });
      raw = await c.exchange(port, short);
      assert.equal(raw, '{"code":-1,"message":"UNKNOWN_RULE","seq":9}');
      assert.ok(Buffer.byteLength(raw) <= Buffer.byteLength(short));
    }
  });

  it('monitor answers the counter of the current period and the node offset, with message "ok"', async () => {
    const mon = (extra: Json = {}) =>
      c.request(port, { action: 'monitor', rule_name: 'o2o', app_name: 'mon', ...extra });
    let r = await mon({ seq: 'm0' });
    assert.deepEqual(r, {
      action: 'monitor',
      app_name: 'mon',
      code: 0,
      data: { counter: -1, node_offset: 7 },
      message: 'ok',
      rule_name: 'o2o',
      seq: 'm0',
    });
    let last = '';
    for (let i = 0; i < 3; i++)
      last = (await c.request(port, { action: 'get', rule_name: 'o2o', app_name: 'mon' })).data as string;
    // monitor ignores the salt, even one get would refuse.
    const raw = await c.exchange(
      port,
      JSON.stringify({ action: 'monitor', rule_name: 'o2o', app_name: 'mon', salt: 'not valid!', seq: [1] }),
    );
    assert.equal(
      raw,
      canonical({
        action: 'monitor',
        app_name: 'mon',
        code: 0,
        data: { counter: 2, node_offset: 7 },
        message: 'ok',
        rule_name: 'o2o',
        salt: 'not valid!',
        seq: [1],
      }),
    );
    assert.equal(last.slice(5), '0002');
    await fetch(`${url}/v1/ids/o2o?count=5&app=mon`);
    r = await mon();
    assert.deepEqual(r.data, { counter: 7, node_offset: 7 });
    // Per app name; and only for rules.
    assert.deepEqual((await c.request(port, { action: 'monitor', rule_name: 'o2o', app_name: 'cr' })).data, {
      counter: 5,
      node_offset: 7,
    });
    r = await c.request(port, { action: 'monitor', rule_name: 'seg', app_name: 'mon' });
    assert.equal(r.code, -3);
    assert.equal('data' in r, false);
  });

  it('monitor of an order-node rule answers the last counter this process handed out, not the end of its block', async () => {
    const mon = async (app: string) =>
      (await c.request(port, { action: 'monitor', rule_name: 'o2n', app_name: app })).data;
    assert.deepEqual(await mon('fresh'), { counter: -1, node_offset: 7 });
    let last = '';
    for (let i = 0; i < 3; i++)
      last = (await c.request(port, { action: 'get', rule_name: 'o2n', app_name: 'fresh' })).data as string;
    assert.equal(last.slice(5), '0002');
    assert.deepEqual(await mon('fresh'), { counter: 2, node_offset: 7 });
    const http = (await (await fetch(`${url}/v1/ids/o2n?count=4&app=fresh`)).json()) as { ids: string[] };
    assert.equal(http.ids.at(-1)!.slice(5), '0006');
    assert.deepEqual(await mon('fresh'), { counter: 6, node_offset: 7 });
    // Another app of the same rule has its own counter.
    assert.deepEqual(await mon('other'), { counter: -1, node_offset: 7 });
  });
});
