// Idempotency keys: the first request carrying key K for tag T takes IDs as usual, and every
// later request with (T, K) within the tag's retention gets exactly the IDs the first answer
// held, from any process and across restarts of idmint, because the answer is kept in the tag's
// Redis. A retry takes nothing: the key is looked up before anything is taken.
//
//   1. one script call (idem-claim-3.lua) gives the key's kept answer, or claims the key for
//      this request: a replay costs that one Redis round trip in all (none in the process that
//      kept the answer, below), and a request of another fingerprint under the key is refused
//      having taken nothing;
//   2. only the request holding the claim takes its IDs;
//   3. one script call (idem-record-3.lua) turns the claim into the key's answer, and only then
//      are the IDs answered. A take that fails releases the claim (idem-release-3.lua): the
//      retry is served as a first request.
//
// A request whose IDs are taken from Redis anyway (a plain segment tag of order global: its
// source gives a TakeInKey) does all three in one call (idem-takes-4.lua, shared by the keyed
// requests of one event-loop turn: keyed-takes.ts) while its counter is in its steady state:
// the key is looked up, and if it is new its IDs are taken and kept as its answer at once. A
// new key then costs no Redis call more than the request without it; where a segment ends,
// the call claims and the three steps follow.
//
// The answers this process kept or found are held in memory for a while (kept-answers.ts): a
// replay of one of them is answered with no Redis call at all, never after its record expired.
//
// Requests under one key that run at once: in this process they wait for the first one's
// answer (no Redis call of their own); from other processes they find its claim and poll for
// its answer for up to `waitMs`, then are refused with IDEMPOTENCY_KEY_IN_FLIGHT and a
// Retry-After. A claim whose process died between take and record holds the key for at most
// `claimMs`; its IDs are a gap, and the key has had no answer, so a retry after it takes anew.
// A record that finds its claim taken over (it expired, another request claimed) never
// overwrites: the key keeps one answer, and the late request's IDs are a gap.
//
// Token and option checks come before (the caller's), so a request that may not use the tag
// never sees a kept answer. docs/GUARANTEES.md#idempotency-keys says what is promised.
import { randomBytes } from 'node:crypto';
import { decodeIds, encodeIds, fingerprintDifference, keyedCountProblem, keyProblem } from '../core/idempotency-key.js';
import { IdmintError, invalid, unavailable } from '../errors.js';
import { seqString } from '../core/layout.js';
import type { IdempotencyCounters } from '../metrics/idempotency-metrics.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import type {
  ClaimOrTakeResult,
  IdempotencyRecords,
  FoundAnswer,
  RecordRef,
} from '../store/redis/idempotency-records.js';
import { KeptAnswers } from './kept-answers.js';
import { KeyedTakes } from './keyed-takes.js';

export interface IdempotencyOptions {
  /** IDEMPOTENCY_MAX_KEYS: the most live keys one tag may hold, across the cluster. */
  readonly maxKeys: number;
  /** IDEMPOTENCY_MAX_BYTES: the most bytes one tag's live keys may cost, across the cluster (default 64 MiB). */
  readonly maxBytes?: number;
  /** How long a claim holds the key when its request never comes back (default 10 s). */
  readonly claimMs?: number;
  /** How long a request waits for the answer of another process's request under its key (default 3 s). */
  readonly waitMs?: number;
  /** IDEMPOTENCY_HOLD_MS: how long an answer kept or found is held for replays (default 10 s; 0: none is). */
  readonly holdMs?: number;
  readonly counters?: IdempotencyCounters;
}

const DEFAULT_CLAIM_MS = 10_000;
const DEFAULT_WAIT_MS = 3000;
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Bytes a kept ID may cost at most in a record: 20 digits, quotes and a comma (a longer ID is charged as it is when
 * recorded).
 */
const BYTES_PER_ID = 23;
/**
 * Bytes of a record beyond its IDs: the Redis key's name, the fingerprint, brackets (an upper bound for a claim's
 * charge).
 */
