// suite: single — flushes the script cache of a private redis-server
// Redis forgets its scripts when it restarts, on SCRIPT FLUSH, and when a replica that never
// ran them is promoted. A script call then gets NOSCRIPT, which means the script did not run,
// and sends the script itself with EVAL (src/store/redis/scripts.ts). Checked against a real
// redis-server whose script cache is flushed between calls: the take alone, takes pipelined on
// one connection when the scripts went (each gets its own IDs, in the order they were sent),
// and a script that is not the take's. Without the fallback every call here fails with NOSCRIPT.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRedis, whenReady, type RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { loadedScripts } from '../../src/store/redis/scripts.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { commandStat } from '../../tools/redis-stats.js';

describe('script calls after Redis forgot its scripts', () => {
  let server: RedisServer;
  let redis: RedisClient;
  let store: SegmentStore;

  /** SCRIPT FLUSH on another connection; the EVAL calls the server has run so far. */
  const flush = () =>
    withRedis(server.url, async (admin) => {
      assert.equal(await admin.script('FLUSH'), 'OK');
      assert.deepEqual(await admin.script('EXISTS', loadedScripts()['take-2'].sha), [0], 'the take is forgotten');
    });
  const evals = () => withRedis(server.url, async (admin) => (await commandStat(admin, 'eval')).calls);

  /** A counter ready to take from: created cold, then given the segment [1, 1e6]. */
  async function ready(tag: string): Promise<SegmentRef> {
    const ref: SegmentRef = { tag, epoch: 1, shard: 0 };
    const cold = await store.take(ref, 1, 0.5);
    assert.equal(cold.status, 'cold');
    assert.equal(await store.install(ref, cold.gen, [1, 1_000_000], 0.5), 'current');
    return ref;
  }

  before(async () => {
    server = await RedisServer.start();
    redis = createRedis(server.url, 'command', 5000);
    await whenReady(redis);
    store = new SegmentStore({ default: redis }, new Keys('idmint:test:script-reload:'));
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('takes again after SCRIPT FLUSH, sending the script once, and continues where it was', async () => {
    const ref = await ready('alone');
    assert.deepEqual((await store.take(ref, 3, 0.5)).ranges, [[1, 3]]);
    await flush();
    const before = await evals();
    const r = await store.take(ref, 2, 0.5);
    assert.equal(r.status, 'ok');
    assert.deepEqual(r.ranges, [[4, 5]], 'the take ran once: no ID skipped, none repeated');
    assert.equal((await evals()) - before, 1, 'the script was sent once, after its NOSCRIPT');
    assert.deepEqual((await store.take(ref, 1, 0.5)).ranges, [[6, 6]]);
    assert.equal((await evals()) - before, 1, 'then called by its SHA-1 again');
  });

  it('gives takes pipelined when the scripts went their own IDs, in the order they were sent', async () => {
    const ref = await ready('pipelined');
    await store.take(ref, 1, 0.5);
    await flush();
    const before = await evals();
    const replies = await Promise.all(Array.from({ length: 8 }, () => store.take(ref, 1, 0.5)));
    assert.deepEqual(
      replies.map((r) => r.ranges),
      [2, 3, 4, 5, 6, 7, 8, 9].map((v) => [[v, v]]),
    );
    assert.equal((await evals()) - before, 8, 'each call in flight sent the script after its own NOSCRIPT');
  });

  it('runs a script that is not the take (install) after SCRIPT FLUSH', async () => {
    const ref: SegmentRef = { tag: 'install', epoch: 1, shard: 0 };
    const cold = await store.take(ref, 1, 0.5);
    assert.equal(cold.status, 'cold');
    await flush();
    assert.equal(await store.install(ref, cold.gen, [1, 100], 0.5), 'current');
    assert.deepEqual((await store.take(ref, 2, 0.5)).ranges, [[1, 2]]);
  });
});
