// The BullMQ worker that runs this process's lease renewals (their contract:
// src/jobs/lease-renewal.ts), started together with the janitor worker (./janitor-worker.ts):
// every serving process runs both.
import { Worker } from 'bullmq';
import { WORKER_RUN_RETRY_MS } from './run-retry.js';
import type { Logger } from 'pino';
import { leaseQueueName } from '../jobs/lease-renewal.js';
import type { LeaseManager } from '../service/lease-manager.js';
import type { RedisClient } from '../store/redis/connection.js';
import type { LeaseStore } from '../store/redis/leases.js';
import { startJanitorWorker } from './janitor-worker.js';
import { closeWorker, dropWorker } from './worker-close.js';

/** How BullMQ's worker error begins when it could not add a scheduler's next job. */
export const UNSCHEDULED = 'Failed to add repeatable job for next iteration';

export interface LeaseWorkers {
  readonly renew: Worker;
  readonly janitor: Worker;
  /**
   * Graceful while Redis answers, forced when it does not, dropped past gracefulMs (./worker-close.ts); the workers
   * dropped.
   */
  close(gracefulMs?: number): Promise<string[]>;
  /** Drops the workers' own connections without waiting (the last step of a shutdown). */
  drop(): Promise<void>;
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
  const renew = new Worker(leaseQueueName(deps.nodeId), () => deps.leases.renewAll(), {
    connection,
    prefix,
    concurrency: 1,
    runRetryDelay: WORKER_RUN_RETRY_MS,
  });
  // BullMQ reports a next renewal it could not schedule only here, and then schedules none: the
  // renewal watchdog (src/producer/renewal-watchdog.ts) puts it back; an operator should see it.
  // Its connection errors while Redis is away stay at debug.
  renew.on('error', (err) => {
    if (err.message.startsWith(UNSCHEDULED)) log.warn({ err: err.message }, 'lease renewal not scheduled again');
    else log.debug({ err: err.message }, 'lease worker error');
  });
  const janitor = startJanitorWorker(deps);
  return {
    renew,
    janitor,
    close: async (gracefulMs?: number) => {
      const [renewOutcome, janitorOutcome] = await Promise.all([
        closeWorker(renew, undefined, gracefulMs),
        closeWorker(janitor, undefined, gracefulMs),
      ]);
      return [
        ...(renewOutcome === 'dropped' ? ['lease renewal worker'] : []),
        ...(janitorOutcome === 'dropped' ? ['janitor worker'] : []),
      ];
    },
    drop: async () => {
      await Promise.all([dropWorker(renew), dropWorker(janitor)]);
    },
  };
}
