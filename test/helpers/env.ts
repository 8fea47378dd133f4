// Test environment: every test gets its own MySQL database and Redis key prefix on the real
// servers (REDIS_URL / MYSQL_URL or the local defaults) and removes them afterwards.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { loadConfig, type Config } from '../../src/config.js';
import { poolOptions } from '../../src/store/mysql/pool.js';

export const ADMIN_TOKEN = 'test-admin-token';
export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
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
  return {
    REDIS_URL,
    MYSQL_URL: names.mysqlUrl,
    REDIS_PREFIX: names.prefix,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    PORT: '0',
    HOST: '127.0.0.1',
    UDP_PORT: '0',
    ...extra,
  };
}

export function testConfig(names: TestNames, extra: Record<string, string> = {}): Config {
  return loadConfig(testEnv(names, extra));
}

/** Drops the test's database and deletes its Redis keys. */
export async function cleanup(names: TestNames, redisUrl = REDIS_URL): Promise<void> {
  const conn = await mysql.createConnection({ ...poolOptions(names.mysqlUrl), database: undefined });
  await conn.query(`DROP DATABASE IF EXISTS \`${names.db}\``);
  await conn.end();
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    for (const pattern of [`${names.prefix}:*`, `{${names.prefix}}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await r.unlink(...keys);
      } while (cursor !== '0');
    }
  } finally {
    r.disconnect();
  }
}
