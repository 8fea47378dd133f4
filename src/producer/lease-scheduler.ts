// Job schedulers that drive lease work: each process renews its worker-id leases from a
// queue of its own (`lease.<node id>`, every TTL/3), and every process keeps one shared
// janitor scheduler alive that clears queues left behind by processes that were killed.
import { Queue } from 'bullmq';
import type { RedisClient } from '../store/redis/connection.js';

export const LEASE_QUEUE_PREFIX = 'lease.';
export const JANITOR_QUEUE = 'janitor';
export const JANITOR_EVERY_MS = 30_000;

export const leaseQueueName = (nodeId: string): string => `${LEASE_QUEUE_PREFIX}${nodeId}`;

export class LeaseScheduler {
  readonly queue: Queue;
  readonly janitor: Queue;

  constructor(connection: RedisClient, prefix: string, nodeId: string, private readonly everyMs: number, onError: (err: Error) => void = () => undefined) {
    this.queue = new Queue(leaseQueueName(nodeId), { connection, prefix });
    this.janitor = new Queue(JANITOR_QUEUE, { connection, prefix });
    this.queue.on('error', onError);
    this.janitor.on('error', onError);
  }

  /** Idempotent: also called again after Redis comes back without its data. */
  async start(): Promise<void> {
    await this.queue.upsertJobScheduler('renew', { every: this.everyMs }, { name: 'renew', opts: { removeOnComplete: true, removeOnFail: 50 } });
    await this.janitor.upsertJobScheduler('janitor', { every: JANITOR_EVERY_MS }, { name: 'janitor', opts: { removeOnComplete: 10, removeOnFail: 50 } });
  }

  /** Graceful shutdown: this process's queue goes away with it. */
  async stop(): Promise<void> {
    await this.queue.removeJobScheduler('renew').catch(() => undefined);
    await this.queue.obliterate({ force: true }).catch(() => undefined);
    await this.queue.close();
    await this.janitor.close();
  }
}