const RECORD_OVERHEAD = 512;

/** What a claim is charged until its answer is recorded: the most its record may cost. */
export const claimCharge = (count: number, key: string, fingerprint: string): number =>
  RECORD_OVERHEAD + key.length + fingerprint.length + count * BYTES_PER_ID;

/** This process's part of every claim's owner: random, so no two processes share one. */
const PROCESS_OWNER = randomBytes(12).toString('base64url');
let claims = 0;
/** A token no other request (of any process) has: this process's random part and a count. */
const ownerOfNext = (): string => `${PROCESS_OWNER}.${(claims++).toString(36)}`;

const refOf = (tag: StoredTag): RecordRef => ({ tag: tag.tag, epoch: tag.epoch, redis: tag.redis });
/** How long the tag keeps a key's answer, ms (at least 1). */
const retentionMsOf = (tag: StoredTag): number => Math.max(1, Math.round(tag.keyRetentionSeconds * 1000));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A keyed request whose IDs can be taken in its key's one Redis call (idem-takes-4.lua): from the
 * counter of (shard, scope), whose value k is the ID k * stride + offset.
 */
export interface TakeInKey {
  readonly shard: number;
  readonly scope: string;
  readonly stride: number;
  readonly offset: number;
  /** Told of the IDs taken in the call (the caller counts them as issued). */
  readonly taken: (ids: readonly string[]) => void;
}

/** The IDs of counter values first .. first + count - 1, as the tag's source writes them (seqString). */
function idsOfCounters(first: number, count: number, inKey: TakeInKey): string[] {
  const ids: string[] = new Array(count);
  for (let k = 0; k < count; k++) ids[k] = seqString(inKey, first + k);
  return ids;
}

/** A call to Redis: when it was sent (kept-answers.ts's clock), over which connection (connection-sessions.ts). */
interface Sent {
  readonly at: number;
  readonly session: number | undefined;
}

/** A request of this process under a key, that later ones with the key wait for. */
interface Running {
  readonly fingerprint: string;
  readonly answer: Promise<string[]>;
}

export class IdempotencyKeys {
  private readonly running = new Map<string, Running>();
  /** The answers this process kept, for their replays (kept-answers.ts). */
  private readonly kept: KeptAnswers;
  private readonly takes: KeyedTakes;
  private readonly claimMs: number;
  private readonly waitMs: number;
  private readonly maxBytes: number;

  constructor(
    private readonly records: IdempotencyRecords,
    private readonly opts: IdempotencyOptions,
  ) {
    this.claimMs = opts.claimMs ?? DEFAULT_CLAIM_MS;
    this.waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.takes = new KeyedTakes(records);
    this.kept = new KeptAnswers(undefined, undefined, opts.holdMs);
  }

  /** Refuses (INVALID_ARGUMENT) a key or a count a keyed request may not carry. */
  check(key: string, count: number): void {
    const problem = keyProblem(key) ?? keyedCountProblem(count);
    if (problem !== undefined) throw invalid(problem);
  }

  /**
   * The answer to a request with idempotency key `key` for `tag`: the answer kept for the key,
   * else the IDs `take` gives (called at most once, and only while this request holds the key).
   * fingerprint: core/idempotency-key.ts fingerprintOf of the request; a kept answer of another
   * fingerprint is refused (IDEMPOTENCY_KEY_MISMATCH), never answered. inKey: the IDs may be
   * taken in the key's own Redis call (else `take` takes them after the claim).
   */
  async issue(
    tag: StoredTag,
    key: string,
    fingerprint: string,
    count: number,
    take: () => Promise<string[]>,
    inKey?: TakeInKey,
  ): Promise<string[]> {
    this.check(key, count);
    const here = `${tag.redis ?? ''}\n${tag.tag}\n${tag.epoch}\n${key}`;
    const held = this.kept.find(here, this.records.session(tag.redis));
    if (held !== undefined) return this.answerAgain(tag, key, fingerprint, held.fingerprint, [...held.ids]);
    const first = this.running.get(here);
    if (first !== undefined) {
      if (first.fingerprint !== fingerprint) throw this.mismatch(tag, key, fingerprint, first.fingerprint);
      const ids = await first.answer;
      this.opts.counters?.replay(tag.tag);
      return [...ids];
    }
    const answer = this.serve(here, tag, key, fingerprint, count, take, inKey);
    this.running.set(here, { fingerprint, answer });
    try {
      return await answer;
    } finally {
      this.running.delete(here);
    }
  }

