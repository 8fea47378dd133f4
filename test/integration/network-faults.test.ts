// suite: single — private redis-servers behind fault proxies
// Faults of the network itself, between idmint and each of its servers: added latency with
// jitter, loss as TCP shows it (stalls), and a blackholed peer (nothing forwarded, no RST, no
// FIN). A private redis-server as the default Redis, another as a named one (REDIS_URLS), and
// the shared MariaDB, each behind a fault proxy. Promises checked over every request: no ID
// answered twice, order global holds in real time, every request answered (IDs or a 503
// UNAVAILABLE with Retry-After) within the documented bound, service resumes once the fault
// clears, and a snowflake lease stops issuing before Redis could let it go.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testNames } from '../../tools/env.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import {
  Load,
  answered,
  assertClientOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  counter,
  now,
  waitFor,
  fetchRecorded,
  type ClientSpec,
  type Rec,
} from '../helpers/fault-load.js';
import { DEFAULT_EPOCH_MS } from '../../src/core/snowflake-layout.js';
import { WORKER_SOCKET_TIMEOUT_MS } from '../../src/store/redis/connection.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const COMMAND_TIMEOUT_MS = 600;
const QUERY_TIMEOUT_MS = 1000;
const REFILL_WAIT_MS = 1000;
const LEASE_TTL_MS = 3000;
const LEASE_MARGIN_MS = 500;
/** The documented bound of one ID request (docs/GUARANTEES.md), and slack for a busy machine. */
const BOUND_MS = REFILL_WAIT_MS + 2 * COMMAND_TIMEOUT_MS;
const SLACK_MS = 1500;
/** Latency and jitter, then stalls (each below the command timeout). */
const SLOW = { latencyMs: 5, jitterMs: 25 };
const STALLS = { stallRate: 0.05, stallMs: 300 };
/** Stalls longer than the command timeout: takes time out, their replies come late or never. */
const LONG_STALLS = { stallRate: 0.1, stallMs: 2 * COMMAND_TIMEOUT_MS };

function assertBounded(recs: readonly Rec[], what: string): number {
  let max = 0;
  for (const r of recs) {
    assert.notEqual(
      r.status,
      0,
      `${what}: ${r.client} got no answer after ${(r.done - r.sent).toFixed(0)} ms: ${r.detail}`,
    );
    max = Math.max(max, r.done - r.sent);
  }
  assert.ok(
    max <= BOUND_MS + SLACK_MS,
    `${what}: slowest request took ${max.toFixed(0)} ms, bound ${BOUND_MS} ms (+${SLACK_MS} ms slack)`,
  );
  return max;
}

function assertPromises(recs: readonly Rec[], what: string): void {
  assertOnlyCleanUnavailable(recs, { what });
  assertNoDuplicates(recs, what);
  assertClientOrder(recs, what);
  assertRealTimeOrder(recs, what);
  assertBounded(recs, what);
}

