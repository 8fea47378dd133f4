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
//
// The parts with a job of their own: the queue and the ordered batching of takes over it
// (waiter-queue.ts), the refills asked for (refill-requests.ts), and fitting requests into
// what an exhausted tag has left (exhausted-fit.ts). This file decides when takes are sent.
import type { Logger } from 'pino';
import { IdmintError, unavailable } from '../errors.js';
import type { Range } from '../core/ranges.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { SegmentRef, SegmentStore, TakeResult } from '../store/redis/segments.js';
import type { Metrics } from '../metrics/metrics.js';
import { fitExhausted } from './exhausted-fit.js';
import { RefillRequests } from './refill-requests.js';
import { MappedSink, type RunsMapper } from './mapped-sink.js';
import { WaiterQueue } from './waiter-queue.js';

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
    /** What retired the tag's state and did not finish (an import stopped midway), when known. */
    unfinished?: string,
  ) {
    super(
      'UNAVAILABLE',
      unfinished
        ? `tag "${tag}" is held by ${unfinished}`
        : moved
          ? `tag "${tag}" is moving to another Redis server; retry`
          : `tag "${tag}" changed; retry`,
    );
  }
}

export class Coalescer {
  private readonly queue = new WaiterQueue();
  private readonly refills: RefillRequests;
  /** The serial loop (run) is serving the queue. */
  private running = false;
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
  /**
   * The latest pipelined take served one request (false until one has been answered): the tag
   * is lightly loaded, and a request that waits alone is sent at once (pump).
   */
  private light = false;
  /** Takes this coalescer sent (idmint_takes_total of the tag). */
  private readonly takes: { value: number } | undefined;

  constructor(
    private readonly ref: SegmentRef,
    private readonly prefetch: () => number,
    private readonly deps: CoalescerDeps,
  ) {
    this.takes = deps.metrics?.takesSeries(ref.tag);
    this.refills = new RefillRequests(ref, deps.producer, deps.log, deps.metrics);
  }

  /** No request is waiting or being served. */
  get idle(): boolean {
    return !this.running && this.inFlight === 0 && this.queue.length === 0;
  }

  /** The measured round trip of a pipelined take, ms (0: none measured yet). */
  get roundTripMs(): number {
    return this.rttMs;
  }

  /** The next take is held back after a reply (linger), waiting for requests to come back. */
  get lingering(): boolean {
    return this.lingerTimer !== undefined;
  }

  /**
   * Resolves with exactly `count` IDs as ascending runs (with `upTo`: between 1 and `count` when the tag
   * is exhausted), or rejects with a coded error.
   */
  take(count: number, upTo = false): Promise<Range[]> {
    return new Promise((resolve, reject) => {
      this.queue.push(count, upTo, this.deps.waitMs, { served: resolve, failed: reject });
      this.pump();
    });
  }

  /**
   * take(count) as one promise of what `mapper` makes of the runs, or of a failure (a value, a
   * promise, or a throw): no promise between the take and its caller, and no function made per
   * request (a single ID's request path).
   */
  takeMapped<T>(count: number, mapper: RunsMapper<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push(count, false, this.deps.waitMs, new MappedSink(mapper, resolve, reject));
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
    // A lone waiter a take in flight asked for already: nothing to send, no turn to wait.
    if (this.covered > 0 && this.queue.length === 1) return;
    if (this.inFlight > 0 && this.holding()) return;
    if (this.light && this.inFlight === 0 && this.queue.length === 1) {
      // Light load: the latest take served one request, nothing is in flight, and this request
      // waits alone. Waiting a turn for company would cost it a wake-up for nothing, so its
      // take goes out in this turn; requests that still arrive in it are held for its reply or
      // pipelined as usual (holding, below), and the next take batches them again.
      this.send();
      return;
    }
    this.scheduled = true;
    // Let the requests that arrived in this event-loop turn join the take: a round trip to
    // Redis costs the process far more CPU than a turn, so a take shared by more requests is
    // cheaper per request (bench:scale reports requests per take). Order holds: every request
    // in a take arrived before it was sent.
    const seen = this.queue.arrivals;
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
    const holdRtt = this.deps.holdRtt ?? 0;
    if (holdRtt <= 0 || this.rttMs === 0 || this.queue.length >= (this.deps.hold ?? 0)) return false;
    return performance.now() - this.lastSentMs < holdRtt * this.rttMs;
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
    if (seen !== undefined && this.queue.arrivals !== seen && this.queue.length < (this.deps.hold ?? 0)) {
      setImmediate(() => this.due());
      return;
    }
    this.scheduled = false;
    this.send();
  }