  /** How many idempotency keys of the tag are live (for the admin view). */
  held(tag: StoredTag): Promise<number> {
    return this.records.held(refOf(tag));
  }

  /** Claims the key (or finds its answer), waiting while another process's request holds it. */
  private async serve(
    here: string,
    tag: StoredTag,
    key: string,
    fingerprint: string,
    count: number,
    take: () => Promise<string[]>,
    inKey: TakeInKey | undefined,
  ): Promise<string[]> {
    const ref = refOf(tag);
    const owner = ownerOfNext();
    const deadline = Date.now() + this.waitMs;
    const limits = { claimMs: this.claimMs, maxKeys: this.opts.maxKeys, maxBytes: this.maxBytes };
    const chargeBytes = claimCharge(count, key, fingerprint);
    const shared = inKey && { ...limits, retentionMs: retentionMsOf(tag), stride: inKey.stride, offset: inKey.offset };
    for (let pause = 2; ; pause = Math.min(pause * 2, 50)) {
      let found: ClaimOrTakeResult;
      const sent = this.sendNow(tag);
      try {
        found =
          inKey === undefined || shared === undefined
            ? await this.records.claim(ref, { ...limits, key, fingerprint, owner, chargeBytes })
            : await this.takes.claimOrTake(ref, inKey, shared, { key, fingerprint, owner, chargeBytes, n: count });
      } catch (err) {
        throw unavailable(
          `tag "${tag.tag}": idempotency key "${key}" could not be looked up (${(err as Error).message}); no ID was given: retry with the same key`,
          err,
        );
      }
      switch (found.kind) {
        case 'taken': {
          const ids = idsOfCounters(found.first, count, inKey as TakeInKey);
          inKey?.taken(ids);
          this.kept.hold(here, fingerprint, ids, sent.at + retentionMsOf(tag), sent.session);
          return ids;
        }
        case 'claimed':
          return this.takeAndRecord(here, tag, ref, key, fingerprint, owner, take);
        case 'answered':
          return this.replay(here, sent, tag, key, fingerprint, found);
        case 'full':
          this.opts.counters?.full(tag.tag);
          throw new IdmintError(
            'IDEMPOTENCY_KEYS_FULL',
            `tag "${tag.tag}" holds ${this.opts.maxKeys} live idempotency keys, the most it may (IDEMPOTENCY_MAX_KEYS); nothing was taken: retry in ${Math.max(1, Math.ceil(found.retryInMs / 1000))} s, once the oldest expires, or without a key`,
            { retryAfter: Math.max(1, Math.ceil(found.retryInMs / 1000)) },
          );
        case 'full-bytes':
          this.opts.counters?.full(tag.tag);
          throw new IdmintError(
            'IDEMPOTENCY_KEYS_FULL',
            `tag "${tag.tag}"'s live idempotency keys cost as many bytes as they may (IDEMPOTENCY_MAX_BYTES, ${this.maxBytes}) with room for this one's answer; nothing was taken: retry in ${Math.max(1, Math.ceil(found.retryInMs / 1000))} s, once enough of them expire, or without a key`,
            { retryAfter: Math.max(1, Math.ceil(found.retryInMs / 1000)) },
          );
        case 'busy':
          if (found.fingerprint !== fingerprint) throw this.mismatch(tag, key, fingerprint, found.fingerprint);
          if (Date.now() + pause > deadline) throw this.inFlight(tag, key, found.ttlMs);
          await sleep(pause);
      }
    }
  }

