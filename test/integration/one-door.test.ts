// suite: single — one listener per transport on one node; no Redis key layout involved
// One door: every transport issues through IdService.issue(request), each with the shape it
// encodes (one ID, IDs, counter runs, a held block), and answers the IDs that door gave. A
// transport that took IDs any other way would answer without a request being seen here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { UdpClient } from '../../tools/udp-client.js';
import type { IdService, IssueRequest } from '../../src/service/id-service.js';

/** The first JSON text frame of a stream take that carries IDs. */
function streamIds(url: string, take: Record<string, unknown>): Promise<string[]> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ op: 'take', req: 1, count: 3, format: 'json', ...take })));
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { op: string; ids?: string[]; message?: string };
      if (m.op === 'error') reject(new Error(m.message));
      if (m.op !== 'block') return;
      ws.close();
      resolve(m.ids!);
    });
  });
}

describe('one door for issuing', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let grpc: IdsClient;
  let udp: UdpClient;
  /** Requests through the door, "<as> <tag>", since the last reset. */
  const seen: string[] = [];

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()), UDP_PORT: String(await freePort()) });
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    await createTag(node.url, { tag: 'seg' });
    await createTag(node.url, { tag: 'blk', order: 'node', node_block: 50 });
    await createTag(node.url, { tag: 'snow', mode: 'snowflake' });
    await createTag(node.url, { tag: 'day', mode: 'rule', template: '{yyyy}{counter:6}', max_counter: 999999 });
    const ids = node.rt.ids;
    const door = ids.issue.bind(ids) as (req: IssueRequest) => unknown;
    ids.issue = ((req: IssueRequest) => {
      seen.push(`${req.as} ${req.tag}`);
      return door(req);
    }) as IdService['issue'];
  });
  after(async () => {
    grpc?.close();
    udp?.close();
    await node?.close();
    await cleanup(names);
  });

  const cases: [string, string[], () => Promise<unknown>][] = [
    [
      'the HTTP route',
      ['ids seg'],
      async () => (await (await fetch(`${node.url}/v1/ids/seg?count=2`)).json()) as unknown,
    ],
    [
      'the pre-router path (or the route it steps aside to)',
      ['one seg'],
      async () => (await (await fetch(`${node.url}/v1/id/seg`)).json()) as unknown,
    ],
    ["Leaf's snowflake route", ['one snow'], async () => (await fetch(`${node.url}/api/snowflake/get/snow`)).text()],
    [
      "Tinyid's nextIdSimple",
      ['ids seg'],
      async () => (await fetch(`${node.url}/tinyid/id/nextIdSimple?bizType=seg&batchSize=3`)).text(),
    ],
    [
      "Tinyid's nextSegmentId",
      ['held blk'],
      async () => (await (await fetch(`${node.url}/tinyid/id/nextSegmentId?bizType=blk`)).json()) as unknown,
    ],
    ['gRPC Next', ['ids snow'], () => grpc.next({ tag: 'snow', count: 2 })],
    ['gRPC Take', ['runs seg'], async () => (await grpc.take({ tag: 'seg', count: 3 })).blocks],
    ['the websocket stream', ['ids day'], () => streamIds(node.url, { tag: 'day', app: 'shop' })],
    ['UDP', ['one day'], () => udp.request(node.udpPort!, { action: 'get', rule_name: 'day', app_name: 'shop' })],
  ];
  for (const [transport, through, call] of cases) {
    it(`${transport} issues through the door`, async () => {
      seen.length = 0;
      const answer = await call();
      assert.ok(answer !== undefined && answer !== '', `${transport} answered: ${JSON.stringify(answer)}`);
      assert.deepEqual([...new Set(seen)], through, `${transport}: ${JSON.stringify(answer)}`);
    });
  }
});