  /** Sends one pipelined take for the waiters no take in flight asked for yet. */
  private send(): void {
    if (this.running || this.serialNext) return this.pump();
    const want = this.queue.batch(this.covered, this.deps.maxBatch);
    if (want === 0) return;
    const generation = this.generation;
    const sentAt = this.queue.arrivals;
    this.inFlight++;
    this.covered += want;
    if (this.takes) this.takes.value++;
    const sentMs = (this.lastSentMs = performance.now());
    this.deps.segments.take(this.ref, want, this.prefetch()).then(
      (reply) => {
        const rtt = performance.now() - sentMs;
        this.rttMs = this.rttMs === 0 ? rtt : this.rttMs + (rtt - this.rttMs) / 8;
        this.pipelined(generation, want, sentAt, reply, undefined);
      },
      (err: Error) => this.pipelined(generation, want, sentAt, undefined, err),
    );
    this.pump();
  }

  /** The reply of a pipelined take (replies come back in the order Redis ran the takes). */
  private pipelined(
    generation: number,
    want: number,
    sentAt: number,
    reply: TakeResult | undefined,
    err: Error | undefined,
  ): void {
    this.inFlight--;
    if (generation === this.generation) {
      this.covered -= want;
      if (err) {
        this.failAll(unavailable(`Redis is unreachable: ${err.message}`, err));
      } else if (reply!.status === 'ok') {
        const served = this.queue.hand(reply!.ranges, sentAt);
        this.light = served <= 1;
        if (reply!.refillWanted) this.refills.prefetch(reply!);
        this.linger(served);
      } else {
        // Whatever was given (a dry take gives part) goes out; the serial loop deals with the rest.
        this.queue.hand(reply!.ranges, sentAt);
        this.serialNext = true;
      }
    }
    this.pump();
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
          fitExhausted(this.queue, left, this.ref.tag);
          if (this.queue.length === 0) break;
        }
        const want = this.queue.batch(0, Math.min(this.deps.maxBatch, left ?? Number.POSITIVE_INFINITY));
        let reply: TakeResult;
        const sentAt = this.queue.arrivals;
        if (this.takes) this.takes.value++;
        try {
          reply = await this.deps.segments.take(this.ref, want, this.prefetch());
        } catch (err) {
          this.failAll(unavailable(`Redis is unreachable: ${(err as Error).message}`, err));
          break;
        }
        if (reply.status === 'moved') {
          this.failAll(new TagMovedError(this.ref.tag));
          break;
        }
        this.queue.hand(reply.ranges, sentAt);
        if (reply.refillWanted && reply.status === 'ok') this.refills.prefetch(reply);
        else if (reply.refillWanted) {
          try {
            await this.refills.urgent(reply);
          } catch (err) {
            this.failAll(unavailable(`refill could not be queued: ${(err as Error).message}`, err));
            break;
          }
        }
        if (reply.status === 'exhausted') {
          // Nothing was given: serve again at once, fitted into what is left.
          left = reply.avail ?? 0;
          pause = 0;
          continue;
        }
        left = undefined;
        pause = reply.status === 'ok' ? 0 : Math.min(50, Math.max(2, pause * 2));
      }
    } finally {
      this.running = false;
      // The queue is empty or every waiter failed: the next request starts pipelined again.
      this.serialNext = false;
      this.pump();
    }
  }

  private expire(): void {
    this.queue.expire(() =>
      unavailable(`no segment for tag "${this.ref.tag}" arrived within ${this.deps.waitMs} ms (is MySQL reachable?)`),
    );
  }

  private failAll(err: Error): void {
    this.generation++;
    this.covered = 0;
    this.queue.rejectAll(err);
  }
}