  /** This request holds the key: its IDs are taken and kept, or the key is given up. */
  private async takeAndRecord(
    here: string,
    tag: StoredTag,
    ref: RecordRef,
    key: string,
    fingerprint: string,
    owner: string,
    take: () => Promise<string[]>,
  ): Promise<string[]> {
    let ids: string[];
    try {
      ids = await take();
    } catch (err) {
      // Nothing reached the caller: the key is free for its retry (else its claim expires).
      await this.records.release(ref, key, owner).catch(() => false);
      throw err;
    }
    let kept;
    const sent = this.sendNow(tag);
    try {
      kept = await this.records.record(ref, {
        key,
        owner,
        fingerprint,
        answer: encodeIds(ids),
        retentionMs: retentionMsOf(tag),
      });
    } catch (err) {
      // The call may still have kept them: a retry with the key then gets them, and only then.
      // Else the claim is given up (if Redis answers), or holds the key until it expires.
      await this.records.release(ref, key, owner).catch(() => false);
      throw unavailable(
        `tag "${tag.tag}": the answer of idempotency key "${key}" could not be kept (${(err as Error).message}); no ID was given, retry with the same key`,
        err,
      );
    }
    switch (kept.kind) {
      case 'recorded':
        this.kept.hold(here, fingerprint, ids, sent.at + retentionMsOf(tag), sent.session);
        return ids;
      case 'answered':
        return this.replay(here, sent, tag, key, fingerprint, kept);
      case 'busy':
        throw this.inFlight(tag, key, kept.ttlMs);
    }
  }

  /** When a call to the tag's Redis is sent, and over which connection (for the answers it brings back). */
  private sendNow(tag: StoredTag): Sent {
    return { at: this.kept.now(), session: this.records.session(tag.redis) };
  }

  /**
   * The kept answer a call `sent` found, if the fingerprint is the request's; else the mismatch refusal.
   * Held for later replays while its record lives (from sent.at, at least its reported ttlMs; -1: no expiry, not held).
   */
  private replay(
    here: string,
    sent: Sent,
    tag: StoredTag,
    key: string,
    fingerprint: string,
    kept: FoundAnswer,
  ): string[] {
    const ids = decodeIds(kept.answer);
    if (kept.ttlMs > 0) this.kept.hold(here, kept.fingerprint, ids, sent.at + kept.ttlMs, sent.session);
    return this.answerAgain(tag, key, fingerprint, kept.fingerprint, ids);
  }

  /** A kept answer's IDs, counted as a replay, if `keptFingerprint` is the request's; else the mismatch refusal. */
  private answerAgain(
    tag: StoredTag,
    key: string,
    fingerprint: string,
    keptFingerprint: string,
    ids: string[],
  ): string[] {
    if (keptFingerprint !== fingerprint) throw this.mismatch(tag, key, fingerprint, keptFingerprint);
    this.opts.counters?.replay(tag.tag);
    return ids;
  }

  private mismatch(tag: StoredTag, key: string, fingerprint: string, before: string): IdmintError {
    this.opts.counters?.mismatch(tag.tag);
    return new IdmintError(
      'IDEMPOTENCY_KEY_MISMATCH',
      `idempotency key "${key}" of tag "${tag.tag}" was used for a different request (${fingerprintDifference(fingerprint, before)}); nothing was taken; a new request needs a new key`,
    );
  }

  private inFlight(tag: StoredTag, key: string, ttlMs: number): IdmintError {
    this.opts.counters?.inFlight(tag.tag);
    const retryAfter = Math.max(1, Math.min(Math.ceil(ttlMs / 1000), Math.ceil(this.claimMs / 1000)));
    return new IdmintError(
      'IDEMPOTENCY_KEY_IN_FLIGHT',
      `another request with idempotency key "${key}" of tag "${tag.tag}" is still being served; nothing was taken: retry in ${retryAfter} s with the same key to get its answer`,
      { retryAfter },
    );
  }
}
