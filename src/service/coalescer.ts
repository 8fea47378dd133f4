// The request path of one (tag, epoch, shard): concurrent requests of this process are
// coalesced into Redis `take` calls and served in arrival order.
//
// While the tag answers normally, up to `pipeline` takes are in flight at once on the tag's
// connection (pipelined: a request does not wait for an earlier take's reply before its own
// is sent). Each take asks only for IDs of waiters already queued, and replies, which come
// back in the order Redis ran the takes, hand their IDs to the head of the queue, so every
// waiter is served only by takes Redis ran after it arrived: a request that arrives after
// another's answer went out gets a higher ID, across processes too (Redis runs one take at a
// time). Replies of takes sent before every waiter was failed are discarded.
//
// Any other answer (cold, dry, exhausted, replaced, moved, an error) stops new takes; once the
// ones in flight are back, a serial loop (one take at a time) takes over until the queue is
// empty: when the tag is cold or dry it asks for an urgent refill and polls until its
// deadline; when the tag is exhausted, the IDs left are given to the waiters that fit in them,
// in order, and a waiter is never left holding part of what it asked for.
import type { Logger } from 'pino';
import { IdmintError, unavailable } from '../errors.js';
import type { Range } from '../core/ranges.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { SegmentRef, SegmentStore, TakeResult } from '../store/redis/segments.js';
import type { Metrics } from '../metrics/metrics.js';

interface Waiter {
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
  readonly resolve: (r: Range[]) => void;
  readonly reject: (e: Error) => void;
}

export interface CoalescerDeps {
  readonly segments: SegmentStore;
  readonly producer: RefillProducer;
  readonly log: Logger;
  readonly maxBatch: number;
  readonly waitMs: number;
  /** Most takes in flight at once while the tag answers normally (1: one at a time). */
  readonly pipeline?: number;
  /**
   * A take scheduled in a turn of the event loop in which further requests arrived waits one
   * more turn, unless this many requests are waiting already (0 or absent: it never waits).
   */
  readonly hold?: number;
  /**
   * While a pipelined take of the tag is in flight, a further take is held (not sent) until
   * that take's reply is back, for at most this many of the tag's measured round trips and
   * while fewer than `hold` requests wait (0 or absent: never held this way).
   */
  readonly holdRtt?: number;
  /**
   * Once a pipelined take that served more than one request is answered, the next take waits
   * until as many requests wait as were in play then (those it served and those already
   * waiting), for at most this many ms and one of the tag's measured round trips; never when
   * that round trip is under 1 ms, nor while `hold` requests wait (0 or absent: never).
   */
  readonly lingerMs?: number;
  readonly metrics?: Metrics;
  /** True when a new definition of the tag was announced (checked while waiting for a refill). */
  readonly changed?: (tag: string, epoch: number) => boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The tag changed under this source: it moved to another Redis server (its state here is
 * retired: `moved`), or a new definition was announced while requests waited for a refill
 * (deleted, re-created, changed). The dispenser reads the definition again and continues
 * under it; a client only sees this error (a 503) when a move is not recorded in time.
 */
export class TagMovedError extends IdmintError {
  constructor(
    readonly tag: string,
    readonly moved = true,
  ) {
    super('UNAVAILABLE', moved ? `tag "${tag}" is moving to another Redis server; retry` : `tag "${tag}" changed; retry`);
  }
}

export class Coalescer {
  private readonly queue: Waiter[] = [];
  /** The serial loop (run) is serving the queue. */
  private running = false;
  private arrivals = 0;
  /** Pipelined takes in flight, and the IDs they asked for (of the queue's head). */
  private inFlight = 0;
  private covered = 0;
  /** A pipelined take is due at the next turn of the event loop (or the one after: due). */
  private scheduled = false;
  /** A pipelined take had an answer other than "ok": the serial loop serves next. */
  private serialNext = false;
  /** Bumped whenever every waiter is failed: replies of takes sent before are discarded. */
  private generation = 0;
  /** When the latest pipelined take was sent (performance.now(), ms). */
  private lastSentMs = 0;
  /** Round trip of a pipelined take, ms: a moving average of the replies seen (0: none yet). */
  private rttMs = 0;
  /** Lingering after a reply (see linger()): the timer that ends it, and the requests it waits for. */
  private lingerTimer: NodeJS.Timeout | undefined;
  private lingerFor = 0;
  /** Takes this coalescer sent (idmint_takes_total of the tag). */
  private readonly takes: { value: number } | undefined;

