// Keeps the job schedulers that drive lease work alive: this process's lease renewals, in a
// queue of its own (src/jobs/lease-renewal.ts), and the janitor shared by every process
// (src/jobs/janitor.ts). Both are upserted, so starting again is harmless.
import { Queue } from 'bullmq';
import { JANITOR_JOB, JANITOR_JOB_OPTIONS, JANITOR_QUEUE, JANITOR_SCHEDULER } from '../jobs/janitor.js';
import { leaseQueueName, RENEW_JOB, RENEW_JOB_OPTIONS, RENEW_SCHEDULER } from '../jobs/lease-renewal.js';
import type { RedisClient } from '../store/redis/connection.js';

export class LeaseScheduler {
  readonly queue: Queue;
  readonly janitor: Queue;

  /**
   * everyMs: how often this process renews its leases (a third of their TTL); janitorEveryMs:
   * how often the shared janitor runs (JANITOR_EVERY_MS).
   */
  constructor(
    connection: RedisClient,
    prefix: string,
    nodeId: string,
    private readonly everyMs: number,
    readonly janitorEveryMs: number,
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
    await this.scheduleJanitor();
  }

  /** Upserts the shared janitor's scheduler: its next run is added when it has none. */
  async scheduleJanitor(): Promise<void> {
    await this.janitor.upsertJobScheduler(
      JANITOR_SCHEDULER,
      { every: this.janitorEveryMs },
      { name: JANITOR_JOB, opts: JANITOR_JOB_OPTIONS },
    );
  }

  /**
   * When the janitor's next run is due (epoch ms, as BullMQ keeps it), or undefined when it has
   * no scheduler.
   */
  async janitorNext(): Promise<number | undefined> {
    const scheduler = await this.janitor.getJobScheduler(JANITOR_SCHEDULER);
    return scheduler?.next ?? undefined;
  }

  /** Graceful shutdown: this process's queue goes away with it. */
  async stop(): Promise<void> {
    await this.queue.removeJobScheduler(RENEW_SCHEDULER).catch(() => undefined);
    await this.queue.obliterate({ force: true }).catch(() => undefined);
    await this.queue.close();
    await this.janitor.close();
  }
}
