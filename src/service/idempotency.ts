// Idempotency keys: the first request carrying key K for tag T is served as usual, and every
// later request with (T, K) within the tag's retention gets exactly the IDs the first answer
// held, from any process and across restarts of idmint, because the answer is kept in the tag's
// Redis. A keyed request costs one Redis round trip more than an unkeyed one:
//
//   1. the IDs are taken as for any request;
//   2. one script call (idem-record-2.lua) keeps them as the key's answer unless the key has one
//      already; the caller answers only what that call says: its own IDs when they were kept,
//      else the kept answer (or a refusal when the key was used for another request), so the
//      IDs it took then reach nobody (a gap). Requests under one key that run at once each take
//      IDs, and all of them are given the one answer that was kept first;
//   3. when taking fails (the tag ran out or was disabled since, Redis briefly away) the key is
//      looked up, and a kept answer is still given: a retry never fails for what happened to
//      the tag after its first answer.
//
// Token and option checks come before (the caller's), so a request that may not use the tag
// never sees a kept answer. docs/GUARANTEES.md#idempotency-keys says what is promised.
import { decodeIds, encodeIds, fingerprintDifference, keyedCountProblem, keyProblem } from '../core/idempotency-key.js';
import { IdmintError, invalid, unavailable } from '../errors.js';
import type { IdempotencyCounters } from '../metrics/idempotency-metrics.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import type { IdempotencyRecords, RecordRef } from '../store/redis/idempotency-records.js';

export interface IdempotencyOptions {
  /** IDEMPOTENCY_MAX_KEYS: the most live keys one tag may hold. */
  readonly maxKeys: number;
  readonly counters?: IdempotencyCounters;
}

const refOf = (tag: StoredTag): RecordRef => ({ tag: tag.tag, epoch: tag.epoch, redis: tag.redis });

export class IdempotencyKeys {
  constructor(
    private readonly records: IdempotencyRecords,
    private readonly opts: IdempotencyOptions,
  ) {}

  /** Refuses (INVALID_ARGUMENT) a key or a count a keyed request may not carry. */
  check(key: string, count: number): void {
    const problem = keyProblem(key) ?? keyedCountProblem(count);
    if (problem !== undefined) throw invalid(problem);
  }

  /**
   * The answer to a request with idempotency key `key` for `tag`: the IDs `take` gives when no
   * request under the key was answered before, else the answer kept for the key. fingerprint:
   * core/idempotency-key.ts fingerprintOf of the request; a kept answer of another fingerprint
   * is refused (IDEMPOTENCY_KEY_MISMATCH), never answered.
   */
  async issue(tag: StoredTag, key: string, fingerprint: string, count: number, take: () => Promise<string[]>): Promise<string[]> {
    this.check(key, count);
    const ref = refOf(tag);
    let ids: string[];
    try {
      ids = await take();
    } catch (err) {
      return this.afterFailure(tag, key, fingerprint, err);
    }
    let kept;
    try {
      kept = await this.records.record(ref, {
        key,
        fingerprint,
        answer: encodeIds(ids),
        retentionMs: Math.max(1, Math.round(tag.keyRetentionSeconds * 1000)),
        maxKeys: this.opts.maxKeys,
      });
    } catch (err) {
      // The call may still have kept them: a retry with the key then gets them, and only then.
      if (err instanceof IdmintError) throw err;
      throw unavailable(
        `tag "${tag.tag}": the answer of idempotency key "${key}" could not be kept (${(err as Error).message}); no ID was given, retry with the same key`,
        err,
      );
    }
    switch (kept.kind) {
      case 'recorded':
        return ids;
      case 'exists':
        return this.replay(tag, key, fingerprint, kept);
      case 'full':
        this.opts.counters?.full(tag.tag);
        throw new IdmintError(
          'IDEMPOTENCY_KEYS_FULL',
          `tag "${tag.tag}" holds ${this.opts.maxKeys} live idempotency keys, the most it may (IDEMPOTENCY_MAX_KEYS); no ID was given: retry once the oldest expires, or without a key`,
          { retryAfter: Math.max(1, Math.ceil(kept.retryInMs / 1000)) },
        );
    }
  }

  /** How many idempotency keys of the tag are live (for the admin view). */
  held(tag: StoredTag): Promise<number> {
    return this.records.held(refOf(tag));
  }

  /** The kept answer, if the fingerprint is the request's; else the mismatch refusal. */
  private replay(tag: StoredTag, key: string, fingerprint: string, kept: { fingerprint: string; answer: string }): string[] {
    if (kept.fingerprint !== fingerprint) {
      this.opts.counters?.mismatch(tag.tag);
      throw new IdmintError(
        'IDEMPOTENCY_KEY_MISMATCH',
        `idempotency key "${key}" of tag "${tag.tag}" was used for a different request (${fingerprintDifference(fingerprint, kept.fingerprint)}); a new request needs a new key`,
      );
    }
    this.opts.counters?.replay(tag.tag);
    return decodeIds(kept.answer);
  }

  /**
   * Taking failed: a kept answer of the key is still the answer (the same refusal for another
   * request under it); with none, or when it cannot be read, the failure stands.
   */
  private async afterFailure(tag: StoredTag, key: string, fingerprint: string, failure: unknown): Promise<string[]> {
    let kept;
    try {
      kept = await this.records.lookup(refOf(tag), key);
    } catch {
      throw failure;
    }
    if (kept === undefined) throw failure;
    return this.replay(tag, key, fingerprint, kept);
  }
}