  constructor(
    private readonly ref: SegmentRef,
    private readonly prefetch: () => number,
    private readonly deps: CoalescerDeps,
  ) {
    this.takes = deps.metrics?.takesSeries(ref.tag);
  }

  /** No request is waiting or being served. */
  get idle(): boolean {
    return !this.running && this.inFlight === 0 && this.queue.length === 0;
  }

  /** The next take is held back after a reply (linger), waiting for requests to come back. */
  get lingering(): boolean {
    return this.lingerTimer !== undefined;
  }

  /**
   * Resolves with exactly n IDs as ascending runs (with `upTo`: between 1 and n when the tag
   * is exhausted), or rejects with a coded error.
   */
  take(n: number, upTo = false): Promise<Range[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ need: n, min: upTo ? 1 : n, arrived: this.arrivals++, got: [], deadline: Date.now() + this.deps.waitMs, resolve, reject });
      this.pump();
    });
  }

  /** Starts whatever serves the queue next: a pipelined take, or the serial loop. */
  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    if (this.lingerTimer) {
      if (this.queue.length < this.lingerFor && this.queue.length < (this.deps.hold ?? 0)) return;
      this.endLinger();
    }
    if (this.serialNext) {
      if (this.inFlight === 0) void this.run();
      return;
    }
    if (this.scheduled || this.inFlight >= (this.deps.pipeline ?? 1)) return;
    if (this.inFlight > 0 && this.holding()) return;
    this.scheduled = true;
    // Let the requests that arrived in this event-loop turn join the take: a round trip to
    // Redis costs the process far more CPU than a turn, so a take shared by more requests is
    // cheaper per request (bench:scale reports requests per take). Order holds: every request
    // in a take arrived before it was sent.
    const seen = this.arrivals;
    setImmediate(() => this.due(seen));
  }

  /**
   * A take is in flight: hold the next one until its reply is back (pipelined() pumps again),
   * so the waiters that arrive meanwhile share one take instead of each turn sending its own.
   * Replies on the tag's connection come back in the order the takes were sent, so a held
   * request waits at most one round trip longer than it would have: and not even that when
   * the reply is late (older than holdRtt round trips), or when `hold` requests are waiting
   * already. Order holds: holding only delays sending.
   */
  private holding(): boolean {
    const k = this.deps.holdRtt ?? 0;
    if (k <= 0 || this.rttMs === 0 || this.queue.length >= (this.deps.hold ?? 0)) return false;
    return performance.now() - this.lastSentMs < k * this.rttMs;
  }

  /**
   * A take that served `served` requests was just answered and none is in flight: under load
   * those requesters come back (their clients send the next request) about one round trip
   * later, while the requests that arrived meanwhile form a smaller group. Sent at once, the
   * next take would serve that group alone, and the two groups would go on alternating, each
   * costing its process a take (a write, a wake-up, a reply to read). So the next take waits
   * until as many requests wait as were in play at the reply (those it served and those
   * already waiting), or lingerMs, or one measured round trip, whichever comes first: the
   * groups merge, and a process under load sends about half as many takes (bench:scale, "req
   * per take"). A round trip under 1 ms means the process has CPU to spare (and a timer cannot
   * wait less): then it never waits. Order holds: waiting only delays sending; every request
   * is still served by a take sent after it arrived.
   */
  private linger(served: number): void {
    const ms = Math.min(this.deps.lingerMs ?? 0, this.rttMs);
    if (ms < 1 || served < 2 || this.inFlight > 0 || this.scheduled || this.lingerTimer) return;
    this.lingerFor = served + this.queue.length;
    this.lingerTimer = setTimeout(() => {
      this.endLinger();
      this.pump();
    }, ms);
  }

  /** Stops lingering; the caller pumps (pump itself, or the timer). */
  private endLinger(): void {
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    this.lingerFor = 0;
  }

  /**
   * The turn after a take was scheduled (seen: the arrivals counted then). When more requests
   * arrived meanwhile, the tag is busy and more are coming: the take waits one more turn, once,
   * unless `hold` requests are waiting already. A take costs the process and Redis a round
   * trip, the turn only its own work, so the takes get larger and the CPU per request smaller
   * under load. A lone request is never held.
   */
  private due(seen?: number): void {
    if (seen !== undefined && this.arrivals !== seen && this.queue.length < (this.deps.hold ?? 0)) {
      setImmediate(() => this.due());
      return;
    }
    this.scheduled = false;
    this.send();
  }

  /** Sends one pipelined take for the waiters no take in flight asked for yet. */
  private send(): void {
    if (this.running || this.serialNext) return this.pump();
    const want = this.batch(this.covered, this.deps.maxBatch);
    if (want === 0) return;
    const generation = this.generation;
    const sentAt = this.arrivals;
    this.inFlight++;
    this.covered += want;
    if (this.takes) this.takes.value++;
    const sentMs = (this.lastSentMs = performance.now());
    this.deps.segments.take(this.ref, want, this.prefetch()).then(
      (r) => {
        const rtt = performance.now() - sentMs;
        this.rttMs = this.rttMs === 0 ? rtt : this.rttMs + (rtt - this.rttMs) / 8;
        this.pipelined(generation, want, sentAt, r, undefined);
      },
      (err: Error) => this.pipelined(generation, want, sentAt, undefined, err),
    );
    this.pump();
  }

  /** The reply of a pipelined take (replies come back in the order Redis ran the takes). */
  private pipelined(generation: number, want: number, sentAt: number, r: TakeResult | undefined, err: Error | undefined): void {
    this.inFlight--;
    if (generation === this.generation) {
      this.covered -= want;
      if (err) {
        this.failAll(unavailable(`Redis is unreachable: ${err.message}`, err));
      } else if (r!.status === 'ok') {
        const served = this.hand(r!.ranges, sentAt);
        if (r!.refillWanted) this.prefetchRefill(r!);
        this.linger(served);
      } else {
        // Whatever was given (a dry take gives part) goes out; the serial loop deals with the rest.
        this.hand(r!.ranges, sentAt);
        this.serialNext = true;
      }
    }
    this.pump();
  }

  /**
   * IDs for the next take: the need of the queue past the first `skip` IDs (those asked for
   * by takes in flight), the first waiter's whole and further waiters while the sum fits cap.
   */
  private batch(skip: number, cap: number): number {
    let want = 0;
    for (const w of this.queue) {
      if (skip >= w.need) {
        skip -= w.need;
        continue;
      }
      const part = w.need - skip;
      skip = 0;
      if (want > 0 && want + part > cap) break;
      want += part;
    }
    return want;
  }

  private prefetchRefill(r: TakeResult): void {
    this.deps.producer
      .request({ ...this.ref, gen: r.gen, seg: r.seg, urgent: false })
      .catch((err: Error) => this.deps.log.warn({ tag: this.ref.tag, err: err.message }, 'prefetch refill could not be queued'));
  }

  /** Fits the waiters at the head of the queue into the IDs an exhausted tag has left. */
  private fitExhausted(left: number): void {
    while (this.queue.length > 0 && this.queue[0].min - this.received(this.queue[0]) > left) {
      const w = this.queue.shift()!;
      w.reject(new IdmintError('ID_SPACE_EXHAUSTED', `tag "${this.ref.tag}" reached its limit${left > 0 ? ` (${left} IDs left, fewer than asked)` : ''}`));
      this.passOn(w);
    }
    if (this.queue.length > 0 && this.queue[0].need > left) {
      const w = this.queue[0];
      w.need = left;
      if (w.need === 0) {
        this.queue.shift();
        w.resolve(w.got);
      }
    }
  }

  private received(w: Waiter): number {
    let n = 0;
    for (const [a, b] of w.got) n += b - a + 1;
    return n;
  }

  /**
   * A refused waiter already held part of its IDs (taken before the limit was known): they go
   * to the waiters that were already waiting when those IDs were taken and that they fit
   * whole, in order. A waiter that arrived later could have started after a higher ID was
   * answered elsewhere, so it never gets them. What nobody can use is a gap.
   */
  private passOn(from: Waiter): void {
    if (from.got.length === 0 || from.gotAt === undefined) return;
    const spare = [...from.got];
    let count = this.received(from);
    for (let i = 0; i < this.queue.length && count > 0; ) {
      const w = this.queue[i];
      if (w.arrived >= from.gotAt || w.got.length > 0 || w.need > count) {
        i++;
        continue;
      }
      let need = w.need;
      while (need > 0) {
        const [a, b] = spare[0];
        const k = Math.min(need, b - a + 1);
        if (w.got.length === 0) w.gotAt = from.gotAt;
        w.got.push([a, a + k - 1]);
        if (a + k - 1 === b) spare.shift();
        else spare[0] = [a + k, b];
        need -= k;
      }
      count -= w.need;
      w.need = 0;
      this.queue.splice(i, 1);
      w.resolve(w.got);
    }
  }

  private async run(): Promise<void> {
    this.running = true;
    let pause = 0;
    // IDs Redis still held when it last answered "exhausted" during this run; a later run asks
    // again (the limit may have been raised meanwhile).
    let left: number | undefined;
    try {
      while (this.queue.length > 0) {
        // As in pump: requests of this event-loop turn join the take.
        await new Promise((r) => setImmediate(r));
        if (pause > 0) {
          await sleep(pause);
          this.expire();
          if (this.queue.length === 0) break;
          // Waiting for a refill that may never come (the tag was deleted or re-created):
          // let the dispenser read the definition again rather than wait out the deadline.
          if (this.deps.changed?.(this.ref.tag, this.ref.epoch)) {
            this.failAll(new TagMovedError(this.ref.tag, false));
            break;
          }
        }
        if (left !== undefined) {
          this.fitExhausted(left);
          if (this.queue.length === 0) break;
        }
        const want = this.batch(0, Math.min(this.deps.maxBatch, left ?? Number.POSITIVE_INFINITY));
        let r: TakeResult;
        const sentAt = this.arrivals;
        if (this.takes) this.takes.value++;
        try {
          r = await this.deps.segments.take(this.ref, want, this.prefetch());
        } catch (err) {
          this.failAll(unavailable(`Redis is unreachable: ${(err as Error).message}`, err));
          break;
        }
        if (r.status === 'moved') {
          this.failAll(new TagMovedError(this.ref.tag));
          break;
        }
        this.hand(r.ranges, sentAt);
        if (r.refillWanted && r.status === 'ok') this.prefetchRefill(r);
        else if (r.refillWanted) {
          this.deps.metrics?.refillWaits.inc({ tag: this.ref.tag });
          try {
            await this.deps.producer.request({ ...this.ref, gen: r.gen, seg: r.seg, urgent: true });
          } catch (err) {
            this.failAll(unavailable(`refill could not be queued: ${(err as Error).message}`, err));
            break;
          }
        }
        if (r.status === 'exhausted') {
          // Nothing was given: serve again at once, fitted into what is left.
          left = r.avail ?? 0;
          pause = 0;
          continue;
        }
        left = undefined;
        pause = r.status === 'ok' ? 0 : Math.min(50, Math.max(2, pause * 2));
      }
    } finally {
      this.running = false;
      // The queue is empty or every waiter failed: the next request starts pipelined again.
      this.serialNext = false;
      this.pump();
    }
  }

  /**
   * Gives runs to waiters in arrival order; a run may be split between two waiters. sentAt:
   * the arrivals counted when the take that returned them was sent. Answers how many waiters
   * it completed.
   */
  private hand(ranges: Range[], sentAt: number): number {
    let served = 0;
    for (let [a, b] of ranges) {
      while (a <= b && this.queue.length > 0) {
        const w = this.queue[0];
        const k = Math.min(w.need, b - a + 1);
        if (w.got.length === 0) w.gotAt = sentAt;
        w.got.push([a, a + k - 1]);
        w.need -= k;
        a += k;
        if (w.need === 0) {
          this.queue.shift();
          w.resolve(w.got);
          served++;
        }
      }
      // Runs left over when every waiter is served cannot happen: take asked for their sum.
    }
    return served;
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
    this.generation++;
    this.covered = 0;
    for (const w of this.queue.splice(0)) w.reject(err);
  }
}
