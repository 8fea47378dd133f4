// suite: cluster
// The websocket stream (GET /v1/stream) against real Redis and MySQL, with readers that stop:
// a slow reader bounded by the buffer limit and served once it reads, a paused reader of small
// frames that gets each frame's own IDs, a dropped socket whose IDs are never reissued and for
// which taking stops, and a shutdown that does not wait on readers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { idsOf } from '../helpers/answers.js';
import { waitFor } from '../helpers/fault-load.js';
import { BUFFER_BYTES, MAX_BLOCK, startStreamNode, type StreamNode, witnessTake } from '../helpers/stream-node.js';
import { Probe } from '../helpers/stream-probe.js';

describe('websocket stream', () => {
  const names = testNames();
  let node: StreamNode;
  let url: string;

  before(async () => {
    node = await startStreamNode(names);
    url = node.url;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('keeps a slow reader under the buffer bound and finishes its take once it reads', async () => {
    const p = await Probe.open(url);
    const N = 10_000_000;
    const tag = await node.rt.ids.reads.access('slow', undefined);
    const taken = async () => (await node.rt.segments.stats({ tag: 'slow', epoch: tag.epoch, shard: 0 })).taken;
    const before = await taken();
    const serverSockets = () => [...node.app!.websocketServer.clients];
    let maxBuffered = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const s of serverSockets()) maxBuffered = Math.max(maxBuffered, s.bufferedAmount);
        await sleep(2);
      }
    })();
    const rss0 = process.memoryUsage().rss;
    p.ws.pause(); // stop reading: the socket's kernel buffers fill, then the server waits
    const done = p.take({ req: 1, tag: 'slow', count: N, block: MAX_BLOCK, format: 'binary' });
    // The server fills what the kernel holds, then its own buffer up to the bound: from there on
    // it waits for room, with a block's worth or less to go.
    const frame = 8 + 8 * MAX_BLOCK;
    await waitFor(
      'the server to hold a full buffer for the reader',
      () => serverSockets().some((s) => s.bufferedAmount + frame > BUFFER_BYTES),
      30_000,
      5,
    );
    // A thousand turns of its event loop for the server to send what still fits; then, a
    // thousand turns later, it has taken nothing more.
    await witnessTake(node);
    const atBound = (await taken()) - before;
    assert.ok(atBound < N / 2, `the server took ${atBound} of ${N} IDs while nobody read`);
    await witnessTake(node);
    const takenWhilePaused = (await taken()) - before;
    const rssPaused = process.memoryUsage().rss;
    assert.equal(takenWhilePaused, atBound, 'the server waits for the reader instead of taking on');
    assert.ok(maxBuffered <= BUFFER_BYTES, `buffered ${maxBuffered} > ${BUFFER_BYTES}`);
    assert.ok(rssPaused - rss0 < 64 * 1024 * 1024, `RSS grew by ${rssPaused - rss0} bytes while paused`);
    p.ws.resume();
    const r = await done;
    sampling = false;
    await sampler;
    assert.equal(r.error, undefined);
    assert.equal(r.ids.length, N);
    assertIncreasing(r.ids, 'slow take');
    assert.ok(maxBuffered <= BUFFER_BYTES, `buffered ${maxBuffered} > ${BUFFER_BYTES}`);
    await p.close();
  });

  it('gives a paused reader of many small binary frames each frame with its own IDs', async () => {
    // Frames of 1,000 IDs: about a hundred wait in the server's buffer while nobody reads. A
    // frame's memory serves a later frame only once the socket has written it (frame-pool.ts);
    // used again while still queued, a queued frame would carry a later block's IDs.
    const p = await Probe.open(url);
    const count = 4_000_000;
    p.ws.pause();
    const done = p.take({ req: 1, tag: 'slow', count, block: 1000, format: 'binary' });
    await waitFor(
      'the server to hold a full buffer of small frames for the reader',
      () => [...node.app!.websocketServer.clients].some((s) => s.bufferedAmount + 8008 > BUFFER_BYTES),
      30_000,
      5,
    );
    p.ws.resume();
    const r = await done;
    assert.equal(r.error, undefined);
    assert.equal(r.ids.length, count);
    assertIncreasing(r.ids, 'small frames read after a pause');
    await p.close();
  });

  it('never reissues the IDs of a socket dropped mid-take, and stops taking for it', async () => {
    const tag = await node.rt.ids.reads.access('drop', undefined);
    const taken = async () => (await node.rt.segments.stats({ tag: 'drop', epoch: tag.epoch, shard: 0 })).taken;
    const p = await Probe.open(url);
    const got: bigint[] = [];
    p.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return;
      for (let i = 8; i < data.length; i += 8) got.push(data.readBigUInt64LE(i));
      if (got.length >= 200_000) p.ws.terminate();
    });
    const socketsBefore = node.app!.websocketServer.clients.size;
    const take = p.take({ req: 1, tag: 'drop', count: 20_000_000, block: 10_000, format: 'binary' });
    await p.whenClosed();
    void take;
    // The server notices the drop (its socket is gone) and stops taking: the count of IDs taken
    // stays put while a thousand turns of its event loop go by, twice over.
    await waitFor(
      'the server to drop the socket',
      () => node.app!.websocketServer.clients.size === socketsBefore - 1,
      10_000,
      5,
    );
    await witnessTake(node);
    const t1 = await taken();
    await witnessTake(node);
    assert.equal(await taken(), t1, 'the server kept taking IDs for a closed socket');
    assert.ok(t1 < 20_000_000, `took ${t1} IDs for a socket that read ${got.length}`);
    const highest = got.reduce((m, v) => (v > m ? v : m), 0n);
    const again = await Probe.open(url);
    const later = [
      ...(await fetchIds(url, 'drop', 1000)),
      ...idsOf(await again.take({ req: 1, tag: 'drop', count: 100_000, format: 'binary' })),
    ];
    assert.equal(later.length, 101_000);
    for (const id of later) assert.ok(id > highest, `${id} was issued again after the drop (highest sent: ${highest})`);
    assert.ok(later[0] > BigInt(t1), 'new IDs lie above everything taken for the dropped socket');
    await again.close();
  });
});

describe('websocket stream shutdown', () => {
  it('closes a node without waiting on a reader that stopped reading', async () => {
    const names = testNames();
    const node = await startLocalNode(names, { STREAM_MAX_BUFFER_BYTES: String(BUFFER_BYTES) });
    try {
      await createTag(node.url, { tag: 'bulk', step: 1_000_000, max_step: 10_000_000 });
      const p = await Probe.open(node.url);
      p.ws.pause();
      void p.take({ req: 1, tag: 'bulk', count: 10_000_000, block: 50_000, format: 'binary' });
      const queued = () => [...node.app!.websocketServer.clients].some((s) => s.bufferedAmount > 0);
      await waitFor('blocks queued for the reader that does not read', queued, 30_000, 5);
      const t0 = Date.now();
      await node.close();
      assert.ok(Date.now() - t0 < 5000, `close took ${Date.now() - t0} ms`);
      p.ws.terminate();
    } finally {
      await node.close();
      await cleanup(names);
    }
  });
});
