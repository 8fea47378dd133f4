// The refill job: what a producer (src/producer/refill-producer.ts) enqueues and the refill
// worker (src/consumer/refill-worker.ts) runs. One job per (tag, epoch, shard, gen, segment
// number): the job id makes every process that notices the same prefetch point, or the same
// dry or cold tag, share one job.
import type { DefaultJobOptions, JobsOptions } from 'bullmq';
import type { Regression } from '../store/mysql/counters-repo.js';

export const REFILL_QUEUE = 'refill';
export const REFILL_JOB = 'refill';

export interface RefillJobData {
  readonly tag: string;
  readonly epoch: number;
  readonly shard: number;
  /** Rule counters: "<app>/<period>"; absent or '' for segment tags. */
  readonly scope?: string;
  /** The segment hash's gen when the refill was asked for; installs present it. */
  readonly gen: string;
  readonly seg: number;
  /** A request is waiting (cold or dry tag): served before prefetch refills. */
  readonly urgent: boolean;
}

export function refillJobId(data: Pick<RefillJobData, 'tag' | 'epoch' | 'shard' | 'scope' | 'gen' | 'seg'>): string {
  return `refill.${data.tag}.${data.epoch}.${data.shard}.${data.scope ?? ''}.${data.gen}.${data.seg}`;
}

/** Backoff type of refill jobs, computed by refillBackoffMs in the worker's strategy. */
export const REFILL_BACKOFF = 'capped';

/** Capped exponential backoff between attempts: 100 ms, 200 ms, ... at most 5 s. */
export function refillBackoffMs(attemptsMade: number): number {
  return Math.min(5000, 100 * 2 ** Math.max(0, attemptsMade - 1));
}

/** The worker's backoffStrategy: refill jobs' own, and none (-1) for any other type. */
export function refillBackoffStrategy(attemptsMade: number, type?: string): number {
  return type === REFILL_BACKOFF ? refillBackoffMs(attemptsMade) : -1;
}

/** Options of every refill job (the queue's defaults). */
export const REFILL_JOB_DEFAULTS: DefaultJobOptions = {
  // MySQL may be away for a while: keep retrying (capped at 5 s apart) for about an hour.
  attempts: 720,
  backoff: { type: REFILL_BACKOFF },
  removeOnComplete: 1000,
  removeOnFail: 5000,
};

/**
 * How often one process may pull the same backed-off refill forward: while requests wait on a
 * dry tag, its refill is retried at least this often instead of waiting out a backoff of up to
 * 5 s after the store came back.
 */
export const REFILL_RESCHEDULE_MS = 250;

/**
 * Options of one refill job: deduplicated by its id, urgent ones first. reschedule: when the
 * job with that id waits out a retry backoff, run it now (the delay of a failed job; a job
 * that waits or runs is left as it is).
 */
export function refillJobOptions(data: RefillJobData, reschedule = false): JobsOptions {
  return {
    deduplication: { id: refillJobId(data), ...(reschedule ? { reschedule: true } : {}) },
    ...(data.urgent ? { priority: 1 } : { priority: 10 }),
  };
}

/** What a refill job returns (kept with the job in BullMQ; the worker logs and counts it). */
export interface RefillOutcome {
  readonly result: string;
  readonly first?: number;
  readonly last?: number;
  readonly step?: number;
  /** MySQL's mark was below Redis's and was raised: from (MySQL) to (Redis). */
  readonly regression?: Regression;
}
