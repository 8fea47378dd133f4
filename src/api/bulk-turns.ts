// Turns of the event loop for the work of bulk takes (websocket stream and gRPC Take), shared by
// every take of the process. Encoding a block's IDs is the costly part of a take, and a block
// may hold as many IDs as its consumer asked for (up to STREAM_MAX_BLOCK); done in one go it
// would hold every other request of the process (single IDs over HTTP and UDP, gRPC Next,
// Redis replies) for as long. So a take encodes a block a slice at a time (bulk-slices.ts:
// at most SLICE_IDS IDs, SLICE_STRING_IDS of IDs held as strings, a quarter of those while
// single requests are served) and asks for a turn before
// each slice: the takes that asked are served in order of asking, SLICES_PER_TURN slices per
// turn of the event loop across all takes, and the I/O that came meanwhile is served between
// turns (setImmediate runs after the loop's poll phase). With nothing else to do the loop turns
// at once, so a lone take loses little.
//
// Turns alone still give bulk work most of the process beside single requests: each of their
// turns is a slice, each single request a few microseconds, and the collections of garbage the
// slices make land on the singles too. So the takes' work is charged to windows of WINDOW_MS
// (the slices' encoding and the frames' writes, charge()), and while the process is also asked
// for single IDs or lists (IdService counts them), a take whose window already spent the
// share of it that BULK_SHARE_PERCENT gives to bulk work waits for the next window. With no
// single request in this window or the last, bulk takes run unbounded.
//
// A message written costs the process more than the call that writes it: HTTP/2 frames and
// sends a gRPC message in a later callback of the loop, the store's replies to a take's chunks
// are read in callbacks of their own, and their garbage is collected later. No timer around the
// call sees that work, so each message (sent()) is also charged what a message has cost beyond
// its timed work, an estimate kept from the windows where bulk takes ran alone: the event loop's
// busy time in such a window less the work timed in it, per message written. Until such a window
// was seen the estimate is DEFAULT_MESSAGE_COST_MS.
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import { DEFAULT_BULK_SHARE_PERCENT } from '../config.js';
import { singlesAskedSoFar } from '../service/id-service.js';

/** Slices encoded per turn of the event loop, across all takes. */
export const SLICES_PER_TURN = 1;
/** The windows bulk work is charged to, ms. */
export const WINDOW_MS = 5;
/** Default share of a window bulk work may take while single requests are served (BULK_SHARE_PERCENT / 100). */
export const DEFAULT_SHARE = DEFAULT_BULK_SHARE_PERCENT / 100;
/** What a message costs beyond its timed work until the process measured it, ms. */
export const DEFAULT_MESSAGE_COST_MS = 0.1;
/** Weight of each new measure of a message's cost in the estimate (an exponential average). */
const MESSAGE_COST_WEIGHT = 0.2;

/** What the turns read and schedule with (real ones by default; tests give their own). */
export interface TurnClock {
  /** A clock that never goes back, ms. */
  now(): number;
  /** How many single requests the process was asked so far. */
  singles(): number;
  /** Runs `turn` after the loop's poll phase. */
  immediate(turn: () => void): void;
  /** Runs `turn` in `ms`. */
  later(turn: () => void, ms: number): void;
  /** How long the event loop was busy so far (not waiting for I/O), ms. */
  busy(): number;
}

const REAL_CLOCK: TurnClock = {
  now: () => performance.now(),
  singles: singlesAskedSoFar,
  immediate: (turn) => setImmediate(turn),
  later: (turn, ms) => setTimeout(turn, ms),
  busy: () => performance.eventLoopUtilization().active,
};

