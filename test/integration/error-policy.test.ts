// suite: single — one listener per transport on one node; no Redis key layout involved
// One error policy for every transport: a refused request of each (idmint's HTTP route, the
// pre-router path, Leaf's and Tinyid's routes, gRPC, the websocket stream, UDP) moves its own
// series of idmint_errors_total{transport, code}, and no other transport's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { IdsClient, failure } from '../../tools/grpc-client.js';
import { UdpClient } from '../../tools/udp-client.js';

type Counts = Map<string, number>;

/** Every series of idmint_errors_total, keyed "transport/code". */
async function errorCounts(url: string): Promise<Counts> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Counts = new Map();
  for (const m of text.matchAll(/^idmint_errors_total\{([^}]*)\} (\d+)$/gm)) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    out.set(`${labels.transport}/${labels.code}`, Number(m[2]));
  }
  return out;
}

/** The series that moved between two readings, with how much. */
function moved(before: Counts, after: Counts): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v !== (before.get(k) ?? 0)) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** The error message a stream take of a tag answers. */
function streamError(url: string, tag: string): Promise<{ code: string }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ op: 'take', req: 1, tag, count: 5 })));
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { op: string; code: string };
      if (m.op !== 'error') return;
      ws.close();
      resolve(m);
    });
  });
}

describe('one error policy for every transport', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let grpc: IdsClient;
  let udp: UdpClient;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()), UDP_PORT: String(await freePort()) });
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    // A tag that runs out after 25 IDs: its definition is cached once it has served.
    await createTag(node.url, { tag: 'lim', step: 10, min_step: 10, max_id_limit: 25 });
  });
  after(async () => {
    grpc?.close();
    udp?.close();
    await node?.close();
    await cleanup(names);
  });

  const cases: [string, string, () => Promise<void>][] = [
    [
      'the HTTP route',
      'http/TAG_NOT_FOUND',
      async () => assert.equal((await fetch(`${node.url}/v1/ids/nope?count=2`)).status, 404),
    ],
    [
      'the pre-router path',
      'http/ID_SPACE_EXHAUSTED',
      async () => {
        assert.equal((await fetchIds(node.url, 'lim', 25)).length, 25);
        const r = await fetch(`${node.url}/v1/id/lim`);
        assert.equal(r.status, 409, await r.text());
      },
    ],
    [
      'a Leaf route',
      'leaf/TAG_NOT_FOUND',
      async () => assert.equal((await fetch(`${node.url}/api/segment/get/nope`)).status, 404),
    ],
    [
      'a Tinyid route',
      'tinyid/TAG_NOT_FOUND',
      async () =>
        assert.equal(await (await fetch(`${node.url}/tinyid/id/nextIdSimple?bizType=nope&token=x`)).text(), ''),
    ],
    [
      'gRPC',
      'grpc/TAG_NOT_FOUND',
      async () => assert.equal((await failure(grpc.next({ tag: 'nope' }))).idmint, 'TAG_NOT_FOUND'),
    ],
    [
      'the websocket stream',
      'stream/TAG_NOT_FOUND',
      async () => assert.equal((await streamError(node.url, 'nope')).code, 'TAG_NOT_FOUND'),
    ],
    [
      'UDP',
      'udp/TAG_NOT_FOUND',
      async () =>
        assert.equal((await udp.request(node.udpPort!, { action: 'get', rule_name: 'nope', app_name: 'a' })).code, -1),
    ],
    [
      'UDP, a request the protocol refuses',
      'udp/INVALID_ARGUMENT',
      async () =>
        assert.equal((await udp.request(node.udpPort!, { action: 'GET', rule_name: 'nope', app_name: 'a' })).code, -4),
    ],
  ];
  for (const [transport, series, refuse] of cases) {
    it(`counts a refusal of ${transport} as ${series}`, async () => {
      const before = await errorCounts(node.url);
      await refuse();
      assert.deepEqual(moved(before, await errorCounts(node.url)), { [series]: 1 });
    });
  }
});
