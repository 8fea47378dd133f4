// Builds one idmint node: connections, schema, stores, queues and workers, and takes them
// down in order. The HTTP app (src/api/app.ts) and `idmint worker` both run on it.
import type { Queue, Worker } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { startLeaseWorkers, type LeaseWorkers } from './consumer/lease-worker.js';
import { startRefillWorker } from './consumer/refill-worker.js';
import { closeWorker, dropWorker } from './consumer/worker-close.js';
import { createLogger } from './logger.js';
import { ShiftedClock, systemClock, type Clock } from './core/clock.js';
import { LeaseScheduler } from './producer/lease-scheduler.js';
import { RefillProducer } from './producer/refill-producer.js';
import { CapacityReader } from './service/capacity.js';
import { registerCapacityMetrics } from './metrics/capacity-metrics.js';
import { registerHealthMetrics } from './metrics/health-metrics.js';
import { IdService } from './service/id-service.js';
import { LeaseManager } from './service/lease-manager.js';
import { Metrics } from './metrics/metrics.js';
import { Drain } from './service/drain.js';
import { readiness, type Readiness } from './service/readiness.js';
import { TagRegistry } from './service/tag-registry.js';
import { CountersRepo } from './store/mysql/counters-repo.js';
import { SpacesRepo } from './store/mysql/spaces-repo.js';
import { migrate } from './store/mysql/migrations.js';
import { createPool } from './store/mysql/pool.js';
import { TagsRepo } from './store/mysql/tags-repo.js';
import { TokensRepo } from './store/mysql/tokens-repo.js';
import { createDefaultRedis, createRedis, isCluster, whenReady, type RedisClient } from './store/redis/connection.js';
import { Keys } from './store/redis/keys.js';
import { LeaseStore } from './store/redis/leases.js';
import { SegmentStore } from './store/redis/segments.js';
import { runShutdown } from './shutdown-steps.js';
import { redisMasters } from './store/redis/server-health.js';

export interface Runtime {
  readonly config: Config;
  readonly log: Logger;
  /** The "default" Redis: a single server (REDIS_URL) or a cluster (REDIS_CLUSTER_NODES). */
  readonly redis: RedisClient;
  readonly pool: Pool;
  readonly keys: Keys;
  readonly tags: TagsRepo;
  readonly tokens: TokensRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly producer: RefillProducer;
  readonly registry: TagRegistry;
  /** The connection tag change announcements arrive on (the registry listens on it). */
  readonly subscriber: RedisClient;
  /** Issues IDs for every transport. */
  readonly ids: IdService;
  readonly leases: LeaseManager;
  readonly leaseStore: LeaseStore;
  readonly clock: Clock;
  readonly metrics: Metrics;
  /** Consumption rate, ID space left and forecasts per tag (admin API, /metrics). */
  readonly capacity: CapacityReader;
  /** Every BullMQ queue of this process (for Bull Board). */
  readonly queues: Queue[];
  readonly refillWorker?: Worker;
  /** Set when a shutdown begins with a drain: readiness then answers not ready. */
  readonly drain: Drain;
  /** The readiness checks (one run at a time, shared by /readyz, /metrics and gRPC health). */
  readiness(): Promise<Readiness>;
  /** Closes workers, queues, Redis and MySQL, in that order. Safe to call twice. */
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Time for snowflake generation and leases (tests inject a movable clock). */
  readonly clock?: Clock;
}

