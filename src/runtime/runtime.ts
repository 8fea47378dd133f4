// Builds one idmint node in named steps: connections and schema (runtime/connect.ts), stores
// and the ID service (here), queues and workers (runtime/workers.ts), readiness and the metrics'
// sources (runtime/observe.ts), and the ordered shutdown (runtime/close.ts). The HTTP app
// (src/api/app.ts) and `idmint worker` both run on it. src/api is handed its services
// (`Services`), never a store: admin writes go through the door, TagAdmin.
import type { Queue, Worker } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ShiftedClock, systemClock, type Clock } from '../core/clock.js';
import { createLogger } from '../logger.js';
import { Metrics } from '../metrics/metrics.js';
import { RefillProducer } from '../producer/refill-producer.js';
import { closer } from './close.js';
import { connect, type Connections } from './connect.js';
import { observe } from './observe.js';
import { startWorkers } from './workers.js';
import { AdminReads } from '../service/admin-reads.js';
import type { CapacityReader } from '../service/capacity.js';
import { DebugSwitches } from '../service/debug-switches.js';
import { Drain } from '../service/drain.js';
import { IdService } from '../service/id-service.js';
import { IdempotencyKeys } from '../service/idempotency.js';
import { LeaseManager } from '../service/lease-manager.js';
import type { Readiness } from '../service/readiness.js';
import { TagAdmin } from '../service/tag-admin.js';
import { forgetSeriesOfDeletedTags } from '../service/deleted-tag-series.js';
import { TagRegistry } from '../service/tag-registry.js';
import { CountersRepo } from '../store/mysql/counters-repo.js';
import { SpacesRepo } from '../store/mysql/spaces-repo.js';
import { TagsRepo } from '../store/mysql/tags-repo.js';
import { TokensRepo } from '../store/mysql/tokens-repo.js';
import type { RedisClient } from '../store/redis/connection.js';
import { IdempotencyRecords } from '../store/redis/idempotency-records.js';
import { Keys } from '../store/redis/keys.js';
import { LeaseStore } from '../store/redis/leases.js';
import { SegmentStore } from '../store/redis/segments.js';
import { ConnectionSupervisor } from '../store/redis/supervisor.js';

/** What src/api is handed: the services of this node, and no store (eslint.config.mjs, idmint/layers). */
export interface Services {
  readonly config: Config;
  readonly log: Logger;
  /** Issues IDs for every transport. */
  readonly ids: IdService;
  /** The door of every admin write: each is announced and cleaned up after in Redis. */
  readonly tagAdmin: TagAdmin;
  /** What the admin API reads: definitions, live state, tokens, Redis servers, worker-id pools. */
  readonly adminReads: AdminReads;
  /** The debug switches of test mode (src/api/http/routes/debug.ts). */
  readonly debugSwitches: DebugSwitches;
  readonly leases: LeaseManager;
  readonly clock: Clock;
  readonly metrics: Metrics;
  /** Consumption rate, ID space left and forecasts per tag (admin API, /metrics). */
  readonly capacity: CapacityReader;
  /** Every BullMQ queue of this process (for Bull Board). */
  readonly queues: Queue[];
  /** Set when a shutdown begins with a drain: readiness then answers not ready. */
  readonly drain: Drain;
  /** The readiness checks (one run at a time, shared by /readyz, /metrics and gRPC health). */
  readiness(): Promise<Readiness>;
  /** Closes workers, queues, Redis and MySQL, in that order. Safe to call twice. */
  close(): Promise<void>;
}

/** The whole node: its services and the stores under them (for the runtime's own wiring, tools and tests). */
export interface Runtime extends Services {
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
  /** The kept answers of idempotency keys (the ID service serves keyed requests through them). */
  readonly idempotency: IdempotencyKeys;
  readonly leaseStore: LeaseStore;
  readonly refillWorker?: Worker;
  /** Watches every Redis connection and opens again one that ended by itself. */
  readonly connections: ConnectionSupervisor;
}

/** The services of a node alone, as src/api is handed them: an object that holds no store. */
export function servicesOf(rt: Runtime): Services {
  const { config, log, ids, tagAdmin, adminReads, debugSwitches, leases, clock, metrics, capacity, queues, drain } = rt;
  return {
    config,
    log,
    ids,
    tagAdmin,
    adminReads,
    debugSwitches,
    leases,
    clock,
    metrics,
    capacity,
    queues,
    drain,
    readiness: () => rt.readiness(),
    close: () => rt.close(),
  };
}

export interface RuntimeOptions {
  /** Time for snowflake generation and leases (tests inject a movable clock). */
  readonly clock?: Clock;
}

