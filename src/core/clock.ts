// Time for snowflake generation, injectable so tests can move it, and the clock policy:
// never issue at or before the last time used; wait out a small step back; refuse a large one.

export interface Clock {
  /** Wall-clock milliseconds since 1970. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests set and move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number) {}
  now(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** What the generator should do at this moment. */
export type Tick =
  | { readonly kind: 'issue'; readonly time: number; readonly seq: number }
  /** Wait until the clock reaches `time` (layout units), then ask again. */
  | { readonly kind: 'wait'; readonly time: number }
  /** The clock is behind the last issued time by more than the tolerated bound. */
  | { readonly kind: 'backwards'; readonly behindUnits: number };

export interface SequenceState {
  /** Last time (layout units) an ID was issued at, or the floor a new lease must stay above. */
  lastTime: number;
  /** Sequence last used at lastTime; -1 when none was used at lastTime yet. */
  lastSeq: number;
}

/**
 * Decides the next (time, seq) for `now` (layout units). Same tick: next sequence, or wait for
 * the next tick when the sequence is used up. Clock behind by at most `maxBackUnits`: wait.
 * Further behind: refuse. Pure; the caller applies an 'issue' with `commit`.
 */
export function nextTick(state: SequenceState, now: number, maxSeq: number, maxBackUnits: number): Tick {
  if (now > state.lastTime) return { kind: 'issue', time: now, seq: 0 };
  if (now === state.lastTime) {
    if (state.lastSeq < maxSeq) return { kind: 'issue', time: now, seq: state.lastSeq + 1 };
    return { kind: 'wait', time: now + 1 };
  }
  const behind = state.lastTime - now;
  if (behind <= maxBackUnits)
    return { kind: 'wait', time: state.lastSeq < maxSeq ? state.lastTime : state.lastTime + 1 };
  return { kind: 'backwards', behindUnits: behind };
}

export function commit(state: SequenceState, tick: Tick & { kind: 'issue' }): void {
  state.lastTime = tick.time;
  state.lastSeq = tick.seq;
}

/**
 * The system clock moved by an offset that can be changed while running (test mode's debug
 * switch): the snowflake generator, the lease manager and rule periods all read the same
 * shifted time, as they would on a machine whose clock was stepped.
 */
export class ShiftedClock implements Clock {
  private offset = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offset;
  }
  /** The current offset in ms (positive: ahead of the base clock). */
  get offsetMs(): number {
    return this.offset;
  }
  setOffset(ms: number): void {
    this.offset = ms;
  }
}
