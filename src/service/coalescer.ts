// The request path of one (tag, epoch, shard): concurrent requests of this process are
// served by one Redis `take` at a time, in arrival order. A request that arrives after
// another's answer went out is in a later take, so IDs follow real time across processes.
// When the tag is cold or dry it asks for an urgent refill and polls until its deadline.
import type { Logger } from 'pino';
import { IdmintError, unavailable } from '../errors.js';
import type { Range } from '../core/ranges.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { SegmentRef, SegmentStore, TakeResult } from '../store/redis/segments.js';

interface Waiter {
  need: number;
  readonly got: Range[];
  readonly deadline: number;
  readonly resolve: (r: Range[]) => void;
  readonly reject: (e: Error) => void;
}

export interface CoalescerDeps {
  readonly segments: SegmentStore;
  readonly producer: RefillProducer;
  readonly log: Logger;
  readonly maxBatch: number;
  readonly waitMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Coalescer {
  private readonly queue: Waiter[] = [];
  private running = false;

  constructor(
    private readonly ref: SegmentRef,
    private readonly prefetch: () => number,
    private readonly deps: CoalescerDeps,
  ) {}

  /** No request is waiting or being served. */
  get idle(): boolean {
    return !this.running && this.queue.length === 0;
  }

  /** Resolves with exactly n IDs as ascending runs, or rejects with a coded error. */
  take(n: number): Promise<Range[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ need: n, got: [], deadline: Date.now() + this.deps.waitMs, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    let pause = 0;
    try {
      while (this.queue.length > 0) {
        if (pause > 0) {
          await sleep(pause);
          this.expire();
          if (this.queue.length === 0) break;
        }
        let want = 0;
        let i = 0;
        while (i < this.queue.length && (i === 0 || want + this.queue[i].need <= this.deps.maxBatch)) want += this.queue[i++].need;
        let r: TakeResult;
        try {
          r = await this.deps.segments.take(this.ref, want, this.prefetch());
        } catch (err) {
          this.failAll(unavailable(`Redis is unreachable: ${(err as Error).message}`, err));
          break;
        }
        this.hand(r.ranges);
        if (r.refillWanted) {
          const urgent = r.status !== 'ok';
          const ask = this.deps.producer.request({ ...this.ref, gen: r.gen, seg: r.seg, urgent });
          if (urgent) {
            try {
              await ask;
            } catch (err) {
              this.failAll(unavailable(`refill could not be queued: ${(err as Error).message}`, err));
              break;
            }
          } else {
            ask.catch((err: Error) => this.deps.log.warn({ tag: this.ref.tag, err: err.message }, 'prefetch refill could not be queued'));
          }
        }
        if (r.status === 'exhausted') {
          this.failAll(new IdmintError('ID_SPACE_EXHAUSTED', `tag "${this.ref.tag}" reached its max_id_limit`));
          break;
        }
        pause = r.status === 'ok' ? 0 : Math.min(50, Math.max(2, pause * 2));
      }
    } finally {
      this.running = false;
      if (this.queue.length > 0) void this.run();
    }
  }

  /** Gives runs to waiters in arrival order; a run may be split between two waiters. */
  private hand(ranges: Range[]): void {
    for (let [a, b] of ranges) {
      while (a <= b && this.queue.length > 0) {
        const w = this.queue[0];
        const k = Math.min(w.need, b - a + 1);
        w.got.push([a, a + k - 1]);
        w.need -= k;
        a += k;
        if (w.need === 0) {
          this.queue.shift();
          w.resolve(w.got);
        }
      }
      // Runs left over when every waiter is served cannot happen: take asked for their sum.
    }
  }

  private expire(): void {
    const now = Date.now();
    for (let i = 0; i < this.queue.length; ) {
      const w = this.queue[i];
      if (w.deadline <= now) {
        this.queue.splice(i, 1);
        w.reject(unavailable(`no segment for tag "${this.ref.tag}" arrived within ${this.deps.waitMs} ms (is MySQL reachable?)`));
      } else i++;
    }
  }

  private failAll(err: Error): void {
    for (const w of this.queue.splice(0)) w.reject(err);
  }
}
