// Builds one idmint node: connections, schema, stores, queues and workers, and takes them
// down in order. The HTTP app (src/api/app.ts) and `idmint worker` both run on it.
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { startRefillWorker } from './consumer/refill-worker.js';
import { RefillProducer } from './producer/refill-producer.js';
import { Dispenser } from './service/dispenser.js';
import { TagRegistry } from './service/tag-registry.js';
import { CountersRepo } from './store/mysql/counters-repo.js';
import { migrate } from './store/mysql/migrations.js';
import { createPool } from './store/mysql/pool.js';
import { TagsRepo } from './store/mysql/tags-repo.js';
import { createRedis, whenReady } from './store/redis/connection.js';
import { Keys } from './store/redis/keys.js';
import { SegmentStore } from './store/redis/segments.js';

export interface Runtime {
  readonly config: Config;
  readonly log: Logger;
  readonly redis: Redis;
  readonly pool: Pool;
  readonly keys: Keys;
  readonly tags: TagsRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly producer: RefillProducer;
  readonly registry: TagRegistry;
  readonly dispenser: Dispenser;
  readonly refillWorker?: Worker;
  /** Closes workers, queues, Redis and MySQL, in that order. Safe to call twice. */
  close(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { node: config.nodeId } });
}

export async function createRuntime(config: Config, log: Logger = createLogger(config)): Promise<Runtime> {
  const keys = new Keys(config.redisPrefix);
  const redis = createRedis(config.redisUrl, 'command');
  const queueConn = createRedis(config.redisUrl, 'queue');
  const workerConn = createRedis(config.redisUrl, 'worker');
  const subscriber = createRedis(config.redisUrl, 'subscriber');
  const redisClients = [redis, queueConn, workerConn, subscriber];
  for (const c of redisClients) c.on('error', (err: Error) => log.debug({ err: err.message }, 'redis connection error'));
  let pool: Pool | undefined;
  try {
    await Promise.all(redisClients.map((c) => whenReady(c)));
    pool = await createPool(config.mysqlUrl);
    const applied = await migrate(pool);
    if (applied.length) log.info({ applied }, 'schema migrations applied');
  } catch (err) {
    for (const c of redisClients) c.disconnect();
    await pool?.end().catch(() => undefined);
    throw err;
  }
  const tags = new TagsRepo(pool);
  const counters = new CountersRepo(pool);
  const segments = new SegmentStore(redis, keys);
  const producer = new RefillProducer(queueConn, keys.queuePrefix());
  const registry = new TagRegistry(tags, redis, keys, config.tagCacheMs, log);
  await registry.listen(subscriber);
  const dispenser = new Dispenser(registry, {
    segments,
    producer,
    log,
    maxBatch: config.coalesceMax,
    waitMs: config.refillWaitMs,
  });
  const refillWorker =
    config.refillConcurrency > 0
      ? startRefillWorker({ connection: workerConn, prefix: keys.queuePrefix(), concurrency: config.refillConcurrency, tags, counters, segments, nodeId: config.nodeId, log })
      : undefined;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await refillWorker?.close().catch((err: Error) => log.warn({ err: err.message }, 'closing the refill worker'));
      await producer.close().catch(() => undefined);
      for (const c of redisClients) await c.quit().catch(() => c.disconnect());
      await pool!.end().catch(() => undefined);
    })());

  return { config, log, redis, pool, keys, tags, counters, segments, producer, registry, dispenser, refillWorker, close };
}
