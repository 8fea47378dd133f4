// Enqueues segment refills (the job's contract is src/jobs/refill.ts): the coalescer asks for
// one when a take answers that a refill is wanted; the job id makes every process asking for
// the same segment share one job.
// A refill that failed (MySQL or the tag's Redis away) waits out a backoff of up to 5 s before
// its next try. A request waiting on the dry tag does not wait that out: its urgent request
// pulls the job forward, at most every REFILL_RESCHEDULE_MS per job and process, so a tag is
// served again soon after its stores answer, and a store that stays away is not hammered.
import { Queue } from 'bullmq';
import {
  REFILL_JOB,
  REFILL_JOB_DEFAULTS,
  REFILL_QUEUE,
  REFILL_RESCHEDULE_MS,
  refillJobId,
  refillJobOptions,
  type RefillJobData,
} from '../jobs/refill.js';
import type { RedisClient } from '../store/redis/connection.js';

/** Entries kept before the old ones are dropped. */
const RESCHEDULED_KEEP = 1024;

export class RefillProducer {
  readonly queue: Queue<RefillJobData>;
  /** Job id → when this process last asked to pull it forward. */
  private readonly rescheduledAt = new Map<string, number>();

  constructor(
    connection: RedisClient,
    prefix: string,
    onError: (err: Error) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.queue = new Queue<RefillJobData>(REFILL_QUEUE, { connection, prefix, defaultJobOptions: REFILL_JOB_DEFAULTS });
    this.queue.on('error', onError);
  }

  async request(data: RefillJobData): Promise<void> {
    await this.queue.add(
      REFILL_JOB,
      data,
      refillJobOptions(data, data.urgent && this.mayReschedule(refillJobId(data))),
    );
  }

  /** True at most once per REFILL_RESCHEDULE_MS for one job id. */
  private mayReschedule(id: string): boolean {
    const now = this.now();
    const last = this.rescheduledAt.get(id);
    if (last !== undefined && now - last < REFILL_RESCHEDULE_MS) return false;
    if (this.rescheduledAt.size >= RESCHEDULED_KEEP) {
      for (const [jobId, at] of this.rescheduledAt)
        if (now - at >= REFILL_RESCHEDULE_MS) this.rescheduledAt.delete(jobId);
    }
    this.rescheduledAt.set(id, now);
    return true;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
