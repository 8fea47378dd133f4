// suite: single — the UDP protocol's encoding; rule IDs run on the cluster in rules-two-processes.test.ts
// The id_server-compatible UDP listener against real Redis and MySQL at its limits: 32 levels of
// nesting and UDP_MAX_BYTES are read and one more of either refused; with the largest
// UDP_MAX_BYTES every accepted datagram is answered, even when its echo would not fit in one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startNode, type Node } from '../../src/process/serve.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { UdpClient, type Json } from '../../tools/udp-client.js';
import { freePort } from '../../tools/child.js';
import { startUdpNode } from '../helpers/udp-node.js';

describe('UDP listener (id_server protocol)', () => {
  const names = testNames();
  const MAX = 1024;
  let node: Node;
  let port: number;
  let c: UdpClient;

  before(async () => {
    ({ node, port } = await startUdpNode(names, MAX));
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  it('reads 32 levels of nesting and UDP_MAX_BYTES, and refuses one more of either', async () => {
    // Nesting: 32 levels are read, 33 are refused.
    const deep = (n: number) =>
      `{"action":"get","rule_name":"o2o","app_name":"deep","seq":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
    assert.equal((await c.request(port, deep(32))).code, 0);
    assert.deepEqual(Object.keys(await c.request(port, deep(33))), ['code', 'message']);
    assert.equal((await c.request(port, deep(33))).code, -2);
    // A datagram of exactly UDP_MAX_BYTES is read; one byte more is not.
    const padTo = (n: number) => {
      const base = '{"action":"get","rule_name":"o2o","app_name":"size","pad":""}';
      return base.replace('"pad":""', `"pad":"${'p'.repeat(n - base.length)}"`);
    };
    assert.equal((await c.request(port, padTo(MAX))).code, 0);
    const big = await c.request(port, padTo(MAX + 1));
    assert.deepEqual([big.code, Object.keys(big)], [-5, ['code', 'message']]);
  });
});

describe('UDP listener with the largest UDP_MAX_BYTES', () => {
  const names = testNames();
  let node: Node;
  let port: number;
  let c: UdpClient;

  before(async () => {
    node = await startNode(testConfig(names, { UDP_PORT: String(await freePort()), UDP_MAX_BYTES: '65507' }));
    port = node.udpPort!;
    await createTag(node.url!, {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  // A reply is the request echoed plus code/message/data, so a request near the limit (or one
  // whose numbers re-encode longer, like 1e20 → 100000000000000000000) would give a reply over
  // 65507 bytes: it must still be answered, with an error.
  it('replies to every accepted datagram, even when the echo would not fit in one datagram', async () => {
    const base = '{"action":"get","rule_name":"o2o","app_name":"big","pad":""}';
    const padded = base.replace('"pad":""', `"pad":"${'p'.repeat(65507 - base.length)}"`);
    const numbers = `{"action":"get","rule_name":"o2o","app_name":"big","n":[${Array(3300).fill('1e20').join(',')}]}`;
    for (const text of [padded, numbers]) {
      assert.ok(Buffer.byteLength(text) <= 65507, `request of ${Buffer.byteLength(text)} bytes`);
      const raw = await c.exchange(port, text, 2000);
      const r = JSON.parse(raw) as Json;
      assert.equal(typeof r.code, 'number', raw.slice(0, 200));
    }
  });
});
