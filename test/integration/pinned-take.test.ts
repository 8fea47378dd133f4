// suite: single — the pinned take script of a single Redis server, on a private redis-server
// The take's copy with the run id as a constant (src/store/redis/pinned-take.ts) on a private
// redis-server restarted from a snapshot at the same address: the snapshot's hashes lag behind
// IDs already handed out, and no take may trust them, neither the first after the restart
// (its EVALSHA of the old copy must not run) nor later ones through the new process's copy.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { skipOnCluster } from '../../tools/env.js';
import { RedisServer } from '../../tools/redis-server.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';

const PREFETCH = 0.9;

async function waitLoaded(store: SegmentStore, loads: number): Promise<void> {
  const pinned = store.pinned.get('default')!;
  for (let i = 0; i < 250 && pinned.counts.loads < loads; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(pinned.counts.loads >= loads, `the copy was loaded ${pinned.counts.loads} times, expected ${loads}`);
}

describe('the pinned take across a restart from a snapshot', { skip: skipOnCluster('it restarts its own redis-server') }, () => {
  let server: RedisServer;
  let redis: Redis;
  let store: SegmentStore;
  const keys = new Keys('pin');
  const refs: SegmentRef[] = ['a', 'b'].map((tag) => ({ tag, epoch: 1, shard: 0 }));

  before(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    redis.on('error', () => undefined);
    store = new SegmentStore({ default: redis }, keys);
  });

  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('never hands out an ID the lagging snapshot still holds', { timeout: 30000 }, async () => {
    for (const ref of refs) {
      const cold = await store.take(ref, 1, PREFETCH);
      assert.equal(cold.status, 'cold');
      assert.equal(await store.install(ref, cold.gen, [1, 1_000_000], PREFETCH), 'current');
    }
    await waitLoaded(store, 1);
    const pinned = store.pinned.get('default')!;
    const before = pinned.counts.pinned;
    const highest = new Map<string, number>();
    const takeAll = async (k: number) => {
      for (let i = 0; i < k; i++) {
        for (const ref of refs) {
          const t = await store.take(ref, 3, PREFETCH);
          assert.equal(t.status, 'ok');
          highest.set(ref.tag, t.ranges.at(-1)![1]);
        }
      }
    };
    await takeAll(50);
    await redis.call('SAVE');
    // Handed out after the snapshot: the restored hashes do not know them.
    await takeAll(50);
    assert.ok(pinned.counts.pinned >= before + 200, `the steady-state takes ran the copy (${pinned.counts.pinned - before} of 200)`);

    await server.kill();
    await server.start();
    await redis.ping();
    const lagging = Number(await redis.hget(store.key(refs[0]), 'cur'));
    assert.ok(lagging <= highest.get('a')!, `the restored hash lags (cursor ${lagging}, IDs handed out up to ${highest.get('a')})`);

    // The first take after the restart: the old copy is not in the new process's cache.
    const first = await store.take(refs[0], 3, PREFETCH);
    assert.equal(first.status, 'replaced', `the first take after the restart answered ${first.status} ${JSON.stringify(first.ranges)}`);
    // Once the new process has its own copy, it refuses the other restored hash as well.
    await waitLoaded(store, 2);
    const pinnedBefore = pinned.counts.pinned;
    const second = await store.take(refs[1], 3, PREFETCH);
    assert.equal(pinned.counts.pinned, pinnedBefore + 1, "the take ran the new process's copy");
    assert.equal(second.status, 'replaced', `a take through the new copy answered ${second.status} ${JSON.stringify(second.ranges)}`);
    for (const ref of refs) assert.equal(await redis.hget(store.key(ref), 'rid'), /run_id:(\w+)/.exec(await redis.info('server'))![1]);
  });

  it('sends the copy by SCRIPT LOAD only, never by EVAL, also after the cache was flushed', { timeout: 10000 }, async () => {
    const evals: string[] = [];
    const loads: string[] = [];
    const monitor = await redis.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      const cmd = args[0].toLowerCase();
      if (cmd === 'eval') evals.push(args[1]);
      if (cmd === 'script' && args[1].toLowerCase() === 'load') loads.push(args[2]);
    });
    const pinned = store.pinned.get('default')!;
    try {
      await redis.call('SCRIPT', 'FLUSH');
      const loaded = pinned.counts.loads;
      for (const ref of refs) await store.take(ref, 1, PREFETCH);
      await waitLoaded(store, loaded + 1);
      for (const ref of refs) await store.take(ref, 1, PREFETCH);
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      monitor.disconnect();
    }
    const constantRunId = /'[0-9a-f]{40}'/;
    assert.ok(
      loads.some((t) => constantRunId.test(t)),
      'the copy was loaded by SCRIPT LOAD',
    );
    assert.ok(evals.length > 0, 'the full script was sent by EVAL after the flush');
    for (const t of evals) assert.ok(!constantRunId.test(t), 'a script with a constant run id was sent by EVAL');
  });
});
