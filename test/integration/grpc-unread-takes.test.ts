// suite: single — one node's memory and latency under unread Take calls, no Redis key layout involved
// What unread gRPC Take calls cost a node, measured on a node of its own process (its RSS read
// from /proc): 100 calls of 10^8 IDs over 10 channels from one address, never read (from a
// child process: grpc-js keeps taking an unread call's messages off the connection and holds
// them in the client), of which GRPC_MAX_TAKES_PER_PEER (16) run and the others are refused.
// Once the node's Take buffers are full (idmint_grpc_take_buffered_bytes at its bound), the
// node has grown by less than 300 MB and another caller's p99 over 200 requests, on HTTP and on
// gRPC Next, stays under 50 ms (plus what the machine's own p99 was before the flood: on a busy
// machine it is not idmint's). The flooding client runs at the lowest CPU priority, as on
// another machine. And a
// call whose client stops reading at the HTTP/2 level stops taking IDs once its buffer is full,
// while the process's budget (GRPC_MAX_BUFFERED_BYTES) still lets every other call move on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { after, describe, it } from 'node:test';
import { freePort, startChild, type Child } from '../../tools/child.js';
import { cleanup, testNames, type TestNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { adminHeaders, createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

const PER_PEER = 16;
const MIB = 1024 * 1024;
/** STREAM_MAX_BUFFER_BYTES and GRPC_MAX_BUFFERED_BYTES by default. */
const CALL_BYTES = 4 * MIB;
const PROCESS_BYTES = 64 * MIB;
/** What the room a block asks for is reckoned at: 22 bytes per ID (take-call.ts), 10,000 IDs. */
const BLOCK_ESTIMATE = 22 * 10_000;

const rssBytes = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

async function scrape(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`, { headers: adminHeaders })).text();
}

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

/** p99 of n requests one after the other, in ms. */
async function p99(n: number, request: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await request();
    ms.push(performance.now() - start);
  }
  ms.sort((a, b) => a - b);
  return ms[Math.ceil(n * 0.99) - 1];
}

describe('unread gRPC Take calls', () => {
  const names: TestNames[] = [];
  const nodes: ChildNode[] = [];
  const children: Child[] = [];

  const start = async (extra: Record<string, string> = {}) => {
    const n = testNames();
    names.push(n);
    const node = await spawnNode(n, { GRPC_PORT: String(await freePort()), LOG_LEVEL: 'info', ...extra });
    nodes.push(node);
    return node;
  };

  after(async () => {
    for (const c of children) await c.kill();
    for (const n of nodes) await n.kill();
    for (const n of names) await cleanup(n);
  });

  it('100 over 10 channels: 16 run, the node grows by less than 300 MB and others keep a p99 under 50 ms', {
    timeout: 170_000,
  }, async (t) => {
    const node = await start();
    await createTag(node.url, { tag: 'flood' });
    await createTag(node.url, { tag: 'other' });
    const other = new IdsClient(node.grpcPort!);
    try {
      const http = () => fetchIds(node.url, 'other', 1);
      const grpc = () => other.next({ tag: 'other' });
      // Warmed up, then the machine's own latency before the flood.
      await p99(200, http);
      await p99(200, grpc);
      const before = { http: await p99(200, http), grpc: await p99(200, grpc) };
      const rss0 = rssBytes(node.pid);

      // At the lowest CPU priority: a flooding client runs on another machine, not on the node's CPUs.
      const flood = startChild(
        'nice',
        [
          '-n',
          '19',
          process.execPath,
          '--import',
          'tsx',
          'test/helpers/unread-takes.ts',
          String(node.grpcPort),
          'flood',
          '10',
          '10',
        ],
        {
          name: 'unread Take calls',
        },
      );
      children.push(flood);
      const calls = JSON.parse(await flood.waitForLine((l) => l.startsWith('{'), 60_000)) as {
        running: number;
        refused: number;
        codes: Record<string, number>;
        refusals: { idmint: string; retryAfter: string; details: string }[];
      };
      assert.equal(calls.running, PER_PEER);
      assert.equal(calls.refused, 100 - PER_PEER);
      assert.deepEqual(calls.codes, { RESOURCE_EXHAUSTED: 100 - PER_PEER });
      for (const r of calls.refusals) {
        assert.equal(r.idmint, 'LIMIT_EXCEEDED');
        assert.equal(r.retryAfter, '1');
        assert.match(r.details, /at most 16 Take calls/);
      }

      // Full: the running calls hold STREAM_MAX_BUFFER_BYTES each (less the room of a block or
      // two, which they wait for), together GRPC_MAX_BUFFERED_BYTES, and have paused at a bound.
      const full = Math.min(PROCESS_BYTES, PER_PEER * CALL_BYTES) - PER_PEER * 2 * BLOCK_ESTIMATE;
      let buffered = 0;
      await waitFor(
        `the node's Take buffers to fill (${full} bytes) and every running call to pause`,
        async () => {
          const t = await scrape(node.url);
          buffered = sample(t, 'idmint_grpc_take_buffered_bytes');
          const waits =
            sample(t, 'idmint_grpc_take_waits_total{bound="call"}') +
            sample(t, 'idmint_grpc_take_waits_total{bound="process"}');
          return buffered >= full && waits >= PER_PEER;
        },
        60_000,
      );
      const text = await scrape(node.url);
      assert.ok(sample(text, 'idmint_errors_total{transport="grpc",code="LIMIT_EXCEEDED"}') >= 100 - PER_PEER);

      const during = { http: await p99(200, http), grpc: await p99(200, grpc) };
      const grown = rssBytes(node.pid) - rss0;
      const report = `RSS +${(grown / MIB).toFixed(0)} MiB with ${(buffered / MIB).toFixed(1)} MiB buffered; p99 before ${JSON.stringify(before)} ms, during ${JSON.stringify(during)} ms`;
      t.diagnostic(report);
      assert.ok(grown < 300 * 1000 * 1000, report);
      assert.ok(during.http < 50 + before.http, report);
      assert.ok(during.grpc < 50 + before.grpc, report);
      // Never above the budget and a block per call.
      assert.ok(
        sample(await scrape(node.url), 'idmint_grpc_take_buffered_bytes') <=
          PROCESS_BYTES + PER_PEER * 2 * BLOCK_ESTIMATE,
        report,
      );
      await flood.kill();
    } finally {
      other.close();
    }
  });

  it('a call not read at the HTTP/2 level stops taking IDs once its buffer is full; the budget lets other calls on', {
    timeout: 120_000,
  }, async () => {
    // A budget of 1 MiB for the whole process: the unread call fills it alone.
    const node = await start({ GRPC_MAX_BUFFERED_BYTES: String(MIB) });
    await createTag(node.url, { tag: 'still' });
    await createTag(node.url, { tag: 'moving' });
    const first = (await fetchIds(node.url, 'still', 1))[0];

    // A raw HTTP/2 client that never reads: node's HTTP/2 then opens no window beyond the first.
    const session = connect(`http://127.0.0.1:${node.grpcPort}`);
    const stream = session.request({
      ':method': 'POST',
      ':path': '/idmint.v1.Ids/Take',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    // TakeRequest { tag: "still", count: 10^8, block: 10000 }, length-prefixed.
    const tag = Buffer.from('still');
    const body = Buffer.concat([
      Buffer.from([0x0a, tag.length]),
      tag,
      Buffer.from([0x10, 0x80, 0xc2, 0xd7, 0x2f, 0x18, 0x90, 0x4e]),
    ]);
    const header = Buffer.alloc(5);
    header.writeUInt32BE(body.length, 1);
    stream.end(Buffer.concat([header, body]));
    stream.pause();
    try {
      const paused = () =>
        scrape(node.url).then((t) => sample(t, 'idmint_grpc_take_waits_total{bound="process"}') >= 1);
      await waitFor('the unread call to pause at the process budget', paused, 30_000);
      const held = sample(await scrape(node.url), 'idmint_grpc_take_buffered_bytes');
      assert.ok(held <= MIB + BLOCK_ESTIMATE, `${held} bytes held by one call under a budget of ${MIB}`);
      const a = (await fetchIds(node.url, 'still', 1))[0];
      // IDs it took: its buffer and HTTP/2's window (1 MiB, about 10 bytes an ID), the block
      // it holds, and a chunk (COALESCE_MAX, 100,000) taken ahead; 10^8 if it did not stop.
      assert.ok(a - first < 400_000n, `the unread call took ${a - first} IDs`);

      // Another call, read to its end, moves on past the full budget: all its IDs, in order,
      // none twice. Meanwhile the unread call takes nothing.
      const client = new IdsClient(node.grpcPort!);
      const { blocks, error } = await client.take({ tag: 'moving', count: '300000', block: 10_000 });
      client.close();
      assert.equal(error, undefined);
      const ids = blocks.flatMap((b) => b.ids).map(BigInt);
      assert.equal(ids.length, 300_000);
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `ID ${ids[i]} after ${ids[i - 1]}`);
      const b = (await fetchIds(node.url, 'still', 1))[0];
      assert.equal(b, a + 1n, 'the unread call took no IDs while the other call ran');
      assert.ok(sample(await scrape(node.url), 'idmint_grpc_take_waits_total{bound="process"}') >= 1);
    } finally {
      stream.close();
      session.close();
    }
    // Cancelled, it leaves the budget.
    await waitFor(
      'the budget to empty',
      async () => sample(await scrape(node.url), 'idmint_grpc_take_buffered_bytes') === 0,
      30_000,
    );
  });
});
