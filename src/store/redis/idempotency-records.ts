// Typed access to the idempotency records of tags: one record per (tag, epoch, key), kept in
// the tag's Redis server and cluster slot beside its segments, and the per-tag index that
// counts live keys (idem-record-2.lua, idem-held-1.lua).
import type { RedisClient } from './connection.js';
import { splitRecord, type RecordResult } from './idempotency-replies.js';
import type { Keys } from './keys.js';
import { scriptsOf, type RecordArgs } from './scripts.js';

export type { RecordResult } from './idempotency-replies.js';

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

  /** Keeps the answer of `args.key` unless the key has one already (then that one comes back). */
  record(ref: RecordRef, args: RecordArgs): Promise<RecordResult> {
    const r = this.servers.connection(ref.redis);
    return scriptsOf(r).idemRecord(this.keys.idempotencyRecord(ref.tag, ref.epoch, args.key), this.keys.idempotencyIndex(ref.tag, ref.epoch), args);
  }

  /** The record of a key (fingerprint and encoded answer), or undefined when it has none (never had, or expired). */
  async lookup(ref: RecordRef, key: string): Promise<{ fingerprint: string; answer: string } | undefined> {
    const text = await this.servers.connection(ref.redis).get(this.keys.idempotencyRecord(ref.tag, ref.epoch, key));
    return text === null ? undefined : splitRecord(text);
  }

  /** How many keys of the tag's epoch are live. */
  held(ref: RecordRef): Promise<number> {
    return scriptsOf(this.servers.connection(ref.redis)).idemHeld(this.keys.idempotencyIndex(ref.tag, ref.epoch));
  }
}
