// Keeps the job schedulers that drive lease work alive: this process's lease renewals, in a
// queue of its own (src/jobs/lease-renewal.ts), and the janitor shared by every process
// (src/jobs/janitor.ts). Both are upserted, so starting again is harmless.
import { Queue } from 'bullmq';
import {
  JANITOR_EVERY_MS,
  JANITOR_JOB,
  JANITOR_JOB_OPTIONS,
  JANITOR_QUEUE,
  JANITOR_SCHEDULER,
} from '../jobs/janitor.js';
import { leaseQueueName, RENEW_JOB, RENEW_JOB_OPTIONS, RENEW_SCHEDULER } from '../jobs/lease-renewal.js';
import type { RedisClient } from '../store/redis/connection.js';

export class LeaseScheduler {
  readonly queue: Queue;
  readonly janitor: Queue;

  /** everyMs: how often this process renews its leases (a third of their TTL). */
  constructor(
    connection: RedisClient,
    prefix: string,
    nodeId: string,
    private readonly everyMs: number,
    onError: (err: Error) => void = () => undefined,
  ) {
    this.queue = new Queue(leaseQueueName(nodeId), { connection, prefix });
    this.janitor = new Queue(JANITOR_QUEUE, { connection, prefix });
    this.queue.on('error', onError);
    this.janitor.on('error', onError);
  }

  /** Idempotent: also called again after Redis comes back without its data. */
  async start(): Promise<void> {
    await this.queue.upsertJobScheduler(
      RENEW_SCHEDULER,
      { every: this.everyMs },
      { name: RENEW_JOB, opts: RENEW_JOB_OPTIONS },
    );
    await this.janitor.upsertJobScheduler(
      JANITOR_SCHEDULER,
      { every: JANITOR_EVERY_MS },
      { name: JANITOR_JOB, opts: JANITOR_JOB_OPTIONS },
    );
  }

  /** Graceful shutdown: this process's queue goes away with it. */
  async stop(): Promise<void> {
    await this.queue.removeJobScheduler(RENEW_SCHEDULER).catch(() => undefined);
    await this.queue.obliterate({ force: true }).catch(() => undefined);
    await this.queue.close();
    await this.janitor.close();
  }
}
