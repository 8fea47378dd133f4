// The first step of a node: its Redis connections (the default Redis, a cluster or a Sentinel
// group, holds the queues, leases, announcements and its tags' segments; named servers of
// REDIS_URLS hold only their tags' segments) and its MySQL pool with the schema migrated. On a
// failure nothing is left open.
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { migrate } from '../store/mysql/migrations.js';
import { createPool } from '../store/mysql/pool.js';
import { PoolSupervisor } from '../store/mysql/pool-supervisor.js';
import { createDefaultRedis, createRedis, whenReady, type RedisClient } from '../store/redis/connection.js';
import type { ConnectionSupervisor } from '../store/redis/supervisor.js';

export interface Connections {
  /** The default Redis's request-path connection. */
  readonly redis: RedisClient;
  /** BullMQ's queues (producers, schedulers). */
  readonly queueConn: RedisClient;
  /** BullMQ's workers (blocking commands). */
  readonly workerConn: RedisClient;
  /** Tag change announcements. */
  readonly subscriber: RedisClient;
  /** The named Redis servers of REDIS_URLS, by name. */
  readonly extraRedis: readonly (readonly [string, RedisClient])[];
  /** Every Redis connection above, to close. */
  readonly redisClients: readonly RedisClient[];
  /** The MySQL pool: forwards to whichever pool `mysql` keeps current. */
  readonly pool: Pool;
  /** Replaces the pool when it stops handing out connections (store/mysql/pool-supervisor.ts). */
  readonly mysql: PoolSupervisor;
}

/**
 * Every Redis connection is watched by supervisor (store/redis/supervisor.ts) from its creation
 * on, the MySQL pool by a PoolSupervisor once migrated; onPoolRestart counts its replacements.
 */
export async function connect(
  config: Config,
  log: Logger,
  supervisor: ConnectionSupervisor,
  onPoolRestart?: () => void,
): Promise<Connections> {
  const watch = (c: RedisClient, role: string, server = 'default') => supervisor.watch(c, server, role);
  const redis = watch(createDefaultRedis(config, 'command'), 'command');
  const queueConn = watch(createDefaultRedis(config, 'queue'), 'queue');
  const workerConn = watch(createDefaultRedis(config, 'worker'), 'worker');
  const subscriber = watch(createDefaultRedis(config, 'subscriber'), 'subscriber');
  const extraRedis = Object.entries(config.redisUrls)
    .filter(([name]) => name !== 'default')
    .map(
      ([name, url]) =>
        [
          name,
          watch(
            createRedis(url, 'command', config.redisCommandTimeoutMs, config.redisSentinelPassword),
            'command',
            name,
          ),
        ] as const,
    );
  const redisClients: RedisClient[] = [
    redis,
    queueConn,
    workerConn,
    subscriber,
    ...extraRedis.map(([, client]) => client),
  ];
  for (const client of redisClients)
    client.on('error', (err: Error) => log.debug({ err: err.message }, 'redis connection error'));
  let pool: Pool | undefined;
  try {
    await Promise.all([redis, queueConn, workerConn, subscriber].map((c) => whenReady(c)));
    // A named server that is down only affects its own tags: start anyway.
    await Promise.all(
      extraRedis.map(([name, client]) =>
        whenReady(client, 3000).catch((err: Error) =>
          log.warn(
            { redis: name, err: err.message },
            'named Redis not reachable at start-up; its tags answer 503 until it is',
          ),
        ),
      ),
    );
    pool = await createPool(config.mysqlUrl, config.mysqlQueryTimeoutMs);
    const applied = await migrate(pool);
    if (applied.length) log.info({ applied }, 'schema migrations applied');
  } catch (err) {
    for (const client of redisClients) client.disconnect();
    await pool?.end().catch(() => undefined);
    throw err;
  }
  const mysqlPool = new PoolSupervisor(config.mysqlUrl, pool, config.mysqlQueryTimeoutMs, log, onPoolRestart).start();
  return { redis, queueConn, workerConn, subscriber, extraRedis, redisClients, pool: mysqlPool.pool, mysql: mysqlPool };
}
