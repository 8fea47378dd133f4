// The BullMQ worker that runs the janitor job (its contract: src/jobs/janitor.ts): removes the
// lease-renewal queues of nodes whose heartbeat lapsed (killed processes). BullMQ has no call
// that lists queues, so the lease queues are found by their meta keys (the layout is in
// src/store/redis/keys.ts) and removed through BullMQ's Queue.
import { Queue, Worker } from 'bullmq';
import { WORKER_RUN_RETRY_MS } from './run-retry.js';
import type { Logger } from 'pino';
import { JANITOR_QUEUE, type JanitorResult } from '../jobs/janitor.js';
import { LEASE_QUEUE_PREFIX, leaseQueueName, nodeIdOfLeaseQueue, RENEW_SCHEDULER } from '../jobs/lease-renewal.js';
import { scanKeys, type RedisClient } from '../store/redis/connection.js';
import { queueKeys } from '../store/redis/keys.js';
import type { LeaseStore } from '../store/redis/leases.js';

/** Lease queues of other nodes whose heartbeat is gone, removed; returns their node ids. */
export async function sweepDeadLeaseQueues(
  redis: RedisClient,
  connection: RedisClient,
  prefix: string,
  store: LeaseStore,
  selfId: string,
): Promise<string[]> {
  const removed: string[] = [];
  await scanKeys(redis, queueKeys.metaPattern(prefix, LEASE_QUEUE_PREFIX), async (keys) => {
    for (const key of keys) {
      const queue = queueKeys.queueOfMeta(prefix, key);
      const nodeId = queue === undefined ? undefined : nodeIdOfLeaseQueue(queue);
      if (nodeId === undefined || nodeId === selfId || (await store.isAlive(nodeId))) continue;
      const leaseQueue = new Queue(leaseQueueName(nodeId), { connection, prefix });
      try {
        await leaseQueue.removeJobScheduler(RENEW_SCHEDULER).catch(() => undefined);
        await leaseQueue.obliterate({ force: true });
        removed.push(nodeId);
      } finally {
        await leaseQueue.close();
      }
    }
  });
  return removed;
}

export function startJanitorWorker(deps: {
  connection: RedisClient;
  /** The command connection the meta keys are scanned on. */
  redis: RedisClient;
  prefix: string;
  nodeId: string;
  store: LeaseStore;
  log: Logger;
}): Worker<unknown, JanitorResult> {
  const { connection, prefix, log } = deps;
  const worker = new Worker<unknown, JanitorResult>(
    JANITOR_QUEUE,
    async () => {
      const removed = await sweepDeadLeaseQueues(deps.redis, connection, prefix, deps.store, deps.nodeId);
      if (removed.length) log.info({ nodes: removed }, 'janitor removed lease queues of dead nodes');
      return { removed };
    },
    { connection, prefix, concurrency: 1, runRetryDelay: WORKER_RUN_RETRY_MS },
  );
  worker.on('error', (err) => log.debug({ err: err.message }, 'lease worker error'));
  return worker;
}
