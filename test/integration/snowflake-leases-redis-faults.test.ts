// suite: cluster
// Worker-id leases of snowflake tags when Redis fails, against real Redis and MySQL, with a
// short lease TTL: a process cut off from Redis stops with 503 LEASE_LOST before its lease can
// lapse, its id is reused safely and it resumes after; Redis restarted empty under load never
// makes an ID come twice, and new leases wait out the guard before every process serves again.
// Both need a single redis-server of their own, so a cluster run skips them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Node } from '../../src/process/serve.js';
import { Keys } from '../../src/store/redis/keys.js';
import { REDIS_URL, cleanup, skipOnCluster, testNames } from '../../tools/env.js';
import { createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';
import { redisRunId } from '../../tools/redis-stats.js';
import { assertIncreasing } from '../../tools/order.js';
import { waitFor } from '../helpers/fault-load.js';
import {
  assertNoDuplicates,
  LEASE_ENV,
  loop,
  MARGIN,
  msOf,
  okIds,
  ownWorker,
  type Rec,
  spaceOf,
  stopOrKill,
  TTL,
  workerOf,
  workers,
} from '../helpers/snowflake-lease-load.js';

// A TCP proxy can cut one process off a single server; cluster clients follow the nodes'
// own addresses around any proxy.
describe('a process cut off from Redis', {
  skip: skipOnCluster('it cuts one process off Redis with a TCP proxy in front of a single server'),
}, () => {
  const names = testNames();
  let redis: Redis;
  const keys = new Keys(names.prefix);
  let proxy: TcpProxy;
  let cut: ChildNode | undefined;
  let other: Node | undefined;

  before(async () => {
    redis = new Redis(REDIS_URL);
    proxy = await TcpProxy.start(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname);
    cut = await spawnNode(names, { NODE_ID: 'cut-p', REDIS_URL: `redis://127.0.0.1:${proxy.port}`, ...LEASE_ENV });
    await createTag(cut.url, { tag: 'evt', mode: 'snowflake' });
  });
  after(async () => {
    proxy.unblock();
    await other?.close().catch(() => undefined);
    if (cut) await stopOrKill(cut).catch(() => undefined);
    await proxy.close();
    redis.disconnect();
    await cleanup(names);
  });

  it('stops with 503 LEASE_LOST before its lease can lapse, the id is reused safely, and it resumes after', {
    timeout: 45000,
  }, async (t) => {
    const p = cut!;
    const warm = await fetchIds(p.url, 'evt', 100);
    const w = ownWorker(await workers(p.url), 10)!;
    assert.ok(warm.every((id) => workerOf(id) === w));
    const key = `${keys.workerSpace(10)}w:${w}`;

    const recs: Rec[] = [];
    let stop = false;
    const load = loop(p.url, 'evt', 50, recs, () => stop, 2);
    let qIds: bigint[];
    let qMore: bigint[];
    let unblockedAt = 0;
    try {
      await sleep(1200);

      proxy.block();
      const blockedAt = Date.now();
      // The earliest moment Redis may let the lease go: the key's remaining TTL, read directly.
      const sentAt = Date.now();
      const pttl = await redis.pttl(key);
      assert.ok(pttl > 0, `the lease key has no TTL left (${pttl}) right after the cut`);
      const expiresAt = sentAt + pttl;
      const goneAt = await waitFor(
        'the lease key to expire in Redis',
        async () => ((await redis.exists(key)) === 0 ? Date.now() : undefined),
        TTL + 1000,
        20,
      );
      assert.ok(goneAt - blockedAt <= TTL + 300, `the key lived ${goneAt - blockedAt} ms after the cut`);
      const duringCut = recs.filter((r) => r.sent >= blockedAt);
      const lost = duringCut.find((r) => r.code === 'LEASE_LOST');
      assert.ok(lost, `no LEASE_LOST while cut off: ${JSON.stringify(duringCut.slice(-3).map((r) => r.code ?? 'ok'))}`);
      assert.equal(lost.status, 503);
      assert.ok(Number(lost.retryAfter) >= 1, `Retry-After ${lost.retryAfter}`);
      assert.ok(
        lost.recv < expiresAt,
        `first LEASE_LOST answered ${lost.recv - expiresAt} ms after the lease could lapse in Redis`,
      );
      const issuedBeforeReuse = okIds(recs);
      const latest = issuedBeforeReuse.reduce((m, id) => Math.max(m, msOf(id)), 0);
      assert.ok(
        latest < expiresAt - MARGIN / 2,
        `issued at ${latest}, within ${expiresAt - latest} ms of the lease lapsing in Redis (margin ${MARGIN})`,
      );

      // Another process takes the lapsed id while the first one is still cut off.
      await redis.set(`${keys.workerSpace(10)}cursor`, String(w));
      const horizon = Number(await redis.get(`${keys.workerSpace(10)}last:${w}`));
      assert.ok(horizon >= latest, 'the recorded horizon is below what the cut-off process issued');
      other = await startLocalNode(names, { NODE_ID: 'cut-q', LOG_LEVEL: 'error', ...LEASE_ENV });
      const q = other;
      qIds = await fetchIds(q.url!, 'evt', 3000);
      assert.ok(
        qIds.every((id) => workerOf(id) === w),
        'precondition: the other process took the lapsed id',
      );
      assert.ok(msOf(qIds[0]) > horizon, "the new holder issued at or before the old holder's horizon");
      assert.ok(
        recs.filter((r) => r.sent > goneAt + 100).every((r) => !r.ids),
        'the cut-off process issued after its lease lapsed',
      );

      // Back on the network: the first process finds its id taken, switches, and serves again.
      // Cut off for longer than the TTL in all.
      await sleep(Math.max(0, blockedAt + TTL + 500 - Date.now()));
      unblockedAt = Date.now();
      assert.ok(unblockedAt - blockedAt > TTL, `cut off for only ${unblockedAt - blockedAt} ms`);
      proxy.unblock();
      await waitFor(
        'the cut-off process to serve again',
        async () => recs.some((r) => r.sent > unblockedAt && r.ids),
        15000,
      );
      t.diagnostic(
        `served again ${recs.find((r) => r.sent > unblockedAt && r.ids)!.recv - unblockedAt} ms after the network came back`,
      );
      await sleep(500);
      stop = true;
      await load;
      qMore = await fetchIds(q.url!, 'evt', 1000);
    } finally {
      proxy.unblock();
      stop = true;
      await load;
    }
    const q = other!;
    const failures = recs.filter((r) => !r.ids);
    assert.ok(failures.length > 0);
    for (const f of failures) {
      assert.equal(f.status, 503, `${f.code}`);
      assert.ok(f.code === 'LEASE_LOST' || f.code === 'UNAVAILABLE', `${f.code}`);
      assert.ok(Number(f.retryAfter) >= 1);
    }
    const resumed = okIds(recs.filter((r) => r.sent > unblockedAt));
    assert.ok(resumed.length > 0);
    const w2 = workerOf(resumed[resumed.length - 1]);
    assert.notEqual(w2, w, 'the cut-off process went on with the id another process holds');
    const own = (await workers(p.url)).this_node.leases.find((l) => l.worker_bits === 10)!;
    assert.equal(own.worker_id, w2);
    assert.equal(own.valid, true);
    const listed = spaceOf(await workers(q.url!), 10)!.leases;
    assert.equal(listed.find((l) => l.worker_id === w2)?.owner, 'cut-p');
    assert.equal(listed.find((l) => l.worker_id === w)?.owner, 'cut-q');
    assert.ok(resumed.every((id) => workerOf(id) !== w));
    const pIds = okIds(recs);
    assertIncreasing(pIds, 'cut-off process');
    assertNoDuplicates([...warm, ...pIds, ...qIds, ...qMore], 'both processes');
  });
});

describe('Redis restarted empty under snowflake load', {
  skip: skipOnCluster('it restarts a private single redis-server'),
}, () => {
  const names = testNames();
  let server: RedisServer;
  const nodes: Node[] = [];

  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names, server.url).catch(() => undefined);
    await server.kill();
  });

  it('never duplicates; new leases wait out the guard with 503, then every process serves again', {
    timeout: 45000,
  }, async (t) => {
    const env = (id: string) => ({ REDIS_URL: server.url, NODE_ID: id, LOG_LEVEL: 'error', ...LEASE_ENV });
    nodes.push(await startLocalNode(names, env('rs-0')), await startLocalNode(names, env('rs-1')));
    await createTag(nodes[0].url!, { tag: 'evt', mode: 'snowflake' });
    for (const n of nodes) await fetchIds(n.url!, 'evt', 1);

    const recs = new Map<string, Rec[]>();
    let stop = false;
    const loops: Promise<void>[] = [];
    const startLoops = (n: Node, name: string) => {
      for (let c = 0; c < 2; c++) {
        const out: Rec[] = [];
        recs.set(`${name}/${c}`, out);
        loops.push(loop(n.url!, 'evt', 20, out, () => stop, 1));
      }
    };
    startLoops(nodes[0], 'rs-0');
    startLoops(nodes[1], 'rs-1');
    await sleep(1000);

    const direct = new Redis(server.url, { maxRetriesPerRequest: 3 });
    direct.on('error', () => undefined);
    try {
      const initKey = `${names.prefix}:{ws10}:init`;
      assert.equal(await direct.get(initKey), '0', 'a new deployment has no guard');
      const runBefore = await redisRunId(direct);
      const restartedAt = Date.now();
      await server.restartEmpty(200);
      // A process that starts now takes its lease in the space Redis forgot.
      nodes.push(await startLocalNode(names, env('rs-2')));
      startLoops(nodes[2], 'rs-2');
      const runAfter = await redisRunId(direct);
      assert.notEqual(runAfter, runBefore, 'Redis did not restart');
      const guard = Number(await waitFor('the guard', async () => (await direct.get(initKey)) ?? undefined, 5000));
      t.diagnostic(`guard ${guard - restartedAt} ms after the restart`);
      assert.ok(
        guard >= restartedAt + TTL - 50 && guard <= Date.now() + TTL,
        `guard ${guard - restartedAt} ms after the restart`,
      );

      // Every process serves again after the guard.
      await waitFor(
        'every process to serve after the guard',
        async () => [...recs.entries()].every(([, rs]) => rs.some((r) => r.sent > guard && r.ids)),
        15000,
      );
      await sleep(300);
      stop = true;
      await Promise.all(loops);

      const every = [...recs.values()].flat();
      const ids = okIds(every);
      t.diagnostic(`${ids.length} IDs in ${every.length} requests, ${every.filter((r) => !r.ids).length} refused`);
      for (const [name, rs] of recs) {
        const refusedRs = rs.filter((r) => !r.ids);
        const codes = [...new Set(refusedRs.map((r) => r.code))].join(',');
        const span = refusedRs.length
          ? `${refusedRs[0].sent - restartedAt}..${refusedRs[refusedRs.length - 1].recv - restartedAt} ms after the restart`
          : '';
        t.diagnostic(`${name}: ${refusedRs.length} refused (${codes}) ${span}`);
      }
      assertNoDuplicates(ids, 'all processes');
      for (const [name, rs] of recs) assertIncreasing(okIds(rs), name);
      for (const r of every.filter((x) => !x.ids)) {
        assert.equal(r.status, 503, `${r.code}`);
        assert.ok(r.code === 'UNAVAILABLE' || r.code === 'LEASE_LOST', `${r.code}`);
        assert.ok(Number(r.retryAfter) >= 1);
      }

      const ofNode = (name: string) =>
        [...recs.entries()]
          .filter(([k]) => k.startsWith(`${name}/`))
          .flatMap(([, rs]) => rs)
          .sort((a, b) => a.sent - b.sent);
      // The process that started after the loss waited out the guard: 503 first, then only
      // IDs after it.
      const late = ofNode('rs-2');
      assert.ok(
        late.some((r) => r.code === 'UNAVAILABLE' && r.sent < guard - 500),
        'the new process served before the guard',
      );
      const lateIds = okIds(late);
      assert.ok(lateIds.length > 0);
      assert.ok(
        lateIds.every((id) => msOf(id) > guard),
        'the new process issued at or before the guard',
      );

      for (const name of ['rs-0', 'rs-1']) {
        const rs = ofNode(name);
        const before = new Set(okIds(rs.filter((r) => r.recv < restartedAt)).map((id) => workerOf(id)));
        assert.equal(before.size, 1, `${name} held one worker id before the loss`);
        // Once it took a lease again it waited for the guard too, and then served above it.
        const firstRefusal = rs.find((r) => r.sent > restartedAt && !r.ids);
        assert.ok(firstRefusal, `${name} never waited for the guard`);
        assert.equal(firstRefusal.code, 'UNAVAILABLE');
        assert.ok(firstRefusal.sent < guard - 500);
        const later = okIds(rs.filter((r) => r.sent > firstRefusal.sent));
        assert.ok(later.length > 0, `${name} did not resume`);
        assert.ok(
          later.every((id) => msOf(id) > guard),
          `${name} issued at or before the guard after taking a new lease`,
        );
        // Until then it could only go on under the lease it held before the loss.
        const between = okIds(rs.filter((r) => r.sent > restartedAt && r.recv < firstRefusal.sent));
        assert.ok(
          between.every((id) => before.has(workerOf(id)) && msOf(id) < guard),
          `${name} issued under a new worker id before the guard`,
        );
      }
    } finally {
      stop = true;
      await Promise.all(loops);
      direct.disconnect();
    }
  });
});
