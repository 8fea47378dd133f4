// Readiness of this process, shared by GET /readyz and the idmint_ready gauge: Redis and MySQL
// answer, the schema is migrated, and when snowflake tags exist this process holds (or can
// take now) a valid worker-id lease for each width they use. A Redis Cluster is ready when it
// reports cluster_state:ok and every master answers. Every other Redis server (REDIS_URLS) is
// reported in `redisServers` without deciding readiness: it is shared by every node and holds
// only some tags, so failing them all would take the whole fleet out of the load balancer for a
// fault of those tags; `degraded` says one is down, and requests for its tags answer
// UNAVAILABLE meanwhile. A draining process (src/service/drain.ts) is not ready whatever the
// checks say: it is on its way out.
import type { Pool } from 'mysql2/promise';
import { workerWidths } from '../core/tag-kinds.js';
import { withinLate } from '../late-timeout.js';
import type { PoolSupervisor } from '../store/mysql/pool-supervisor.js';
import type { TagsRepo } from '../store/mysql/tags-repo.js';
import type { SegmentStore } from '../store/redis/segments.js';
import type { ConnectionSupervisor } from '../store/redis/supervisor.js';
import { DEFAULT_REDIS } from '../store/redis/segments.js';
import { isDegraded, redisMasters, redisServerStates, type ServerState } from '../store/redis/server-health.js';
import type { Drain } from './drain.js';
import type { LeaseManager } from './lease-manager.js';

export interface ReadinessDeps {
  readonly segments: SegmentStore;
  readonly pool: Pool;
  readonly tags: TagsRepo;
  readonly leases: LeaseManager;
  readonly drain?: Pick<Drain, 'draining'>;
  /** Why a server's other connections (queues, workers, subscriber) cannot serve (store/redis/supervisor.ts). */
  readonly connections?: Pick<ConnectionSupervisor, 'reopening' | 'notReady'>;
  /** Why the MySQL pool cannot hand out connections while it is replaced (store/mysql/pool-supervisor.ts). */
  readonly mysqlPool?: Pick<PoolSupervisor, 'down'>;
}

export interface Readiness {
  readonly ready: boolean;
  /** Shutting down: still serving for SHUTDOWN_DRAIN_MS, but no longer ready. */
  readonly draining: boolean;
  /** 'ok' or what failed, per check. */
  readonly checks: { readonly redis: string; readonly mysql: string; readonly lease: string };
  /** Every Redis server by name ("default" first): 'ok' or why it cannot serve. */
  readonly redisServers: Readonly<Record<string, ServerState>>;
  /** host:port of the master each server's connection talks to now (null: not connected), read after the checks. */
  readonly redisMasters: Readonly<Record<string, string | null>>;
  /** A named server other than the default is down: only its tags are affected. */
  readonly degraded: boolean;
}

async function check(fn: () => Promise<unknown>, timeoutMs = 1000): Promise<string> {
  try {
    await withinLate(fn(), timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

function serverState(checked: ServerState, name: string, connections: ReadinessDeps['connections']): ServerState {
  const reopening = connections?.reopening(name);
  if (checked !== 'ok') return reopening ? `${checked}; ${reopening}` : checked;
  return reopening ?? connections?.notReady(name) ?? checked;
}

export async function readiness(deps: ReadinessDeps): Promise<Readiness> {
  const [checked, mysqlChecked, lease] = await Promise.all([
    redisServerStates(deps.segments),
    check(() => deps.pool.query('SELECT 1 FROM idmint_schema_migrations LIMIT 1')),
    check(async () => {
      const widths = workerWidths((await deps.tags.list()).filter((t) => t.enabled));
      // Taken here when missing: a node a load balancer keeps out until it is ready would
      // otherwise never see the request that takes its lease.
      for (const bits of widths) {
        await deps.leases.get(bits).catch((err: Error) => {
          throw new Error(`no valid worker-id lease of width ${bits}: ${err.message}`);
        });
      }
    }),
  ]);
  // A server whose command connection answers is still not ok while another of its
  // connections has ended or is not ready: queues, refills or announcements would not run.
  // One that ended by itself is named even when the check already failed: it says what the
  // process is waiting for.
  const servers = Object.fromEntries(
    Object.entries(checked).map(([name, state]) => [name, serverState(state, name, deps.connections)]),
  );
  const redis = servers[DEFAULT_REDIS];
  // A pool being replaced is named even when its check passed: the check may have met the new one.
  const poolDown = deps.mysqlPool?.down();
  const mysql = poolDown ? (mysqlChecked === 'ok' ? poolDown : `${mysqlChecked}; ${poolDown}`) : mysqlChecked;
  // Read after the checks: a drain that began while they ran counts.
  const draining = deps.drain?.draining ?? false;
  return {
    ready: !draining && redis === 'ok' && mysql === 'ok' && lease === 'ok',
    draining,
    checks: { redis, mysql, lease },
    redisServers: servers,
    redisMasters: redisMasters(deps.segments),
    degraded: isDegraded(servers),
  };
}
