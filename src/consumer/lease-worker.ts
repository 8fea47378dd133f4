// BullMQ workers for leases: the renewal worker of this process's own queue, and the janitor,
// which removes the lease queues of nodes whose heartbeat lapsed (killed processes).
import { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { JANITOR_QUEUE, LEASE_QUEUE_PREFIX, leaseQueueName } from '../producer/lease-scheduler.js';
import type { LeaseManager } from '../service/lease-manager.js';
import { scanKeys, type RedisClient } from '../store/redis/connection.js';
import type { LeaseStore } from '../store/redis/leases.js';

export interface LeaseWorkers {
  readonly renew: Worker;
  readonly janitor: Worker;
  close(): Promise<void>;
}

/** Lease queues of other nodes whose heartbeat is gone, removed; returns their node ids. */
export async function sweepDeadLeaseQueues(redis: RedisClient, connection: RedisClient, prefix: string, store: LeaseStore, selfId: string): Promise<string[]> {
  const removed: string[] = [];
  const pattern = `${prefix}:${LEASE_QUEUE_PREFIX}*:meta`;
  await scanKeys(redis, pattern, async (keys) => {
    for (const key of keys) {
      const nodeId = key.slice(prefix.length + 1 + LEASE_QUEUE_PREFIX.length, -':meta'.length);
      if (nodeId === selfId || (await store.isAlive(nodeId))) continue;
      const q = new Queue(leaseQueueName(nodeId), { connection, prefix });
      try {
        await q.removeJobScheduler('renew').catch(() => undefined);
        await q.obliterate({ force: true });
        removed.push(nodeId);
      } finally {
        await q.close();
      }
    }
  });
  return removed;
}

export function startLeaseWorkers(deps: {
  connection: RedisClient;
  redis: RedisClient;
  prefix: string;
  nodeId: string;
  leases: LeaseManager;
  store: LeaseStore;
  log: Logger;
}): LeaseWorkers {
  const { connection, prefix, log } = deps;
  const renew = new Worker(leaseQueueName(deps.nodeId), () => deps.leases.renewAll(), { connection, prefix, concurrency: 1 });
  const janitor = new Worker(
    JANITOR_QUEUE,
    async () => {
      const removed = await sweepDeadLeaseQueues(deps.redis, connection, prefix, deps.store, deps.nodeId);
      if (removed.length) log.info({ nodes: removed }, 'janitor removed lease queues of dead nodes');
      return { removed };
    },
    { connection, prefix, concurrency: 1 },
  );
  for (const w of [renew, janitor]) w.on('error', (err) => log.debug({ err: err.message }, 'lease worker error'));
  return {
    renew,
    janitor,
    close: async () => {
      await Promise.all([renew.close(), janitor.close()]);
    },
  };
}
