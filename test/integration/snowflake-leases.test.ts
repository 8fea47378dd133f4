// suite: cluster
// Worker-id leases of snowflake tags against real Redis and MySQL, with a short lease TTL:
// processes hold distinct worker ids and never issue the same ID; a killed process's id
// returns to the pool within the TTL and its next holder issues above it; a process cut off
// from Redis stops before its lease can lapse and resumes after; a renewal that finds the id
// taken switches ids; Redis restarted empty makes new leases wait out the guard; a graceful
// shutdown gives the id back at once with its exact last timestamp; a process that gets its
// old id back after another holder used it stays above that holder's IDs; and processes
// taking the first lease of a new space together do not wait.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Node } from '../../src/process/serve.js';
import { ManualClock, systemClock } from '../../src/core/clock.js';
import { PRESETS, decode, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { LeaseManager } from '../../src/service/lease-manager.js';
import { SnowflakeGenerator } from '../../src/service/snowflake-generator.js';
import { migrate } from '../../src/store/mysql/migrations.js';
import { createPool } from '../../src/store/mysql/pool.js';
import { SpacesRepo } from '../../src/store/mysql/spaces-repo.js';
import { Keys } from '../../src/store/redis/keys.js';
import { LeaseStore } from '../../src/store/redis/leases.js';
import { REDIS_URL, cleanup, skipOnCluster, testNames, testRedis, type TestNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';
import { redisRunId } from '../../tools/redis-stats.js';
import { sweepDeadLeaseQueues } from '../../src/consumer/janitor-worker.js';
import { leaseQueueName } from '../../src/jobs/lease-renewal.js';
import { LeaseScheduler } from '../../src/producer/lease-scheduler.js';
import { assertIncreasing } from '../../tools/order.js';
import { waitFor } from '../helpers/fault-load.js';

const TTL = 3000;
const MARGIN = 500;
const LEASE_ENV = { LEASE_TTL_MS: String(TTL), LEASE_MARGIN_MS: String(MARGIN) };
const SF = PRESETS.snowflake;
const SMALL: SnowflakeLayout = { ...PRESETS.snowflake, workerBits: 2 };
const silent = pino({ level: 'silent' });

const workerOf = (id: bigint, l: SnowflakeLayout = SF) => decode(l, id).workerId;
const msOf = (id: bigint, l: SnowflakeLayout = SF) => decode(l, id).timestamp.getTime();

interface Workers {
  spaces: {
    worker_bits: number;
    size: number;
    used: number;
    free: number;
    leases: { worker_id: number; owner: string; addr: string; expires_in_ms: number; last_timestamp: string }[];
  }[];
  this_node: {
    node_id: string;
    leases: { worker_bits: number; worker_id: number; valid: boolean; valid_for_ms: number; floor: string }[];
    lease_events: { acquired: number; renewed: number; lost: number; exhausted: number };
  };
}

async function workers(url: string): Promise<Workers> {
  const r = await fetch(`${url}/v1/admin/workers`, { headers: adminHeaders, signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 200, `admin workers: ${r.status}`);
  return (await r.json()) as Workers;
}
const spaceOf = (w: Workers, bits: number) => w.spaces.find((s) => s.worker_bits === bits);
const ownWorker = (w: Workers, bits: number) => w.this_node.leases.find((l) => l.worker_bits === bits)?.worker_id;

/** One request's outcome, with when it was sent and answered. */
interface Rec {
  readonly sent: number;
  readonly recv: number;
  readonly ids?: bigint[];
  readonly status?: number;
  readonly code?: string;
  readonly retryAfter?: string | null;
}

async function request(url: string, tag: string, count: number): Promise<Rec> {
  const sent = Date.now();
  try {
    const r = await fetch(`${url}/v1/ids/${tag}?count=${count}`, { signal: AbortSignal.timeout(8000) });
    const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
    const recv = Date.now();
    if (r.status === 200 && body.ids) return { sent, recv, ids: body.ids.map(BigInt) };
    return { sent, recv, status: r.status, code: body.error?.code, retryAfter: r.headers.get('retry-after') };
  } catch (err) {
    return { sent, recv: Date.now(), status: 0, code: `NETWORK ${(err as Error).message}` };
  }
}

/** Sequential requests until stop() says so; every request starts after the previous answer. */
function loop(url: string, tag: string, count: number, out: Rec[], stop: () => boolean, pauseMs = 0): Promise<void> {
  return (async () => {
    while (!stop()) {
      const rec = await request(url, tag, count);
      out.push(rec);
      if (rec.status === 0) await sleep(20);
      if (pauseMs) await sleep(pauseMs);
    }
  })();
}

const okIds = (recs: Rec[]) => recs.flatMap((r) => r.ids ?? []);

function assertNoDuplicates(ids: bigint[], what: string): void {
  const seen = new Set<bigint>();
  const dups: bigint[] = [];
  for (const id of ids) {
    if (seen.has(id)) dups.push(id);
    seen.add(id);
  }
  assert.deepEqual(dups.slice(0, 10), [], `${what}: ${dups.length} duplicate IDs`);
}

/** SIGTERM, and SIGKILL when the process has not exited within 10 s. */
async function stopOrKill(n: ChildNode): Promise<void> {
  const stopped = await Promise.race([n.stop(), sleep(10000).then(() => 'timeout' as const)]);
  if (stopped === 'timeout') await n.kill();
}

describe('worker-id leases across processes', () => {
  const names = testNames();
  const redis = testRedis();
  const keys = new Keys(names.prefix);
  const nodes: ChildNode[] = [];
  const byName = new Map<string, ChildNode>();
  /** Every ID any process of this suite returned, for the cross-test duplicate check. */
  const all: bigint[] = [];

  before(async () => {
    const started = await Promise.all(['sf-n0', 'sf-n1', 'sf-n2'].map((id) => spawnNode(names, { NODE_ID: id, ...LEASE_ENV })));
    started.forEach((n, i) => {
      nodes.push(n);
      byName.set(`sf-n${i}`, n);
    });
    await createTag(nodes[0].url, { tag: 'evt', mode: 'snowflake' });
    await createTag(nodes[0].url, { tag: 'small', mode: 'snowflake', worker_bits: 2 });
    // First leases one process after the other (each takes its leases on its first request).
    for (const n of nodes) {
      for (const id of await fetchIds(n.url, 'evt', 1)) all.push(id);
      for (const id of await fetchIds(n.url, 'small', 1)) all.push(id);
    }
  });

  after(async () => {
    for (const n of nodes) await stopOrKill(n).catch(() => undefined);
    redis.disconnect();
    await cleanup(names);
  });

  it('gives three processes three distinct worker ids; 100k IDs from them together are unique and increase per process', { timeout: 40000 }, async (t) => {
    const w = await workers(nodes[0].url);
    const space = spaceOf(w, 10);
    assert.ok(space, 'no 10-bit worker space');
    assert.equal(space.size, 1024);
    assert.equal(space.used, 3);
    assert.equal(space.free, 1021);
    assert.deepEqual(space.leases.map((l) => l.owner).sort(), ['sf-n0', 'sf-n1', 'sf-n2']);
    const holder = new Map(space.leases.map((l) => [l.owner, l.worker_id]));
    assert.equal(new Set(holder.values()).size, 3, `worker ids ${JSON.stringify([...holder])}`);
    for (const l of space.leases) {
      assert.match(l.addr, /^127\.0\.0\.1:\d+$/);
      assert.ok(l.expires_in_ms > 0 && l.expires_in_ms <= TTL);
      assert.ok(Date.parse(l.last_timestamp) > Date.now(), 'last timestamp is the holder horizon, ahead of now');
    }
    // Each process knows its own lease and agrees with Redis.
    for (const [name, n] of byName) assert.equal(ownWorker(await workers(n.url), 10), holder.get(name), name);

    // Two sequential clients per process, all six at once.
    const PER_REQUEST = 2500;
    const REQUESTS = 7;
    const loops = [...byName].flatMap(([name, n]) => [0, 1].map(() => ({ name, url: n.url, ids: [] as bigint[] })));
    const started = Date.now();
    await Promise.all(
      loops.map(async (l) => {
        for (let i = 0; i < REQUESTS; i++) {
          const ids = await fetchIds(l.url, 'evt', PER_REQUEST);
          assert.equal(ids.length, PER_REQUEST);
          l.ids.push(...ids);
        }
      }),
    );
    const ids = loops.flatMap((l) => l.ids);
    t.diagnostic(`${ids.length} IDs from 3 processes in ${Date.now() - started} ms`);
    assert.equal(ids.length, 6 * REQUESTS * PER_REQUEST);
    assert.ok(ids.length >= 100_000);
    assertNoDuplicates([...all, ...ids], 'all processes');
    for (const id of ids) all.push(id);
    for (const l of loops) {
      assertIncreasing(l.ids, l.name);
      const want = holder.get(l.name);
      const other = l.ids.find((id) => workerOf(id) !== want);
      assert.equal(other, undefined, `${l.name} issued ${other} with worker ${other === undefined ? '' : workerOf(other)}, holds ${want}`);
    }
    // A process's two clients interleave in time, and together they still never overlap.
    for (const name of byName.keys()) {
      const mine = loops.filter((l) => l.name === name).flatMap((l) => l.ids);
      assert.equal(new Set(mine).size, 2 * REQUESTS * PER_REQUEST, name);
    }
    // The API decodes the same worker id (another process decodes it).
    const sample = loops[0].ids[1234];
    const d = (await (await fetch(`${nodes[2].url}/v1/decode/evt/${sample}`)).json()) as { worker_id: number; timestamp: string };
    assert.equal(d.worker_id, holder.get(loops[0].name));
    assert.equal(Date.parse(d.timestamp), msOf(sample));
  });

  it('switches worker ids when a renewal finds its id taken by another owner', { timeout: 20000 }, async () => {
    const n = byName.get('sf-n2')!;
    const old = ownWorker(await workers(n.url), 10)!;
    assert.notEqual(old, undefined);
    const mine: bigint[] = await fetchIds(n.url, 'evt', 500);
    const key = `${keys.workerSpace(10)}w:${old}`;
    assert.match((await redis.get(key)) ?? '', /^sf-n2 127\.0\.0\.1:\d+$/, 'the lease key holds this process');
    const intruder = 'intruder 10.9.8.7:1';
    assert.equal(await redis.set(key, intruder, 'PX', 60000, 'XX'), 'OK');
    const at = Date.now();

    // The process keeps serving while it finds out at its next renewal (every TTL/3).
    const switched = await waitFor(
      'the process to switch worker ids',
      async () => {
        mine.push(...(await fetchIds(n.url, 'evt', 100)));
        const w = await workers(n.url);
        const now = ownWorker(w, 10);
        return now !== undefined && now !== old ? { id: now, w } : undefined;
      },
      TTL,
    );
    const tookMs = Date.now() - at;
    assert.ok(tookMs <= TTL / 3 + 1000, `switched ${tookMs} ms after the id was taken`);
    assert.ok(switched.w.this_node.lease_events.lost >= 1);
    assert.ok(
      n.output.some((l) => l.includes('worker id is held by another node; switching ids')),
      'no log line about the switch',
    );

    const afterSwitch = await fetchIds(n.url, 'evt', 2000);
    mine.push(...afterSwitch);
    assert.ok(
      afterSwitch.every((id) => workerOf(id) === switched.id),
      'issued with a worker id other than its new one',
    );
    assert.equal(await redis.get(key), intruder, 'the process took the id back from its new owner');
    const space = spaceOf(await workers(nodes[0].url), 10)!;
    assert.equal(space.leases.find((l) => l.worker_id === switched.id)?.owner, 'sf-n2');
    assert.equal(space.leases.find((l) => l.worker_id === old)?.owner, 'intruder');
    assert.equal(new Set(space.leases.map((l) => l.worker_id)).size, space.leases.length);

    assertIncreasing(mine, 'sf-n2 across the switch');
    assertNoDuplicates([...all, ...mine], 'all processes');
    for (const id of mine) all.push(id);
    await redis.del(key);
  });

  it("returns a killed process's worker id within the TTL; the next holder issues above the dead one", { timeout: 40000 }, async () => {
    const victim = byName.get('sf-n0')!;
    const watcher = byName.get('sf-n1')!;
    // Fill the 4-id pool so the next process must take the victim's id.
    const space2 = spaceOf(await workers(watcher.url), 2)!;
    assert.equal(space2.size, 4);
    assert.equal(space2.used, 3);
    const held = new Set(space2.leases.map((l) => l.worker_id));
    const spare = [0, 1, 2, 3].find((i) => !held.has(i))!;
    await redis.set(`${keys.workerSpace(2)}w:${spare}`, 'placeholder 10.9.8.7:2', 'PX', 120000, 'NX');
    const dead = space2.leases.find((l) => l.owner === 'sf-n0')!.worker_id;

    // The victim serves up to the moment it is killed.
    const recs: Rec[] = [];
    let stop = false;
    const load = loop(victim.url, 'small', 200, recs, () => stop);
    await sleep(500);
    await victim.kill();
    const killedAt = Date.now();
    stop = true;
    await load;
    nodes.splice(nodes.indexOf(victim), 1);
    const victimIds = okIds(recs);
    assert.ok(victimIds.length >= 1000, `the victim issued only ${victimIds.length} IDs before the kill`);
    assert.ok(victimIds.every((id) => workerOf(id, SMALL) === dead));
    assertNoDuplicates([...all, ...victimIds], 'all processes');
    for (const id of victimIds) all.push(id);

    // The id stays leased until its TTL lapses, then is free: nobody released it.
    const polls: { at: number; leased: boolean }[] = [];
    await waitFor(
      "the killed process's id to be free",
      async () => {
        const s = spaceOf(await workers(watcher.url), 2)!;
        const leased = s.leases.some((l) => l.worker_id === dead);
        polls.push({ at: Date.now(), leased });
        return !leased;
      },
      TTL + 2000,
      100,
    );
    const freedAfter = polls[polls.length - 1].at - killedAt;
    assert.ok(polls[0].leased, 'the id was free at once: it should live until its TTL lapses');
    assert.ok(freedAfter <= TTL + 300, `freed ${freedAfter} ms after the kill (TTL ${TTL})`);
    const horizon = Number(await redis.get(`${keys.workerSpace(2)}last:${dead}`));
    assert.ok(horizon > msOf(victimIds[victimIds.length - 1], SMALL), "the recorded horizon is above the dead process's last ID");

    // A new process takes the only free id: the dead one's.
    const next = await spawnNode(names, { NODE_ID: 'sf-n3', ...LEASE_ENV });
    nodes.push(next);
    byName.set('sf-n3', next);
    const own = await workers(next.url);
    assert.equal(ownWorker(own, 2), dead, 'the new process did not take the freed id');
    assert.ok(Date.parse(own.this_node.leases.find((l) => l.worker_bits === 2)!.floor) >= horizon, "its floor is below the dead holder's horizon");
    const fresh = (await fetchIds(next.url, 'small', 1000)).concat(await fetchIds(next.url, 'small', 1000));
    assert.ok(fresh.every((id) => workerOf(id, SMALL) === dead));
    const victimMax = victimIds.reduce((a, b) => (b > a ? b : a));
    assert.ok(fresh[0] > victimMax, `the new holder issued ${fresh[0]}, not above the dead one's ${victimMax}`);
    assert.ok(msOf(fresh[0], SMALL) > horizon, "issued at or before the dead holder's horizon");
    assertIncreasing(fresh, 'sf-n3');
    assertNoDuplicates([...all, ...fresh], 'all processes');
    for (const id of fresh) all.push(id);
  });

  it('releases the lease on graceful shutdown: the id is free at once and its exact last timestamp recorded', { timeout: 20000 }, async () => {
    const n = byName.get('sf-n1')!;
    const id = ownWorker(await workers(n.url), 10)!;
    const ids = await fetchIds(n.url, 'evt', 3000);
    assertNoDuplicates([...all, ...ids], 'all processes');
    for (const id of ids) all.push(id);
    const lastKey = `${keys.workerSpace(10)}last:${id}`;
    const horizon = Number(await redis.get(lastKey));
    assert.ok(horizon > Date.now(), 'while held, the last timestamp is the holder horizon, ahead of now');
    assert.equal(await redis.exists(`${keys.workerSpace(10)}w:${id}`), 1);

    const code = await n.stop();
    const stoppedAt = Date.now();
    nodes.splice(nodes.indexOf(n), 1);
    assert.equal(code, 0);
    assert.equal(await redis.exists(`${keys.workerSpace(10)}w:${id}`), 0, 'the lease key outlived the process');
    const recorded = Number(await redis.get(lastKey));
    assert.equal(recorded, msOf(ids[ids.length - 1]), 'the last timestamp is not the last ms the process issued at');
    assert.ok(recorded < stoppedAt);
    assert.ok(n.output.some((l) => l.includes('worker-id lease released') && l.includes('"released":true')));
    const s = spaceOf(await workers(byName.get('sf-n2')!.url), 10)!;
    assert.equal(
      s.leases.some((l) => l.worker_id === id),
      false,
      'still listed as leased',
    );
    assert.equal(
      s.leases.some((l) => l.owner === 'sf-n1'),
      false,
    );
    // Its 2-bit lease went back too.
    const s2 = spaceOf(await workers(byName.get('sf-n2')!.url), 2)!;
    assert.equal(
      s2.leases.some((l) => l.owner === 'sf-n1'),
      false,
    );
  });
});

// A TCP proxy can cut one process off a single server; cluster clients follow the nodes'
// own addresses around any proxy.
describe('a process cut off from Redis', { skip: skipOnCluster('it cuts one process off Redis with a TCP proxy in front of a single server') }, () => {
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

  it('stops with 503 LEASE_LOST before its lease can lapse, the id is reused safely, and it resumes after', { timeout: 45000 }, async (t) => {
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
      const goneAt = await waitFor('the lease key to expire in Redis', async () => ((await redis.exists(key)) === 0 ? Date.now() : undefined), TTL + 1000, 20);
      assert.ok(goneAt - blockedAt <= TTL + 300, `the key lived ${goneAt - blockedAt} ms after the cut`);
      const duringCut = recs.filter((r) => r.sent >= blockedAt);
      const lost = duringCut.find((r) => r.code === 'LEASE_LOST');
      assert.ok(lost, `no LEASE_LOST while cut off: ${JSON.stringify(duringCut.slice(-3).map((r) => r.code ?? 'ok'))}`);
      assert.equal(lost.status, 503);
      assert.ok(Number(lost.retryAfter) >= 1, `Retry-After ${lost.retryAfter}`);
      assert.ok(lost.recv < expiresAt, `first LEASE_LOST answered ${lost.recv - expiresAt} ms after the lease could lapse in Redis`);
      const issuedBeforeReuse = okIds(recs);
      const latest = issuedBeforeReuse.reduce((m, id) => Math.max(m, msOf(id)), 0);
      assert.ok(latest < expiresAt - MARGIN / 2, `issued at ${latest}, within ${expiresAt - latest} ms of the lease lapsing in Redis (margin ${MARGIN})`);

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
      await waitFor('the cut-off process to serve again', async () => recs.some((r) => r.sent > unblockedAt && r.ids), 15000);
      t.diagnostic(`served again ${recs.find((r) => r.sent > unblockedAt && r.ids)!.recv - unblockedAt} ms after the network came back`);
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

describe('Redis restarted empty under snowflake load', { skip: skipOnCluster('it restarts a private single redis-server') }, () => {
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

  it('never duplicates; new leases wait out the guard with 503, then every process serves again', { timeout: 45000 }, async (t) => {
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
      assert.ok(guard >= restartedAt + TTL - 50 && guard <= Date.now() + TTL, `guard ${guard - restartedAt} ms after the restart`);

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
        const span = refusedRs.length ? `${refusedRs[0].sent - restartedAt}..${refusedRs[refusedRs.length - 1].recv - restartedAt} ms after the restart` : '';
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
        (i) => new LeaseManager(store, spaces, systemClock, { ttlMs: TTL, marginMs: MARGIN, nodeId: `new-${i}`, addr: `h:${i}` }, silent),
      );
      const leases = await Promise.all(managers.map((m) => m.get(10)));
      const now = Date.now();
      assert.equal(new Set(leases.map((l) => l.workerId)).size, 3);
      const waiting = leases.filter((l) => l.floorMs > now).map((l) => `worker ${l.workerId} must wait ${l.floorMs - now} ms`);
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
    const schedulers = ['ghost-1', 'live-1', 'self-1'].map((node) => new LeaseScheduler(redis, prefix, node, 60000));
    try {
      for (const s of schedulers) await s.start();
      await store.heartbeat('live-1', 60000);
      const meta = (node: string) => `${prefix}:${leaseQueueName(node)}:meta`;
      assert.equal(await redis.exists(meta('ghost-1')), 1, 'a lease queue has a meta key (the layout the janitor finds queues by)');
      const removed = await sweepDeadLeaseQueues(redis, redis, prefix, store, 'self-1');
      assert.deepEqual(removed, ['ghost-1']);
      assert.deepEqual(await schedulers[0].queue.getJobSchedulers(), [], "the dead node's renewal scheduler is gone");
      assert.equal(await redis.exists(meta('ghost-1')), 0, "the dead node's queue is obliterated");
      assert.equal((await schedulers[1].queue.getJobSchedulers()).length, 1, 'the live node keeps its renewals');
      assert.equal((await schedulers[2].queue.getJobSchedulers()).length, 1, "the janitor's own node keeps its renewals");
      assert.deepEqual(await sweepDeadLeaseQueues(redis, redis, prefix, store, 'self-1'), [], 'a second sweep finds nothing');
    } finally {
      for (const s of schedulers) await s.stop();
    }
  });
});