describe('network faults between idmint and Redis or MySQL', () => {
  const names = testNames();
  let redisA: RedisServer;
  let redisB: RedisServer;
  let pa: FaultProxy;
  let pb: FaultProxy;
  let pm: FaultProxy;
  let node: LocalNode;

  before(async () => {
    redisA = await RedisServer.start();
    redisB = await RedisServer.start();
    pa = await FaultProxy.start(redisA.port, { seed: 11 });
    pb = await FaultProxy.start(redisB.port, { seed: 12 });
    pm = await FaultProxy.start(Number(new URL(names.mysqlUrl).port || 3306), { seed: 13 });
    const mysqlUrl = new URL(names.mysqlUrl);
    mysqlUrl.port = String(pm.port);
    node = await startLocalNode(names, {
      REDIS_URL: pa.url,
      REDIS_URLS: `b=${pb.url}`,
      MYSQL_URL: mysqlUrl.toString(),
      REFILL_WAIT_MS: String(REFILL_WAIT_MS),
      REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS),
      MYSQL_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      LEASE_TTL_MS: String(LEASE_TTL_MS),
      LEASE_MARGIN_MS: String(LEASE_MARGIN_MS),
      NODE_ID: 'nf-node',
      LOG_LEVEL: 'fatal',
    });
    // g on the default Redis, h on the named one: large segments, so that serving does not
    // depend on refills while a Redis link is faulty. m: small ones, refilled all the time.
    await createTag(node.url, { tag: 'g', mode: 'segment', step: 100000 });
    await createTag(node.url, { tag: 'h', mode: 'segment', step: 100000, redis: 'b' });
    await createTag(node.url, {
      tag: 'm',
      mode: 'segment',
      step: 100,
      min_step: 100,
      max_step: 200,
      target_seconds: 1,
    });
    await createTag(node.url, { tag: 's', mode: 'snowflake' });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    for (const p of [pa, pb, pm]) await p?.close().catch(() => undefined);
    await cleanup(names, redisA.url).catch(() => undefined);
    await redisA?.stop();
    await redisB?.stop();
  });

  const clients = (tag: string, n: number, seed: number, pauseOnSuccess = 0): ClientSpec[] =>
    Array.from({ length: n }, (_, c) => ({
      name: `${tag}-c${c}`,
      tag,
      url: () => node.url,
      count: counter(seed + c, 20),
      pauseOnSuccess,
    }));

  /** Waits until a request to tag sent now is answered with IDs. */
  const resumed = (tag: string, timeoutMs: number) =>
    waitFor(
      `${tag} served again`,
      async () => {
        const r = await fetchRecorded('probe', node.url, tag, 1, 5000);
        if (r.ids === undefined)
          throw new Error(
            `${r.status} ${r.code ?? ''} ${r.detail ?? ''}; Redis connections: ${redisStates()}; refills: ${await refillStates(tag)}`,
          );
        return true;
      },
      timeoutMs,
      100,
    );
  /** The refill jobs of tag: state, attempts, last failure (what a tag that stays dry waits on). */
  const refillStates = async (tag: string) => {
    const q = node.rt.producer.queue;
    const jobs = await q
      .getJobs(['active', 'waiting', 'prioritized', 'delayed', 'failed', 'completed'], 0, 200)
      .catch(() => []);
    const mine = jobs.filter((j) => j?.data.tag === tag).slice(-4);
    const states = await Promise.all(
      mine.map(
        async (j) =>
          `${j.id} seg ${j.data.seg} ${await j.getState()} attempts ${j.attemptsMade} ${j.failedReason ?? ''} ${JSON.stringify(j.returnvalue ?? '')}`,
      ),
    );
    return states.join(' | ') || 'none';
  };
  const redisStates = () =>
    node.rt.segments
      .names()
      .map((n) => `${n}=${node.rt.segments.connection(n).status}`)
      .join(' ');

  /** Runs load on tag through: slow link, stalls, long stalls, a blackhole of blackholeMs; then waits for service. */
  async function faultRun(
    proxy: FaultProxy,
    tag: string,
    blackholeMs: number,
    seed: number,
  ): Promise<{ recs: Rec[]; during: Rec[] }> {
    const load = new Load(clients(tag, 4, seed));
    await sleep(300);
    proxy.set(SLOW);
    await sleep(1500);
    proxy.set({ ...SLOW, ...STALLS });
    await sleep(1500);
    proxy.set(LONG_STALLS);
    await sleep(1500);
    proxy.clear();
    const t0 = now();
    proxy.blackhole();
    await sleep(blackholeMs);
    proxy.restore();
    const t1 = now();
    // A refill needs the refill worker, whose connections to the default Redis may still be
    // the dead ones of an earlier blackhole (default Redis test): BullMQ's blocking wait and
    // ioredis find them dead within WORKER_SOCKET_TIMEOUT_MS (docs/GUARANTEES.md).
    await resumed(tag, WORKER_SOCKET_TIMEOUT_MS + 3000);
    await sleep(500);
    const recs = await load.stop();
    const during = recs.filter((r) => r.sent >= t0 && r.sent < t1);
    assert.ok(answered(recs.filter((r) => r.sent > t1)).length > 0, `${tag}: nothing answered after the fault cleared`);
    return { recs, during };
  }

  it('default Redis: latency, stalls and a blackhole; bounded answers, no duplicate, order global, resumes', {
    timeout: 60000,
  }, async () => {
    const { recs, during } = await faultRun(pa, 'g', 2500, 100);
    assertPromises(recs, 'default Redis');
    assert.ok(answered(recs).length > 200, `too few answers to mean anything: ${answered(recs).length}`);
    // The blackhole was seen: requests sent during it were refused, not left waiting.
    assert.ok(
      during.some((r) => r.status === 503),
      'no 503 while the default Redis was blackholed',
    );
  });

  it('named Redis: latency, stalls and a blackhole; bounded answers, no duplicate, order global, resumes', {
    timeout: 60000,
  }, async () => {
    // The default Redis stays healthy: a tag on it is served all along.
    const other = new Load(clients('g', 1, 300, 20));
    const { recs, during } = await faultRun(pb, 'h', 2500, 200);
    const g = await other.stop();
    assertPromises(recs, 'named Redis');
    assertPromises(g, 'default Redis beside a blackholed named one');
    assert.ok(
      during.some((r) => r.status === 503),
      'no 503 while the named Redis was blackholed',
    );
    assert.ok(answered(g).length > 20, 'the default Redis tag was not served while the named one was away');
  });

  it('MySQL: latency, stalls and a blackhole; bounded answers and readiness, refills resume', {
    timeout: 40000,
  }, async () => {
    const load = new Load(clients('m', 3, 400));
    await sleep(300);
    pm.set(SLOW);
    await sleep(1500);
    pm.set({ ...SLOW, ...STALLS });
    await sleep(1500);
    pm.clear();
    pm.blackhole();
    // Readiness probes while MySQL is silent: each answers within its own bound, and none
    // may leave a pool connection stuck behind it.
    const probes: number[] = [];
    for (let i = 0; i < 12; i++) {
      const t = now();
      const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(10000) });
      probes.push(now() - t);
      assert.equal(res.status, 503);
    }
    await sleep(500);
    pm.restore();
    const t1 = now();
    // Refills need MySQL: m is served again only once the pool has live connections.
    await resumed('m', 10000);
    await waitFor('readyz', async () => (await fetch(`${node.url}/readyz`)).status === 200, 10000, 200);
    await sleep(500);
    const recs = await load.stop();
    assertPromises(recs, 'MySQL');
    assert.ok(answered(recs.filter((r) => r.sent > t1)).length > 0, 'm not served after MySQL came back');
    assert.ok(Math.max(...probes) <= 1000 + SLACK_MS, `a readiness probe took ${Math.max(...probes).toFixed(0)} ms`);
  });

  it('snowflake: a blackholed default Redis stops issuing before the lease could expire there, then resumes', {
    timeout: 40000,
  }, async () => {
    const load = new Load(clients('s', 3, 500, 5));
    await sleep(1500);
    // When the blackhole starts, the lease key's expiry in Redis (read around the proxy).
    const space = node.rt.keys.workerSpace(10);
    const before = Date.now();
    pa.blackhole();
    const expiresAt = await withRedis(redisA.url, async (r) => {
      const keys = await r.keys(`${space}w:*`);
      assert.equal(keys.length, 1, `expected one lease, found ${keys.join(', ')}`);
      return before + (await r.pttl(keys[0]));
    });
    await sleep(LEASE_TTL_MS + 1000);
    pa.restore();
    const t1 = now();
    await resumed('s', 8000);
    await sleep(500);
    const recs = await load.stop();
    // Refusals are 503s with Retry-After: UNAVAILABLE, or LEASE_LOST once the lease lapsed.
    for (const r of recs.filter((x) => !x.ids)) {
      assert.equal(r.status, 503, `snowflake: ${r.client} got ${r.status} (${r.code ?? r.detail})`);
      assert.ok(r.code === 'UNAVAILABLE' || r.code === 'LEASE_LOST', `snowflake: 503 with code ${r.code}`);
      assert.ok(r.retryAfter && /^\d+$/.test(r.retryAfter), 'snowflake: 503 without Retry-After');
    }
    assertNoDuplicates(recs, 'snowflake');
    assertClientOrder(recs, 'snowflake');
    assertBounded(recs, 'snowflake');
    const tsOf = (id: bigint) => Number(id >> 22n) + DEFAULT_EPOCH_MS;
    const blackholedAt = now() - (Date.now() - before);
    const issuedDuring = answered(recs).filter((r) => r.sent >= blackholedAt && r.sent < t1);
    for (const r of issuedDuring) {
      for (const id of r.ids)
        assert.ok(
          tsOf(id) < expiresAt - LEASE_MARGIN_MS / 2,
          `ID ${id} issued at ${tsOf(id)}, the lease expired in Redis at ${expiresAt}`,
        );
    }
    assert.ok(
      recs.some((r) => r.sent >= blackholedAt && r.sent < t1 && r.status === 503),
      'snowflake never refused while Redis was away',
    );
    assert.ok(answered(recs.filter((r) => r.sent > t1)).length > 0, 'snowflake not served after the blackhole');
  });
});
