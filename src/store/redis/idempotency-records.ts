// Typed access to the idempotency records of tags: one record per (tag, epoch, key), kept in
// the tag's Redis server and cluster slot beside its segments (a claim while its request takes,
// then the answer), the per-tag index that counts live keys and the per-tag account of their
// bytes (idem-claim-3.lua, idem-takes-4.lua, idem-record-3.lua, idem-release-3.lua,
// idem-held-1.lua).
import type { RedisClient } from './connection.js';
import { sessionOf } from './connection-sessions.js';
import {
  splitRecord,
  type ClaimOrTakeResult,
  type ClaimResult,
  type KeptAnswer,
  type RecordResult,
} from './idempotency-replies.js';
import type { Keys } from './keys.js';
import { scriptsOf, type ClaimArgs, type RecordArgs, type TakeRequest, type TakesArgs } from './scripts.js';

export type { ClaimOrTakeResult, ClaimResult, FoundAnswer, KeptAnswer, RecordResult } from './idempotency-replies.js';

/** Where a tag's records live: its name, its epoch, the named Redis server it is on. */
export interface RecordRef {
  readonly tag: string;
  readonly epoch: number;
  /** Name of the tag's Redis server; absent means "default". */
  readonly redis?: string;
}

/** The connection of a named Redis server (SegmentStore gives them). */
export interface RedisServers {
  connection(name?: string): RedisClient;
}

export class IdempotencyRecords {
  constructor(
    private readonly servers: RedisServers,
    private readonly keys: Keys,
  ) {}

  /** The session of the connection to the named Redis server now (connection-sessions.ts): none while not ready. */
  session(redis?: string): number | undefined {
    return sessionOf(this.servers.connection(redis));
  }

  /** The key's kept answer, else a claim on it for this request (or the claim another holds, or full). */
  claim(ref: RecordRef, args: ClaimArgs): Promise<ClaimResult> {
    return scriptsOf(this.servers.connection(ref.redis)).idemClaim(
      this.recordKey(ref, args.key),
      this.indexKey(ref),
      this.bytesKey(ref),
      args,
    );
  }

  /**
   * For each request, in order, in one call: its key's kept answer, else its IDs taken from the
   * counter of (shard, scope) of the ref's tag and epoch and kept as its answer when the counter
   * is in its steady state, else a claim on its key (or the claim another holds, or full).
   */
  claimOrTakeAll(
    ref: RecordRef,
    counter: { readonly shard: number; readonly scope: string },
    args: Omit<TakesArgs, 'recordPrefix' | 'epoch'>,
    requests: readonly TakeRequest[],
  ): Promise<ClaimOrTakeResult[]> {
    return scriptsOf(this.servers.connection(ref.redis)).idemTakes(
      this.keys.segment(ref.tag, ref.epoch, counter.shard, counter.scope),
      this.indexKey(ref),
      this.bytesKey(ref),
      this.keys.moved(ref.tag),
      { ...args, recordPrefix: this.recordKey(ref, ''), epoch: ref.epoch },
      requests,
    );
  }

  /** Turns the request's claim into the key's answer, unless the key has another (then that one). */
  record(ref: RecordRef, args: RecordArgs): Promise<RecordResult> {
    return scriptsOf(this.servers.connection(ref.redis)).idemRecord(
      this.recordKey(ref, args.key),
      this.indexKey(ref),
      this.bytesKey(ref),
      args,
    );
  }

  /** Gives up the request's claim on `key` (its take failed): a retry is then a first request. */
  release(ref: RecordRef, key: string, owner: string): Promise<boolean> {
    return scriptsOf(this.servers.connection(ref.redis)).idemRelease(
      this.recordKey(ref, key),
      this.indexKey(ref),
      this.bytesKey(ref),
      key,
      owner,
    );
  }

  /** The answer kept for a key, or undefined when it has none (never had, expired, or only a claim). */
  async lookup(ref: RecordRef, key: string): Promise<KeptAnswer | undefined> {
    const text = await this.servers.connection(ref.redis).get(this.recordKey(ref, key));
    return text === null || text.startsWith('?') ? undefined : splitRecord(text);
  }

  /** How many keys of the tag's epoch are live (claimed or answered). */
  held(ref: RecordRef): Promise<number> {
    return scriptsOf(this.servers.connection(ref.redis)).idemHeld(this.indexKey(ref));
  }

  private recordKey(ref: RecordRef, key: string): string {
    return this.keys.idempotencyRecord(ref.tag, ref.epoch, key);
  }

  private indexKey(ref: RecordRef): string {
    return this.keys.idempotencyIndex(ref.tag, ref.epoch);
  }

  private bytesKey(ref: RecordRef): string {
    return this.keys.idempotencyBytes(ref.tag, ref.epoch);
  }
}
