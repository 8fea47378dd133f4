// `order: node`: a process keeps a block of IDs in memory and serves from it without a Redis
// round trip; it fetches the next block (through the coalescer) when a fifth is left. IDs
// increase per process; across processes only uniqueness holds.
import { RangeQueue, type Range } from '../core/ranges.js';
import { IdmintError } from '../errors.js';
import type { Coalescer } from './coalescer.js';

interface Waiter {
  readonly n: number;
  readonly resolve: (runs: Range[]) => void;
  readonly reject: (error: Error) => void;
}

export class NodeBuffer {
  private readonly ids = new RangeQueue();
  private readonly waiters: Waiter[] = [];
  private fetching = false;
  /** The last value handed out from this buffer (values only increase), undefined before the first. */
  private lastOut: number | undefined;

  constructor(
    private readonly source: Coalescer,
    private readonly blockSize: () => number,
  ) {}

  get buffered(): number {
    return this.ids.size;
  }

  /** The last value this process handed out from the buffer, undefined before the first. */
  get last(): number | undefined {
    return this.lastOut;
  }

  /** No request is waiting and no block is being fetched. */
  get idle(): boolean {
    return !this.fetching && this.waiters.length === 0;
  }

  /** `count` IDs at once from memory, or undefined when they are not all here (then use take). */
  takeNow(count: number): Range[] | undefined {
    if (this.waiters.length > 0 || this.ids.size < count) return undefined;
    const out = this.out(this.ids.take(count));
    this.topUp();
    return out;
  }

  /** One ID from memory, or undefined when none is at hand or requests wait (then use take). */
  takeOneNow(): number | undefined {
    if (this.waiters.length > 0) return undefined;
    const value = this.ids.takeOne();
    if (value === undefined) return undefined;
    this.lastOut = value;
    if (this.ids.size <= this.blockSize() / 5) this.topUp();
    return value;
  }

  take(count: number): Promise<Range[]> {
    if (this.waiters.length === 0 && this.ids.size >= count) {
      const out = this.out(this.ids.take(count));
      this.topUp();
      return Promise.resolve(out);
    }
    return new Promise((resolve, reject) => {
      this.waiters.push({ n: count, resolve, reject });
      this.topUp();
    });
  }

  private topUp(): void {
    if (this.fetching) return;
    const pending = this.waiters.reduce((s, w) => s + w.n, 0);
    const block = this.blockSize();
    if (pending === 0 && this.ids.size > block / 5) return;
    this.fetching = true;
    this.source
      // upTo: near an exhausted limit, take what is left rather than a whole block.
      .take(Math.max(block, pending - this.ids.size), true)
      .then((runs) => {
        for (const run of runs) this.ids.push(run);
        this.serve();
      })
      .catch((err: Error) => {
        // At an exhausted limit, what is buffered still serves every waiter it fits, in order.
        const exhausted = err instanceof IdmintError && err.code === 'ID_SPACE_EXHAUSTED';
        while (this.waiters.length > 0) {
          this.serve();
          const waiter = this.waiters.shift();
          if (!waiter) break;
          waiter.reject(err);
          if (!exhausted) for (const rest of this.waiters.splice(0)) rest.reject(err);
        }
      })
      .finally(() => {
        this.fetching = false;
        if (this.waiters.length > 0) this.topUp();
      });
  }

  private serve(): void {
    while (this.waiters.length > 0 && this.ids.size >= this.waiters[0].n) {
      const waiter = this.waiters.shift()!;
      waiter.resolve(this.out(this.ids.take(waiter.n)));
    }
  }

  /** Runs handed out: their last value is the last one handed out. */
  private out(runs: Range[]): Range[] {
    if (runs.length > 0) this.lastOut = runs[runs.length - 1][1];
    return runs;
  }
}
