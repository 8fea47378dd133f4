// Readiness of this process, shared by GET /readyz and the idmint_ready gauge: Redis and MySQL
// answer, the schema is migrated, and when snowflake tags exist this process holds (or can
// take now) a valid worker-id lease for each width they use. A Redis Cluster is ready when it
// reports cluster_state:ok and every master answers.
import type { Pool } from 'mysql2/promise';
import type { TagsRepo } from '../store/mysql/tags-repo.js';
import { checkRedis, type RedisClient } from '../store/redis/connection.js';
import type { LeaseManager } from './lease-manager.js';

export interface ReadinessDeps {
  readonly redis: RedisClient;
  readonly pool: Pool;
  readonly tags: TagsRepo;
  readonly leases: LeaseManager;
}

export interface Readiness {
  readonly ready: boolean;
  /** 'ok' or what failed, per check. */
  readonly checks: { readonly redis: string; readonly mysql: string; readonly lease: string };
}

async function check(fn: () => Promise<unknown>, timeoutMs = 1000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([fn(), new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)))]);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  } finally {
    clearTimeout(timer);
  }
}

export async function readiness(d: ReadinessDeps): Promise<Readiness> {
  const [redis, mysql, lease] = await Promise.all([
    check(() => checkRedis(d.redis)),
    check(() => d.pool.query('SELECT 1 FROM idmint_schema_migrations LIMIT 1')),
    check(async () => {
      const widths = new Set((await d.tags.list()).flatMap((t) => (t.snowflake && t.enabled ? [t.snowflake.workerBits] : [])));
      // Taken here when missing: a node a load balancer keeps out until it is ready would
      // otherwise never see the request that takes its lease.
      for (const bits of widths) {
        await d.leases.get(bits).catch((err: Error) => {
          throw new Error(`no valid worker-id lease of width ${bits}: ${err.message}`);
        });
      }
    }),
  ]);
  return { ready: redis === 'ok' && mysql === 'ok' && lease === 'ok', checks: { redis, mysql, lease } };
}
