// What a node shows of itself: one readiness check at a time (shared by /readyz, /metrics and
// gRPC health), and the sources the Prometheus collectors read at scrape time (segments left,
// queue depths, leases, clock events, Redis servers and masters, capacity, worker pools).
import type { Queue } from 'bullmq';
import type { Pool } from 'mysql2/promise';
import type { Clock } from '../core/clock.js';
import { registerCapacityMetrics } from '../metrics/capacity-metrics.js';
import { registerHealthMetrics } from '../metrics/health-metrics.js';
import type { Metrics } from '../metrics/metrics.js';
import { CapacityReader } from '../service/capacity.js';
import type { Drain } from '../service/drain.js';
import type { IdService } from '../service/id-service.js';
import type { LeaseManager } from '../service/lease-manager.js';
import { readiness, type Readiness } from '../service/readiness.js';
import type { CountersRepo } from '../store/mysql/counters-repo.js';
import type { PoolSupervisor } from '../store/mysql/pool-supervisor.js';
import type { TagsRepo } from '../store/mysql/tags-repo.js';
import { isCluster } from '../store/redis/connection.js';
import type { LeaseStore } from '../store/redis/leases.js';
import type { SegmentStore } from '../store/redis/segments.js';
import type { ConnectionSupervisor } from '../store/redis/supervisor.js';
import { redisMasters } from '../store/redis/server-health.js';

export interface ObserveDeps {
  readonly pool: Pool;
  readonly tags: TagsRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly leases: LeaseManager;
  readonly leaseStore: LeaseStore;
  readonly ids: IdService;
  readonly metrics: Metrics;
  readonly clock: Clock;
  readonly drain: Drain;
  readonly connections: ConnectionSupervisor;
  readonly mysqlPool?: Pick<PoolSupervisor, 'down'>;
  /** Every BullMQ queue of the node, read when scraped. */
  readonly queues: () => readonly Queue[];
}

export interface Observed {
  /** The readiness checks, one run at a time. */
  readonly readiness: () => Promise<Readiness>;
  readonly capacity: CapacityReader;
}

export function observe(deps: ObserveDeps): Observed {
  const { tags, segments, leases, leaseStore, metrics } = deps;
  // One readiness check answers both idmint_ready and idmint_redis_up in a scrape (their
  // collectors run at once), instead of pinging every Redis server twice.
  let checking: Promise<Readiness> | undefined;
  const readinessOnce = () =>
    (checking ??= readiness({
      segments,
      pool: deps.pool,
      tags,
      leases,
      drain: deps.drain,
      connections: deps.connections,
      mysqlPool: deps.mysqlPool,
    }).finally(() => {
      checking = undefined;
    }));
  metrics.scrapeFrom({
    segmentRemaining: async () => {
      const out: { tag: string; remaining: number }[] = [];
      for (const tag of await tags.list()) {
        if (tag.mode !== 'segment') continue;
        let remaining = 0;
        for (let shard = 0; shard < tag.shards; shard++) {
          const stats = await segments.stats({ tag: tag.tag, epoch: tag.epoch, shard, redis: tag.redis });
          if (stats.cur !== undefined && stats.end !== undefined) remaining += Math.max(0, stats.end - stats.cur + 1);
        }
        out.push({ tag: tag.tag, remaining });
      }
      return out;
    },
    queueDepths: async () => {
      const out: { queue: string; state: string; count: number }[] = [];
      for (const queue of deps.queues()) {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
        for (const [state, count] of Object.entries(counts))
          out.push({ queue: queue.name.startsWith('lease.') ? 'lease' : queue.name, state, count });
      }
      return out;
    },
    leases: () => ({
      held: leases.held().map((l) => ({ bits: l.bits, valid: leases.isValid(l) })),
      events: { ...leases.events },
    }),
    clock: () => deps.ids.clockEvents,
    redisUp: async () =>
      Object.entries((await readinessOnce()).redisServers).map(([server, state]) => ({ server, up: state === 'ok' })),
  });

  const capacity = new CapacityReader({ tags, counters: deps.counters, segments, leaseStore, clock: deps.clock });
  registerCapacityMetrics(metrics.registry, {
    capacity: () => capacity.all(),
    workerPools: async () => {
      const out: { bits: number; size: number; used: number }[] = [];
      for (const bits of await leaseStore.spaces())
        out.push({ bits, size: 2 ** bits, used: await leaseStore.count(bits) });
      return out;
    },
  });
  registerHealthMetrics(metrics.registry, {
    ready: async () => (await readinessOnce()).ready,
    redisServers: segments.names(),
    redisMasters: () =>
      Object.entries(redisMasters(segments)).flatMap(([server, masters]) =>
        masters === null ? [] : masters.split(',').map((address) => ({ server, address })),
      ),
    redisRunIds: () =>
      Promise.all(
        segments.names().map(async (server) => {
          const client = segments.connection(server);
          // A cluster has a run id per node; its failovers show in the segment hashes instead.
          if (isCluster(client)) return { server, runId: undefined };
          const info = await client.info('server').catch(() => '');
          return { server, runId: /run_id:([0-9a-f]+)/.exec(info)?.[1] };
        }),
      ),
  });
  return { readiness: readinessOnce, capacity };
}
