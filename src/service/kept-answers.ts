// The answers of idempotency keys this process kept or found, held to answer their replays from
// memory: a client's retry loop, or a queue that delivers a message again, then costs no Redis
// call. The record in Redis stays the truth; this is a copy with a shorter life:
//   - each is held until `until`, which the caller sets no later than the record's own expiry:
//     an answer this process kept was written with the tag's retention by a call sent at
//     `sentAt`, so its record lives at least until sentAt + retention (Redis counts from when it
//     ran the call, which is later); an answer found in Redis came with its record's PTTL at the
//     moment Redis read it, so the record lives at least until sentAt + PTTL;
//   - never more than IDEMPOTENCY_HOLD_MS (MOST_MS by default): a replay after that asks Redis again;
//   - at most MOST_IDS IDs are held in all; the oldest answers go first.
//   - only over the connection to Redis it was read from (its session,
//     store/redis/connection-sessions.ts): once that connection closed, the server may have lost
//     the record (a restart without persistence, a failover behind) and serve the key as new, so
//     every answer held from it is dropped.
// A held answer is thus the answer Redis would give for the key, unless Redis lost the record
// while this process's connection to it stayed open, which only a server gone without closing
// its connections allows (docs/GUARANTEES.md#idempotency-keys).

/** How long an answer is held at most by default, ms (IDEMPOTENCY_HOLD_MS). */
export const MOST_MS = 10_000;
/** How many IDs the held answers hold at most, in all. */
export const MOST_IDS = 65_536;

/** A held answer: the request's fingerprint, its IDs, and until when (on `now`'s clock) it may be given. */
export interface HeldAnswer {
  readonly fingerprint: string;
  readonly ids: readonly string[];
  readonly until: number;
  /** The session of the connection the answer came over. */
  readonly session: number;
}

export class KeptAnswers {
  private readonly answers = new Map<string, HeldAnswer>();
  private heldIds = 0;

  constructor(
    /** A clock that never goes back, ms (performance.now in the service). */
    readonly now: () => number = () => performance.now(),
    private readonly mostIds = MOST_IDS,
    /** How long an answer is held at most, ms (IDEMPOTENCY_HOLD_MS; 0: none is). */
    private readonly mostMs = MOST_MS,
  ) {}

  /**
   * Holds the answer of the key at `place` (its Redis, tag, epoch and key), read over the connection of `session`
   * (none: not held), until `until` at the latest, and no longer than mostMs from now.
   */
  hold(place: string, fingerprint: string, ids: readonly string[], until: number, session: number | undefined): void {
    this.drop(place);
    if (session === undefined || ids.length > this.mostIds || this.mostMs <= 0) return;
    const held = { fingerprint, ids: [...ids], until: Math.min(until, this.now() + this.mostMs), session };
    this.answers.set(place, held);
    this.heldIds += ids.length;
    for (const [oldest] of this.answers) {
      if (this.heldIds <= this.mostIds) break;
      this.drop(oldest);
    }
  }

  /** The answer held for the key at `place`, while it may still be given over the connection of `session`. */
  find(place: string, session: number | undefined): HeldAnswer | undefined {
    const held = this.answers.get(place);
    if (held === undefined) return undefined;
    if (held.until > this.now() && held.session === session) return held;
    this.drop(place);
    return undefined;
  }

  /** How many answers are held (for tests). */
  get size(): number {
    return this.answers.size;
  }

  private drop(place: string): void {
    const held = this.answers.get(place);
    if (held === undefined) return;
    this.answers.delete(place);
    this.heldIds -= held.ids.length;
  }
}