export class BulkTurns {
  private queue: (() => void)[] = [];
  private scheduled = false;
  private windowStart = Number.NEGATIVE_INFINITY;
  /** Bulk work charged to the current window, ms. */
  private spentMs = 0;
  /** Single requests asked when the current window began, and whether the last window had any. */
  private singlesAtStart = 0;
  private singlesBefore = false;
  /** Turns put off to the next window so far (read by tests). */
  deferred = 0;
  /** What a message written costs beyond its timed work, ms (an estimate: see above). */
  messageCostMs = DEFAULT_MESSAGE_COST_MS;
  /** The loop's busy time when the current window began, and the messages written in it. */
  private busyAtStart = 0;
  private messages = 0;
  /**
   * The single-request count at the last look (servingSingles()), and when it last moved: none
   * before the first look, so that look finds it moved if any single ever came.
   */
  private seenSingles = 0;
  private singlesMovedAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** Of each window, what bulk work may take while single requests are served (0 to 1; 1: all). */
    private share = DEFAULT_SHARE,
    private readonly clock: TurnClock = REAL_CLOCK,
    private readonly perTurn = SLICES_PER_TURN,
  ) {}

  /** Sets the share of each window bulk work may take beside single requests (BULK_SHARE_PERCENT / 100). */
  setShare(share: number): void {
    this.share = share;
  }

  /** Resolves when it is this caller's turn to encode a slice or write a frame. */
  next(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.queue.push(resolve);
      this.schedule();
    });
  }

  /**
   * Whether single requests are being served: some came since the last look or within the last
   * two windows (the first look counts any that ever came). Large writes are cut into pieces
   * only then; a take alone writes its blocks whole.
   */
  servingSingles(): boolean {
    const singles = this.clock.singles();
    const now = this.clock.now();
    if (singles !== this.seenSingles) {
      this.seenSingles = singles;
      this.singlesMovedAt = now;
    }
    return now - this.singlesMovedAt < 2 * WINDOW_MS;
  }

  /** Charges `ms` of bulk work (a slice encoded, a frame written) to the current window. */
  charge(ms: number): void {
    this.roll(this.clock.now());
    this.spentMs += ms;
  }

  /**
   * A message of a take was written: counted for the estimate of a message's cost and, while
   * single requests are served, charged that estimate on top of its timed work.
   */
  sent(): void {
    this.roll(this.clock.now());
    this.messages++;
    if (this.sharing(this.clock.singles())) this.spentMs += this.messageCostMs;
  }

  /** Whether the current window is shared with single requests: some came in it or in the last. */
  private sharing(singles: number): boolean {
    return this.singlesBefore || singles !== this.singlesAtStart;
  }

  /** Runs `work` as bulk work charged to the current window (bound: it may be passed on as it is). */
  readonly timed = <T>(work: () => T): T => {
    const start = this.clock.now();
    try {
      return work();
    } finally {
      this.charge(this.clock.now() - start);
    }
  };

  /**
   * Begins a new window if the current one's time is up. Called wherever time is read: when a
   * turn is asked for, when one begins and when work is charged. A turn put off to the window's
   * end (`ending`) begins the next window, at that end, when it comes, even if its timer fired a
   * little before the end by this clock: its work is charged to the window it runs in, never to
   * the one that put it off, which is over.
   */
  private roll(now: number, ending = false): void {
    if (!ending && now - this.windowStart < WINDOW_MS) return;
    const singles = this.clock.singles();
    this.measureMessages(now, singles);
    this.singlesBefore = singles !== this.singlesAtStart && now - this.windowStart < 2 * WINDOW_MS;
    const end = this.windowStart + WINDOW_MS;
    this.windowStart = ending && now < end + WINDOW_MS ? end : now;
    this.spentMs = 0;
    this.singlesAtStart = singles;
  }

  /**
   * At the end of a window: if bulk takes ran alone in it (no single request, and it lasted
   * less than two windows, so nothing but them kept the loop busy), what its messages cost
   * beyond the work timed in it goes into the estimate.
   */
  private measureMessages(now: number, singles: number): void {
    const busy = this.clock.busy();
    const alone = singles === this.singlesAtStart && !this.singlesBefore && now - this.windowStart < 2 * WINDOW_MS;
    if (alone && this.messages > 0) {
      const cost = Math.max(0, busy - this.busyAtStart - this.spentMs) / this.messages;
      this.messageCostMs += (cost - this.messageCostMs) * MESSAGE_COST_WEIGHT;
    }
    this.busyAtStart = busy;
    this.messages = 0;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const now = this.clock.now();
    this.roll(now);
    if (this.sharing(this.clock.singles()) && this.share < 1 && this.spentMs >= this.share * WINDOW_MS) {
      this.deferred++;
      this.clock.later(this.putOffTurn, this.windowStart + WINDOW_MS - now);
    } else this.clock.immediate(this.turn);
  }

  private readonly putOffTurn = (): void => {
    this.roll(this.clock.now(), true);
    this.turn();
  };

  private readonly turn = (): void => {
    this.roll(this.clock.now());
    this.scheduled = false;
    const ready = this.queue.splice(0, this.perTurn);
    if (this.queue.length > 0) this.schedule();
    for (const resolve of ready) resolve();
  };
}

/** The turns of this process: the websocket stream's takes and gRPC Take calls share them. */
export const processTurns = new BulkTurns();