export async function createRuntime(
  config: Config,
  log: Logger = createLogger(config),
  opts: RuntimeOptions = {},
): Promise<Runtime> {
  // Test mode: a clock the debug routes can shift (src/api/http/routes/debug.ts).
  const clock = opts.clock ?? (config.testMode ? new ShiftedClock(systemClock) : systemClock);
  const keys = new Keys(config.redisPrefix);
  const metrics = new Metrics();
  const connections = new ConnectionSupervisor(
    log,
    (server, role) => metrics.connectionRestarts.inc({ server, role }),
    (server, role) => metrics.connectionRestarts.inc({ server, role }, 0),
  );
  metrics.connectionRestarts.inc({ server: 'mysql', role: 'pool' }, 0);
  const conns = await connect(config, log, connections, () =>
    metrics.connectionRestarts.inc({ server: 'mysql', role: 'pool' }),
  );
  const { redis, pool, subscriber } = conns;
  const tags = new TagsRepo(pool);
  const counters = new CountersRepo(pool);
  const tokens = new TokensRepo(pool);
  const segments = new SegmentStore({ default: redis, ...Object.fromEntries(conns.extraRedis) }, keys, (ref) => {
    metrics.redisReplaced.inc({ tag: ref.tag });
    log.warn(
      { tag: ref.tag, shard: ref.shard, scope: ref.scope || undefined },
      'segment state written by another Redis instance (restart from a snapshot or failover): abandoned, continuing from the MySQL high-water mark',
    );
  });
  const producer = new RefillProducer(conns.queueConn, keys.queuePrefix(), (err) =>
    log.debug({ err: err.message }, 'refill queue error'),
  );
  const registry = await listenForChanges(config, conns, keys, tags, tokens, log);
  forgetSeriesOfDeletedTags(registry, metrics, log);
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
  const idempotency = new IdempotencyKeys(new IdempotencyRecords(segments, keys), {
    maxKeys: config.idempotencyMaxKeys,
    maxBytes: config.idempotencyMaxBytes,
    holdMs: config.idempotencyHoldMs,
    // A claim outlives the longest take (a refill waited for); a request waits for another's answer as long.
    claimMs: Math.max(10_000, 3 * config.refillWaitMs),
    waitMs: config.refillWaitMs,
    counters: metrics.idempotency,
  });
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
    idempotency,
  );
  const workers = await startWorkers({
    config,
    conns,
    keys,
    leases,
    leaseStore,
    tags,
    counters,
    segments,
    metrics,
    log,
  });
  const { leaseScheduler, refillWorker } = workers;
  ids.periods.start(config.rulePeriodWarmMs);
  const queues: Queue[] = [producer.queue, ...(leaseScheduler ? [leaseScheduler.queue, leaseScheduler.janitor] : [])];
  const drain = new Drain();
  const observed = observe({
    pool,
    tags,
    counters,
    segments,
    leases,
    leaseStore,
    ids,
    metrics,
    clock,
    drain,
    connections,
    mysqlPool: conns.mysql,
    queues: () => queues,
  });
  const tagAdmin = new TagAdmin({ tags, tokens, segments, registry, pool, log });
  const adminReads = new AdminReads({ tags, tokens, counters, segments, idempotency, leaseStore, connections });
  const debugSwitches = new DebugSwitches({ redis, keys, leases, connections, nodeId: config.nodeId });
  return {
    config,
    log,
    tagAdmin,
    adminReads,
    debugSwitches,
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
    idempotency,
    leases,
    leaseStore,
    clock,
    metrics,
    capacity: observed.capacity,
    queues,
    refillWorker,
    drain,
    readiness: observed.readiness,
    connections,
    close: closer(config, conns, connections, workers, leases, producer, log, ids.periods),
  };
}

/**
 * The tag registry, listening for tag change announcements on the subscriber connection; a
 * subscriber waits for nothing, so a silent connection would never be noticed: a PING now and
 * then (answered within the worker socket timeout, or the connection is reset).
 */
async function listenForChanges(
  config: Config,
  conns: Connections,
  keys: Keys,
  tags: TagsRepo,
  tokens: TokensRepo,
  log: Logger,
): Promise<TagRegistry> {
  const { redis, subscriber } = conns;
  const registry = new TagRegistry(
    { get: (t) => tags.get(t), tokenHashes: (t) => tokens.hashes(t) },
    redis,
    keys,
    config.tagCacheMs,
    log,
  );
  await registry.listen(subscriber);
  const subscriberPing = setInterval(() => void subscriber.ping().catch(() => undefined), 5000);
  subscriberPing.unref();
  subscriber.once('end', () => clearInterval(subscriberPing));
  return registry;
}
