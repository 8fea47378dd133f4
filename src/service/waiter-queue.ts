// The requests waiting at one coalescer, in arrival order, and the ordered batching of takes
// over them: how many IDs the next take asks for (the queue's need past what takes in flight
// asked for already), and how a take's runs are handed out (to the head of the queue first, a
// run split between two waiters where one is served). Every waiter is served only by takes
// Redis ran after it arrived, so a request that arrives after another's answer went out gets
// a higher ID.
import type { Range } from '../core/ranges.js';
import { IdmintError } from '../errors.js';

/** Where a waiter's answer goes: its runs once it holds all it asked for, or the error that failed it. */
export interface WaiterSink {
  served(runs: Range[]): void;
  failed(error: Error): void;
}

export interface Waiter {
  need: number;
  /** Fewest IDs this waiter accepts when the tag is exhausted (need, or 1 for block fetches). */
  readonly min: number;
  /** Arrival number: waiters are served in this order. */
  readonly arrived: number;
  /**
   * Arrivals counted when the take that first filled `got` was sent: who was already waiting
   * then (a waiter that arrived later may have started after a higher ID was answered).
   */
  gotAt?: number;
  readonly got: Range[];
  readonly deadline: number;
  readonly sink: WaiterSink;
}

/** IDs a waiter already holds. */
export function received(waiter: Waiter): number {
  let count = 0;
  for (const [first, last] of waiter.got) count += last - first + 1;
  return count;
}

export class WaiterQueue {
  /** The waiters, head first (arrival order). */
  readonly waiting: Waiter[] = [];
  /** Requests that arrived so far (the next one's arrival number). */
  arrivals = 0;

  get length(): number {
    return this.waiting.length;
  }

  /**
   * Queues a request for `count` IDs (with `upTo`: at least 1 when the tag is exhausted); refuses a count that is
   * not one.
   */
  push(count: number, upTo: boolean, waitMs: number, sink: WaiterSink): void {
    // A count that is not a whole number of IDs (Infinity, NaN, a fraction, past 2^53, below 1)
    // would make every take's batch wrong for the waiters behind it: refused here, whatever let
    // it through, and never queued.
    if (!Number.isSafeInteger(count) || count < 1) {
      sink.failed(
        new IdmintError('INVALID_ARGUMENT', `a take of ${count} IDs: a count is a whole number of at least 1`),
      );
      return;
    }
    this.waiting.push({
      need: count,
      min: upTo ? 1 : count,
      arrived: this.arrivals++,
      got: [],
      deadline: Date.now() + waitMs,
      sink,
    });
  }

  /**
   * IDs for the next take: the need of the queue past the first `skip` IDs (those asked for
   * by takes in flight), the first waiter's whole and further waiters while the sum fits cap.
   */
  batch(skip: number, cap: number): number {
    let want = 0;
    for (const waiter of this.waiting) {
      if (skip >= waiter.need) {
        skip -= waiter.need;
        continue;
      }
      const part = waiter.need - skip;
      skip = 0;
      if (want > 0 && want + part > cap) break;
      want += part;
    }
    return want;
  }

  /**
   * Gives runs to waiters in arrival order; a run may be split between two waiters. sentAt:
   * the arrivals counted when the take that returned them was sent. Answers how many waiters
   * it completed.
   */
  hand(ranges: Range[], sentAt: number): number {
    let served = 0;
    for (let [first, last] of ranges) {
      while (first <= last && this.waiting.length > 0) {
        const waiter = this.waiting[0];
        const given = Math.min(waiter.need, last - first + 1);
        if (waiter.got.length === 0) waiter.gotAt = sentAt;
        waiter.got.push([first, first + given - 1]);
        waiter.need -= given;
        first += given;
        if (waiter.need === 0) {
          this.waiting.shift();
          waiter.sink.served(waiter.got);
          served++;
        }
      }
      // Runs left over when every waiter is served cannot happen: take asked for their sum.
    }
    return served;
  }

  /** Rejects the waiters whose deadline has passed with the error `late` makes. */
  expire(late: () => Error): void {
    const now = Date.now();
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i];
      if (waiter.deadline <= now) {
        this.waiting.splice(i, 1);
        waiter.sink.failed(late());
      } else i++;
    }
  }

  /** Rejects every waiter with err. */
  rejectAll(err: Error): void {
    for (const waiter of this.waiting.splice(0)) waiter.sink.failed(err);
  }
}
