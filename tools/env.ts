// Test environment: every test gets its own MySQL database and Redis key prefix on the real
// servers (REDIS_URL / MYSQL_URL or the local defaults) and removes them afterwards. With
// REDIS_CLUSTER_NODES set (npm run test:cluster) the default Redis of the nodes a test starts
// is that cluster, unless the test picks its own REDIS_URL (a private server for fault tests).
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { loadConfig, type Config } from '../src/config.js';
import { poolOptions } from '../src/store/mysql/pool.js';
import { scanKeys, type RedisClient } from '../src/store/redis/connection.js';

export const ADMIN_TOKEN = 'test-admin-token';
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
/** Seeds of the Redis Cluster this run tests against; '' for a single Redis. */
export const REDIS_CLUSTER_NODES = (process.env.REDIS_CLUSTER_NODES ?? '').trim();
export const ON_CLUSTER = REDIS_CLUSTER_NODES !== '';

/**
 * The `skip` option of a test that cannot run on a cluster (false when not on one): a test
 * that starts its own single redis-server or proxies one connection runs in the single-Redis run.
 */
export function skipOnCluster(why: string): string | false {
  return ON_CLUSTER ? `not on a Redis Cluster: ${why}; it runs in the single-Redis run` : false;
}

/** A client of the Redis the test's nodes use by default: the cluster, or REDIS_URL. */
export function testRedis(): RedisClient {
  if (!ON_CLUSTER) return new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  const seeds = REDIS_CLUSTER_NODES.split(',').map((s) => {
    const i = s.lastIndexOf(':');
    return { host: s.slice(0, i).trim(), port: Number(s.slice(i + 1)) };
  });
  return new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: 3 } });
}

const MYSQL_BASE = process.env.MYSQL_URL || 'mysql://root@127.0.0.1:3306/idmint';

export function mysqlUrlFor(db: string, base = MYSQL_BASE): string {
  const u = new URL(base);
  u.pathname = `/${db}`;
  return u.toString();
}

export interface TestNames {
  readonly db: string;
  readonly prefix: string;
  readonly mysqlUrl: string;
}

export function testNames(): TestNames {
  const id = randomBytes(4).toString('hex');
  const db = `idmint_t_${id}`;
  return { db, prefix: `t${id}`, mysqlUrl: mysqlUrlFor(db) };
}

/** Environment for a node of this test (child processes get it as their env). */
export function testEnv(names: TestNames, extra: Record<string, string> = {}): Record<string, string> {
  // Children inherit process.env: a test that chose its own REDIS_URL gets no cluster.
  const cluster = extra.REDIS_URL === undefined ? REDIS_CLUSTER_NODES : '';
  return {
    REDIS_URL,
    REDIS_CLUSTER_NODES: cluster,
    MYSQL_URL: names.mysqlUrl,
    REDIS_PREFIX: names.prefix,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    PORT: '0',
    HOST: '127.0.0.1',
    UDP_PORT: '0',
    GRPC_PORT: '0',
    // A node stopped by a test closes at once; the drain on SIGTERM has tests of its own.
    SHUTDOWN_DRAIN_MS: '0',
    ...extra,
  };
}

export function testConfig(names: TestNames, extra: Record<string, string> = {}): Config {
  return loadConfig(testEnv(names, extra));
}

/**
 * Drops the test's database and deletes its Redis keys: on redisUrl when given (a private
 * server), else on the default Redis of the run (the cluster when there is one); null when the
 * keys went with a private server that is gone.
 */
export async function cleanup(names: TestNames, redisUrl?: string | null): Promise<void> {
  const conn = await mysql.createConnection({ ...poolOptions(names.mysqlUrl), database: undefined });
  await conn.query(`DROP DATABASE IF EXISTS \`${names.db}\``);
  await conn.end();
  if (redisUrl === null) return;
  const r = redisUrl === undefined ? testRedis() : new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    for (const pattern of [`${names.prefix}:*`, `{${names.prefix}}:*`]) {
      // On a cluster the keys of one scan batch may lie in different slots: one UNLINK each.
      await scanKeys(r, pattern, (keys) =>
        r.isCluster ? Promise.all(keys.map((k) => r.unlink(k))) : r.unlink(...keys),
      );
    }
  } finally {
    r.disconnect();
  }
}