export async function createRuntime(config: Config, log: Logger = createLogger(config), opts: RuntimeOptions = {}): Promise<Runtime> {
  // Test mode: a clock the debug routes can shift (src/api/routes/debug.ts).
  const clock = opts.clock ?? (config.testMode ? new ShiftedClock(systemClock) : systemClock);
  const keys = new Keys(config.redisPrefix);
  // The default Redis (a cluster when REDIS_CLUSTER_NODES is set) holds the queues, leases,
  // announcements and the segments of the tags on it.
  const redis = createDefaultRedis(config, 'command');
  const queueConn = createDefaultRedis(config, 'queue');
  const workerConn = createDefaultRedis(config, 'worker');
  const subscriber = createDefaultRedis(config, 'subscriber');
  // Other named Redis servers (REDIS_URLS) hold only the segment state of the tags on them.
  const extraRedis = Object.entries(config.redisUrls)
    .filter(([name]) => name !== 'default')
    .map(([name, url]) => [name, createRedis(url, 'command', config.redisCommandTimeoutMs, config.redisSentinelPassword)] as const);
  const redisClients: RedisClient[] = [redis, queueConn, workerConn, subscriber, ...extraRedis.map(([, c]) => c)];
  for (const c of redisClients) c.on('error', (err: Error) => log.debug({ err: err.message }, 'redis connection error'));
  let pool: Pool | undefined;
  try {
    await Promise.all([redis, queueConn, workerConn, subscriber].map((c) => whenReady(c)));
    // A named server that is down only affects its own tags: start anyway.
    await Promise.all(
      extraRedis.map(([name, c]) =>
        whenReady(c, 3000).catch((err: Error) =>
          log.warn({ redis: name, err: err.message }, 'named Redis not reachable at start-up; its tags answer 503 until it is'),
        ),
      ),
    );
    pool = await createPool(config.mysqlUrl, config.mysqlQueryTimeoutMs);
    const applied = await migrate(pool);
    if (applied.length) log.info({ applied }, 'schema migrations applied');
  } catch (err) {
    for (const c of redisClients) c.disconnect();
    await pool?.end().catch(() => undefined);
    throw err;
  }
  const tags = new TagsRepo(pool);
  const counters = new CountersRepo(pool);
  const metrics = new Metrics();
  const segments = new SegmentStore({ default: redis, ...Object.fromEntries(extraRedis) }, keys, (ref) => {
    metrics.redisReplaced.inc({ tag: ref.tag });
    log.warn(
      { tag: ref.tag, shard: ref.shard, scope: ref.scope || undefined },
      'segment state written by another Redis instance (restart from a snapshot or failover): abandoned, continuing from the MySQL high-water mark',
    );
  });
  const producer = new RefillProducer(queueConn, keys.queuePrefix(), (err) => log.debug({ err: err.message }, 'refill queue error'));
  const tokens = new TokensRepo(pool);
  const registry = new TagRegistry({ get: (t) => tags.get(t), tokenHashes: (t) => tokens.hashes(t) }, redis, keys, config.tagCacheMs, log);
  await registry.listen(subscriber);
  // A subscriber waits for nothing, so a silent connection would never be noticed: a PING now
  // and then (answered within the worker socket timeout, or the connection is reset).
  const subscriberPing = setInterval(() => void subscriber.ping().catch(() => undefined), 5000);
  subscriberPing.unref();
  subscriber.once('end', () => clearInterval(subscriberPing));
  const leaseStore = new LeaseStore(redis, keys);
  const leases = new LeaseManager(
    leaseStore,
    new SpacesRepo(pool),
    clock,
    {
      ttlMs: config.leaseTtlMs,
      marginMs: config.leaseMarginMs,
      nodeId: config.nodeId,
      addr: config.advertiseAddr || `${config.host}:${config.port}`,
    },
    log,
    (bits) => metrics.counterRegressions.inc({ tag: `ws${bits}`, kind: 'worker_space' }),
  );
  const ids = new IdService(
    registry,
    {
      segments,
      producer,
      log,
      maxBatch: config.coalesceMax,
      pipeline: config.coalescePipeline,
      hold: config.coalesceHold,
      holdRtt: config.coalesceHoldRtt,
      lingerMs: config.coalesceLingerMs,
      waitMs: config.refillWaitMs,
      metrics,
    },
    { leases, clock, maxBackMs: config.clockMaxBackMs },
    { revealProtected: config.revealProtectedTags },
  );
  // Serving nodes renew their leases from a queue of their own and run the janitor.
  let leaseScheduler: LeaseScheduler | undefined;
  let leaseWorkers: LeaseWorkers | undefined;
  if (config.serveHttp) {
    leaseScheduler = new LeaseScheduler(queueConn, keys.queuePrefix(), config.nodeId, Math.floor(config.leaseTtlMs / 3), (err) =>
      log.debug({ err: err.message }, 'lease queue error'),
    );
    await leaseScheduler.start();
    leaseWorkers = startLeaseWorkers({ connection: workerConn, redis, prefix: keys.queuePrefix(), nodeId: config.nodeId, leases, store: leaseStore, log });
    await leaseStore.heartbeat(config.nodeId, config.leaseTtlMs * 2);
    // The connection is ready now, so 'ready' fires only on reconnects. A Redis that comes
    // back without its data has forgotten the schedulers: put them back (upsert is idempotent).
    queueConn.on('ready', () => {
      leaseScheduler?.start().catch((err: Error) => log.warn({ err: err.message }, 'could not restore the lease schedulers'));
    });
  }
  const refillWorker =
    config.refillConcurrency > 0
      ? startRefillWorker({
          connection: workerConn,
          prefix: keys.queuePrefix(),
          concurrency: config.refillConcurrency,
          tags,
          counters,
          segments,
          nodeId: config.nodeId,
          log,
          metrics,
        })
      : undefined;

  // One readiness check answers both idmint_ready and idmint_redis_up in a scrape (their
  // collectors run at once), instead of pinging every Redis server twice.
  const drain = new Drain();
  let checking: Promise<Readiness> | undefined;
  const readinessOnce = () =>
    (checking ??= readiness({ segments, pool, tags, leases, drain }).finally(() => {
      checking = undefined;
    }));
  metrics.scrapeFrom({
    segmentRemaining: async () => {
      const out: { tag: string; remaining: number }[] = [];
      for (const t of await tags.list()) {
        if (t.mode !== 'segment') continue;
        let remaining = 0;
        for (let shard = 0; shard < t.shards; shard++) {
          const s = await segments.stats({ tag: t.tag, epoch: t.epoch, shard, redis: t.redis });
          if (s.cur !== undefined && s.end !== undefined) remaining += Math.max(0, s.end - s.cur + 1);
        }
        out.push({ tag: t.tag, remaining });
      }
      return out;
    },
    queueDepths: async () => {
      const out: { queue: string; state: string; count: number }[] = [];
      for (const q of queues) {
        const counts = await q.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
        for (const [state, count] of Object.entries(counts)) out.push({ queue: q.name.startsWith('lease.') ? 'lease' : q.name, state, count });
      }
      return out;
    },
    leases: () => ({ held: leases.held().map((l) => ({ bits: l.bits, valid: leases.isValid(l) })), events: { ...leases.events } }),
    clock: () => ids.clockEvents,
    redisUp: async () => Object.entries((await readinessOnce()).redisServers).map(([server, s]) => ({ server, up: s === 'ok' })),
  });

  const capacity = new CapacityReader({ tags, counters, segments, leaseStore, clock });
  registerCapacityMetrics(metrics.registry, {
    capacity: () => capacity.all(),
    workerPools: async () => {
      const out: { bits: number; size: number; used: number }[] = [];
      for (const bits of await leaseStore.spaces()) out.push({ bits, size: 2 ** bits, used: await leaseStore.count(bits) });
      return out;
    },
  });
  registerHealthMetrics(metrics.registry, {
    ready: async () => (await readinessOnce()).ready,
    redisServers: segments.names(),
    redisMasters: () =>
      Object.entries(redisMasters(segments)).flatMap(([server, a]) => (a === null ? [] : a.split(',').map((address) => ({ server, address })))),
    redisRunIds: () =>
      Promise.all(
        segments.names().map(async (server) => {
          const c = segments.connection(server);
          // A cluster has a run id per node; its failovers show in the segment hashes instead.
          if (isCluster(c)) return { server, runId: undefined };
          const info = await c.info('server').catch(() => '');
          return { server, runId: /run_id:([0-9a-f]+)/.exec(info)?.[1] };
        }),
      ),
  });

  let closing: Promise<void> | undefined;
  // Every step is bounded by SHUTDOWN_TIMEOUT_MS in all (src/shutdown-steps.ts); what a silent
  // store keeps from finishing is abandoned, and the connections are dropped in any case.
  const close = () =>
    (closing ??= (async () => {
      const { unfinished, ms } = await runShutdown(
        [
          { name: 'lease workers', run: () => leaseWorkers?.close() },
          { name: 'lease release', run: () => leases.releaseAll() },
          { name: 'lease schedules', run: () => leaseScheduler?.stop() },
          { name: 'refill worker', run: () => refillWorker && closeWorker(refillWorker) },
          { name: 'refill queue', run: () => producer.close() },
          { name: 'redis quit', run: () => Promise.all(redisClients.map((c) => c.quit().catch(() => c.disconnect()))) },
          { name: 'mysql pool', run: () => pool!.end() },
          {
            name: 'drop what is left',
            always: true,
            run: async () => {
              for (const c of redisClients) if (c.status !== 'end') c.disconnect();
              await Promise.all([refillWorker && dropWorker(refillWorker), leaseWorkers?.drop()]);
            },
          },
        ],
        config.shutdownTimeoutMs,
        log,
      );
      if (unfinished.length > 0) {
        log.error({ unfinished, ms: Math.round(ms), shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutdown forced: steps did not finish in time');
        throw new Error(`shutdown forced after ${Math.round(ms)} ms: ${unfinished.join(', ')} did not finish`);
      }
    })());

  const queues: Queue[] = [producer.queue, ...(leaseScheduler ? [leaseScheduler.queue, leaseScheduler.janitor] : [])];
  return {
    config,
    log,
    redis,
    pool,
    keys,
    tags,
    tokens,
    counters,
    segments,
    producer,
    registry,
    subscriber,
    ids,
    leases,
    leaseStore,
    clock,
    metrics,
    capacity,
    queues,
    refillWorker,
    drain,
    readiness: readinessOnce,
    close,
  };
}
