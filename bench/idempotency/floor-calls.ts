// The Redis calls of the floor of `npm run bench:idempotency` (floor-server.ts), built as idmint
// builds them for a plain segment tag of order global: the take (take-2.lua) of the unkeyed
// requests of one event-loop turn, and the one idem-takes-4.lua call of the keyed requests of
// one turn, with the keys, the limits, the fingerprint, the owners and the byte charges idmint
// sends (src/store/redis/scripts.ts idemTakes, src/service/idempotency.ts serve). The settings
// are those the bench runs idmint with, so that both send the same arguments;
// test/unit/bench-idempotency-floor.test.ts holds the arguments to what idmint's own store sends.
import { randomBytes } from 'node:crypto';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { DEFAULT_KEY_RETENTION_SECONDS } from '../../src/core/tag-kinds.js';
import { claimCharge } from '../../src/service/idempotency.js';
import type { Keys } from '../../src/store/redis/keys.js';

/**
 * The idempotency settings of the bench's idmint: IDEMPOTENCY_MAX_KEYS and IDEMPOTENCY_MAX_BYTES
 * (given to it by bench/idempotency.ts), the claim's hold idmint derives from REFILL_WAIT_MS
 * (max(10 s, 3 × its default 3 s)), a tag's default retention; a tag of stride 1, offset 0.
 */
export const BENCH_KEY_SETTINGS = {
  maxKeys: 100_000_000,
  maxBytes: 64 * 1024 * 1024,
  claimMs: 10_000,
  retentionMs: DEFAULT_KEY_RETENTION_SECONDS * 1000,
  stride: 1,
  offset: 0,
} as const;

/** The prefetch of a tag created with the defaults (core/tag-spec.ts). */
export const DEFAULT_PREFETCH = 0.2;

/** The fingerprint of a keyed `GET /v1/id/:tag` of one ID, as idmint makes it (routes/ids.ts answers 'one'). */
export const ONE_ID_FINGERPRINT = fingerprintOf({ count: 1, shape: 'one' });

/** Where the tag's counter and records are: its name and epoch (shard 0, no scope). */
export interface FloorTag {
  readonly tag: string;
  readonly epoch: number;
}

/** One keyed request of an idem-takes-4.lua call: its key and its owner token. */
export interface FloorRequest {
  readonly key: string;
  readonly owner: string;
}

/**
 * The owner tokens of a process's claims, as idmint makes them: a random part of the process
 * and a count (src/service/idempotency.ts ownerOfNext).
 */
export function ownerTokens(): () => string {
  const processPart = randomBytes(12).toString('base64url');
  let claims = 0;
  return () => `${processPart}.${(claims++).toString(36)}`;
}

/** KEYS of idem-takes-4.lua for the tag: its segment hash, index of live keys, byte account, moved marker. */
export function takesKeys(keys: Keys, where: FloorTag): [string, string, string, string] {
  return [
    keys.segment(where.tag, where.epoch, 0, ''),
    keys.idempotencyIndex(where.tag, where.epoch),
    keys.idempotencyBytes(where.tag, where.epoch),
    keys.moved(where.tag),
  ];
}

/** KEYS and ARGV of one idem-takes-4.lua call for keyed requests of one ID. */
export function takesArgs(keys: Keys, where: FloorTag, requests: readonly FloorRequest[]): (string | number)[] {
  const s = BENCH_KEY_SETTINGS;
  const args: (string | number)[] = [
    ...takesKeys(keys, where),
    keys.idempotencyRecord(where.tag, where.epoch, ''),
    s.claimMs,
    s.maxKeys,
    s.maxBytes,
    where.epoch,
    s.retentionMs,
    s.stride,
    s.offset,
  ];
  for (const r of requests) args.push(r.key, ONE_ID_FINGERPRINT, r.owner, claimCharge(1, r.key, ONE_ID_FINGERPRINT), 1);
  return args;
}

/** KEYS and ARGV of one take-2.lua call of n IDs, as the coalescer sends it. */
export function takeArgs(keys: Keys, where: FloorTag, n: number, token: string): (string | number)[] {
  return [keys.segment(where.tag, where.epoch, 0, ''), keys.moved(where.tag), n, token, DEFAULT_PREFETCH, where.epoch];
}
