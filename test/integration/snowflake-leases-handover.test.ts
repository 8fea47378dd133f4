// suite: cluster
// Worker-id leases of snowflake tags changing hands, against real Redis and MySQL: a process
// that gets its old id back after another holder used it stays above that holder's IDs,
// processes taking the first lease of a new space together do not wait, and the janitor
// removes the lease queues of nodes whose heartbeat lapsed and keeps the live ones.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock, systemClock } from '../../src/core/clock.js';
import { PRESETS, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { LeaseManager } from '../../src/service/lease-manager.js';
import { SnowflakeGenerator } from '../../src/service/snowflake-generator.js';
import { migrate } from '../../src/store/mysql/migrations.js';
import { createPool } from '../../src/store/mysql/pool.js';
import { SpacesRepo } from '../../src/store/mysql/spaces-repo.js';
import { Keys } from '../../src/store/redis/keys.js';
import { LeaseStore } from '../../src/store/redis/leases.js';
import { cleanup, testNames, testRedis, type TestNames } from '../../tools/env.js';
import { sweepDeadLeaseQueues } from '../../src/consumer/janitor-worker.js';
import { leaseQueueName } from '../../src/jobs/lease-renewal.js';
import { LeaseScheduler } from '../../src/producer/lease-scheduler.js';
import { MARGIN, msOf, SF, silent, TTL, workerOf } from '../helpers/snowflake-lease-load.js';

describe('a process that gets its old worker id back after another process used it', () => {
  const names = testNames();
  const redis = testRedis();
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it("issues only after the other holder's last timestamp (clocks 100 ms apart)", async () => {
    const keys = new Keys(names.prefix);
    const store = new LeaseStore(redis, keys);
    const newSpace = { markUsed: async () => true } as unknown as SpacesRepo;
    const layout: SnowflakeLayout = { ...PRESETS.snowflake, workerBits: 1 }; // ids 0 and 1
    const opts = (nodeId: string) => ({ ttlMs: TTL, marginMs: MARGIN, nodeId, addr: `${nodeId}:1` });
    const base = keys.workerSpace(1);
    const t0 = Date.now();
    // B's clock reads 100 ms later than A's.
    const clockA = new ManualClock(t0);
    const clockB = new ManualClock(t0 + 100);

    const a = new LeaseManager(store, newSpace, clockA, opts('proc-a'), silent);
    const genA = new SnowflakeGenerator(layout, a, clockA, 10);
    const first = await genA.take(3);
    assert.ok(first.every((id) => workerOf(id, layout) === 0));
    // Id 1 is held by a third process throughout.
    await redis.set(`${base}w:1`, 'proc-c c:1', 'PX', 60000);

    // A is cut off: its key lapses in Redis, and its own deadline passes.
    await redis.del(`${base}w:0`);
    clockB.set(t0 + TTL + 100); // the same instant on B's clock
    const b = new LeaseManager(store, newSpace, clockB, opts('proc-b'), silent);
    const genB = new SnowflakeGenerator(layout, b, clockB, 10);
    const fromB = await genB.take(5);
    const leaseB = b.held()[0];
    assert.equal(leaseB.workerId, 0, 'precondition: B took the id A lost');
    assert.equal(leaseB.floorMs, t0 + TTL, "B starts above A's horizon");
    assert.ok(fromB.every((id) => msOf(id, layout) === t0 + TTL + 100));
    await b.releaseAll(); // B stops gracefully
    assert.equal(Number(await redis.get(`${base}last:0`)), t0 + TTL + 100);

    // 100 ms of real time later A is back; its clock, 100 ms behind B's, now reads what B's
    // read when B issued. A's lease is past its deadline, so it acquires again: id 0 is free.
    clockA.set(t0 + TTL + 100);
    let done = false;
    const taking = genA.take(5).finally(() => (done = true));
    await sleep(50);
    const waited = !done;
    clockA.advance(1);
    const fromA = await taking;
    const leaseA = a.held()[0];
    assert.equal(leaseA.workerId, 0, 'precondition: A got its old id back');
    assert.ok(leaseA.floorMs >= t0 + TTL + 100, "A's lease knows B's last timestamp");
    const repeated = fromA.filter((id) => fromB.includes(id));
    assert.deepEqual(repeated, [], `A repeated ${repeated.length} of B's IDs`);
    assert.ok(
      fromA.every((id) => msOf(id, layout) > leaseA.floorMs),
      'A issued at or before the floor of its lease',
    );
    assert.ok(waited, 'A issued within the ms B last issued at');
  });
});

describe('a new deployment', () => {
  const names: TestNames = testNames();
  const redis = testRedis();
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('lets processes that take the first leases of a new space at the same time issue at once', async () => {
    const pool = await createPool(names.mysqlUrl);
    try {
      await migrate(pool);
      const store = new LeaseStore(redis, new Keys(names.prefix));
      const spaces = new SpacesRepo(pool);
      const managers = [0, 1, 2].map(
        (i) =>
          new LeaseManager(
            store,
            spaces,
            systemClock,
            { ttlMs: TTL, marginMs: MARGIN, nodeId: `new-${i}`, addr: `h:${i}` },
            silent,
          ),
      );
      const leases = await Promise.all(managers.map((m) => m.get(10)));
      const now = Date.now();
      assert.equal(new Set(leases.map((l) => l.workerId)).size, 3);
      const waiting = leases
        .filter((l) => l.floorMs > now)
        .map((l) => `worker ${l.workerId} must wait ${l.floorMs - now} ms`);
      assert.deepEqual(waiting, [], 'a space used for the first time made processes wait out a guard');
      const gens = managers.map((m) => new SnowflakeGenerator(SF, m, systemClock, 10));
      const results = await Promise.allSettled(gens.map((g) => g.take(1)));
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'fulfilled'],
        JSON.stringify(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok'))),
      );
    } finally {
      await pool.end();
    }
  });
});

describe('the janitor', () => {
  const names = testNames();
  const redis = testRedis();
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('removes the lease queues of nodes whose heartbeat lapsed, through BullMQ, and keeps the live ones', async () => {
    const keys = new Keys(names.prefix);
    const prefix = keys.queuePrefix();
    const store = new LeaseStore(redis, keys);
    const schedulers = ['ghost-1', 'live-1', 'self-1'].map(
      (node) => new LeaseScheduler(redis, prefix, node, 60000, 30000),
    );
    try {
      for (const s of schedulers) await s.start();
      await store.heartbeat('live-1', 60000);
      const meta = (node: string) => `${prefix}:${leaseQueueName(node)}:meta`;
      assert.equal(
        await redis.exists(meta('ghost-1')),
        1,
        'a lease queue has a meta key (the layout the janitor finds queues by)',
      );
      const removed = await sweepDeadLeaseQueues(redis, redis, prefix, store, 'self-1');
      assert.deepEqual(removed, ['ghost-1']);
      assert.deepEqual(await schedulers[0].queue.getJobSchedulers(), [], "the dead node's renewal scheduler is gone");
      assert.equal(await redis.exists(meta('ghost-1')), 0, "the dead node's queue is obliterated");
      assert.equal((await schedulers[1].queue.getJobSchedulers()).length, 1, 'the live node keeps its renewals');
      assert.equal(
        (await schedulers[2].queue.getJobSchedulers()).length,
        1,
        "the janitor's own node keeps its renewals",
      );
      assert.deepEqual(
        await sweepDeadLeaseQueues(redis, redis, prefix, store, 'self-1'),
        [],
        'a second sweep finds nothing',
      );
    } finally {
      for (const s of schedulers) await s.stop();
    }
  });
});
