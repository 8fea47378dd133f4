// Enqueues segment refills. One job per (tag, epoch, shard, gen, segment number): the
// deduplication id makes every process that notices the same prefetch point, or the same
// dry or cold tag, share one job.
import { Queue } from 'bullmq';
import type { RedisClient } from '../store/redis/connection.js';

export const REFILL_QUEUE = 'refill';
/** Backoff type handled by the refill worker's strategy (capped exponential). */
export const REFILL_BACKOFF = 'capped';

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

export function refillJobId(d: Pick<RefillJobData, 'tag' | 'epoch' | 'shard' | 'scope' | 'gen' | 'seg'>): string {
  return `refill.${d.tag}.${d.epoch}.${d.shard}.${d.scope ?? ''}.${d.gen}.${d.seg}`;
}

export class RefillProducer {
  readonly queue: Queue<RefillJobData>;

  constructor(connection: RedisClient, prefix: string, onError: (err: Error) => void = () => undefined) {
    this.queue = new Queue<RefillJobData>(REFILL_QUEUE, {
      connection,
      prefix,
      defaultJobOptions: {
        // MySQL may be away for a while: keep retrying (capped at 5 s apart) for about an hour.
        attempts: 720,
        backoff: { type: REFILL_BACKOFF },
        removeOnComplete: 1000,
        removeOnFail: 5000,
      },
    });
    this.queue.on('error', onError);
  }

  async request(d: RefillJobData): Promise<void> {
    await this.queue.add('refill', d, {
      deduplication: { id: refillJobId(d) },
      ...(d.urgent ? { priority: 1 } : { priority: 10 }),
    });
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
