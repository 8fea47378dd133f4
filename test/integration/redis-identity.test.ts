// suite: single — the server identity of the scripts, on private redis-servers
// Segment hashes and worker-id spaces record the identity of the Redis master that wrote them
// (src/store/redis/commands/includes/server-identity.lua); a script never trusts state written
// under another identity, since it may lag behind IDs and leases already handed out:
//   - a server restarted from a snapshot at the same address;
//   - a master demoted to a replica of its former replica (which had missed its last writes),
//     resynchronised from it and promoted again: the same process, with the same run id,
//     now holding the replica's older data.
import assert from 'node:assert/strict';
import { after, afterEach, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { skipOnCluster } from '../../tools/env.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { redisIdentity, redisRunId } from '../../tools/redis-stats.js';
import { Keys } from '../../src/store/redis/keys.js';
import { LeaseStore } from '../../src/store/redis/leases.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';
import { waitFor } from '../helpers/fault-load.js';

const PREFETCH = 0.9;
const refs: SegmentRef[] = ['a', 'b'].map((tag) => ({ tag, epoch: 1, shard: 0 }));

/** Two tags installed and taken from; highest maps each tag to the highest ID handed out. */
async function serving(
  store: SegmentStore,
): Promise<{ takeAll: (k: number) => Promise<void>; highest: Map<string, number> }> {
  for (const ref of refs) {
    const cold = await store.take(ref, 1, PREFETCH);
    assert.equal(cold.status, 'cold');
    assert.equal(await store.install(ref, cold.gen, [1, 1_000_000], PREFETCH), 'current');
  }
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
  return { takeAll, highest };
}

/** Every restored hash is refused: the take answers 'replaced' and gives nothing. */
async function assertRefused(store: SegmentStore, redis: Redis, highest: Map<string, number>): Promise<void> {
  for (const ref of refs) {
    const lagging = Number(await redis.hget(store.key(ref), 'cur'));
    assert.ok(
      lagging <= highest.get(ref.tag)!,
      `the restored hash of ${ref.tag} lags (cursor ${lagging}, IDs handed out up to ${highest.get(ref.tag)})`,
    );
    const t = await store.take(ref, 3, PREFETCH);
    assert.equal(t.status, 'replaced', `the first take of ${ref.tag} answered ${t.status} ${JSON.stringify(t.ranges)}`);
    assert.equal(
      await redis.hget(store.key(ref), 'rid'),
      await redisIdentity(redis),
      'the hash was started afresh under the identity of now',
    );
  }
}

/** Waits until the replica at url has synchronised with its master. */
const linkUp = (url: string) =>
  waitFor(
    `the replica at ${url} synchronised`,
    () => withRedis(url, async (r) => /master_link_status:up/.test(await r.info('replication'))),
    10000,
  );

describe('the server identity of segment hashes and worker-id spaces', {
  skip: skipOnCluster('it restarts and reconfigures its own redis-servers'),
}, () => {
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  const connect = (s: RedisServer) => {
    const r = new Redis(s.url, { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    r.on('error', () => undefined);
    clients.push(r);
    return r;
  };

  afterEach(async () => {
    for (const r of clients.splice(0)) r.disconnect();
  });
  after(async () => {
    for (const s of servers) await s.stop();
  });

  it('never hands out an ID a snapshot restored at the same address still holds', { timeout: 30000 }, async () => {
    const server = await RedisServer.start();
    servers.push(server);
    const redis = connect(server);
    const store = new SegmentStore({ default: redis }, new Keys('snap'));
    const { takeAll, highest } = await serving(store);
    await takeAll(50);
    await redis.call('SAVE');
    // Handed out after the snapshot: the restored hashes do not know them.
    await takeAll(50);
    await server.kill();
    await server.start();
    await redis.ping();
    await assertRefused(store, redis, highest);
  });

  it('never hands out an ID or a worker id again after a master was resynchronised from a lagging replica and promoted again', {
    timeout: 30000,
  }, async () => {
    const master = await RedisServer.start();
    const replica = await RedisServer.start();
    servers.push(master, replica);
    // A master with its replica (attached first: a master's first replica gives it a new
    // replication id, and so a new identity).
    await withRedis(replica.url, (r) => r.call('REPLICAOF', '127.0.0.1', String(master.port)));
    await linkUp(replica.url);
    const redis = connect(master);
    const keys = new Keys('back');
    const store = new SegmentStore({ default: redis }, keys);
    const leases = new LeaseStore(redis, keys);
    const { takeAll, highest } = await serving(store);
    const ttl = 60_000;
    const horizon = () => Date.now() + ttl;
    const first = await leases.acquire(4, 'node-a x:1', ttl, -1, horizon());
    assert.equal(first.kind, 'leased');
    await leases.clearGuard(4);
    await takeAll(20);

    // The replica gets everything so far, then is cut off and promoted (by someone else): the
    // master goes on handing out IDs and a second worker id the replica never sees.
    assert.equal(await redis.call('WAIT', '1', '5000'), 1);
    await withRedis(replica.url, (r) => r.call('REPLICAOF', 'NO', 'ONE'));
    await takeAll(20);
    const second = await leases.acquire(4, 'node-b x:2', ttl, -1, horizon());
    assert.ok(second.kind === 'leased', `a second worker id was leased (${second.kind})`);
    assert.equal(second.guardMs, 0, 'the space was not guarded before the failback');
    const runBefore = await redisRunId(redis);

    // The master follows its former replica (a full resync: its data is now the replica's) and
    // is promoted again; nobody used the replica meanwhile, so the hashes still carry the
    // master's old identity.
    await redis.call('REPLICAOF', '127.0.0.1', String(replica.port));
    await linkUp(master.url);
    await redis.call('REPLICAOF', 'NO', 'ONE');
    assert.equal(await redisRunId(redis), runBefore, 'the same server process serves again');
    assert.equal(await redis.exists(keys.workerLease(4, second.workerId)), 0, "the second worker id's lease was lost");

    await assertRefused(store, redis, highest);
    // The lease a node still holds is not handed out again at once: the space is guarded.
    const third = await leases.acquire(4, 'node-c x:3', ttl, second.workerId, horizon());
    assert.ok(
      third.guardMs >= Date.now() + ttl - 5000,
      `the space is guarded for one TTL after the change (guard ${third.guardMs - Date.now()} ms ahead)`,
    );
  });

  it('refuses to run on a replica', { timeout: 30000 }, async () => {
    const master = await RedisServer.start();
    const replica = await RedisServer.start();
    servers.push(master, replica);
    await withRedis(replica.url, (r) => r.call('CONFIG', 'SET', 'replica-read-only', 'no'));
    await withRedis(replica.url, (r) => r.call('REPLICAOF', '127.0.0.1', String(master.port)));
    await linkUp(replica.url);
    const store = new SegmentStore({ default: connect(replica) }, new Keys('ro'));
    await assert.rejects(store.take(refs[0], 1, PREFETCH), /replica/);
  });
});
