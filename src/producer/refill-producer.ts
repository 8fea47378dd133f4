// Enqueues segment refills (the job's contract is src/jobs/refill.ts): the coalescer asks for
// one when a take answers that a refill is wanted; the job id makes every process asking for
// the same segment share one job.
import { Queue } from 'bullmq';
import { REFILL_JOB, REFILL_JOB_DEFAULTS, REFILL_QUEUE, refillJobOptions, type RefillJobData } from '../jobs/refill.js';
import type { RedisClient } from '../store/redis/connection.js';

export class RefillProducer {
  readonly queue: Queue<RefillJobData>;

  constructor(connection: RedisClient, prefix: string, onError: (err: Error) => void = () => undefined) {
    this.queue = new Queue<RefillJobData>(REFILL_QUEUE, { connection, prefix, defaultJobOptions: REFILL_JOB_DEFAULTS });
    this.queue.on('error', onError);
  }

  async request(d: RefillJobData): Promise<void> {
    await this.queue.add(REFILL_JOB, d, refillJobOptions(d));
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
