// Segment ID layouts. `plain`: the ID is the sequence value. `sharded`: a request's key picks
// a shard, each (tag, shard) has its own counter, and the ID packs the three:
//   id = seq << (shardBits + appBits) | shard << appBits | appId
// so IDs do not reveal volume and the app id and shard can be read back from any ID.
//
// Interleaving (stride, offset): the counter k that MySQL and Redis hand out (1, 2, 3, ...)
// becomes the sequence value seq = k * stride + offset, so every sequence value of the tag is
// offset (mod stride). Deployments that share nothing but agree on one stride and give the
// tag distinct offsets never issue the same ID. The mapping is strictly increasing, so
// uniqueness and order of IDs are those of the counter; nothing below it knows about it.
//
// Permuted tags (plain, stride 1): the ID of counter k is a keyed permutation of k over the
// IDs of a fixed width (core/permute.ts). It is applied here, where a counter becomes an ID
// (seqString, packId), and undone by unpackId; a permuted ID keeps the counter's uniqueness,
// not its order.
import { permutationOf, type PermuteSpec } from './permute.js';

/** Counters live in Redis Lua (doubles) and MySQL BIGINT: they stay within 2^53 - 1. */
export const MAX_COUNTER = Number.MAX_SAFE_INTEGER;
export const MAX_ID = (1n << 63n) - 1n;

/** Largest stride: keeps stride << (shard_bits + app_bits) below 2^48 (exact numbers). */
export const MAX_STRIDE = 1_000_000;

export interface Interleave {
  /** Distance between consecutive sequence values (1: no interleaving). */
  readonly stride: number;
  /** Every sequence value is offset (mod stride); 0 <= offset < stride. */
  readonly offset: number;
  /** Set on a permuted tag (plain, stride 1): IDs are a keyed permutation of the counter. */
  readonly permute?: PermuteSpec | null;
}

export interface SegmentLayout extends Interleave {
  readonly layout: 'plain' | 'sharded';
  readonly shards: number;
  readonly appId: number;
  readonly appBits: number;
}

/** The sequence value of `counter`: counter * stride + offset (a bigint: it may pass 2^53). */
export function seqOf(interleave: Interleave, counter: number | bigint): bigint {
  return interleave.stride === 1
    ? BigInt(counter)
    : BigInt(counter) * BigInt(interleave.stride) + BigInt(interleave.offset);
}

/** The ID of `counter` of a plain tag as a decimal string (the sequence value, or its permuted ID). */
export function seqString(interleave: Interleave, counter: number): string {
  if (interleave.permute) return permutationOf(interleave.permute).idString(counter);
  if (interleave.stride === 1) return String(counter);
  const seq = counter * interleave.stride + interleave.offset;
  return Number.isSafeInteger(seq) ? String(seq) : seqOf(interleave, counter).toString();
}

/** The counter behind a sequence value, or undefined when the value is not offset (mod stride). */
export function counterOfSeq(interleave: Interleave, seq: bigint): bigint | undefined {
  const stride = BigInt(interleave.stride);
  const rest = seq - BigInt(interleave.offset);
  if (rest < 0n || rest % stride !== 0n) return undefined;
  return rest / stride;
}

/** The largest counter whose sequence value stays at or below maxSeq (0: none). */
export function counterAtOrBelow(interleave: Interleave, maxSeq: bigint): bigint {
  const rest = maxSeq - BigInt(interleave.offset);
  return rest < 0n ? 0n : rest / BigInt(interleave.stride);
}

export function shardBits(shards: number): number {
  return shards <= 1 ? 0 : Math.ceil(Math.log2(shards));
}

function lowBits(layout: SegmentLayout): bigint {
  return layout.layout === 'sharded' ? BigInt(shardBits(layout.shards) + layout.appBits) : 0n;
}

/** FNV-1a (32-bit) over the key's UTF-8 bytes, modulo the shard count. */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}

/** The ID of `counter` of a shard. */
export function packId(layout: SegmentLayout, counter: number | bigint, shard: number): bigint {
  if (layout.permute) return permutationOf(layout.permute).encrypt(BigInt(counter));
  const seq = seqOf(layout, counter);
  if (layout.layout === 'plain') return seq;
  return (seq << lowBits(layout)) | (BigInt(shard) << BigInt(layout.appBits)) | BigInt(layout.appId);
}

/** How the counters of one (tag, shard) become IDs: id = k * step + base. */
export interface Packing {
  /** The ID is the counter (plain layout, stride 1): consecutive counters are consecutive IDs. */
  readonly plain: boolean;
  /** The distance between the IDs of consecutive counters (below 2^48: exact). */
  readonly step: number;
  /** The ID of counter 0 (below 2^48: exact). */
  readonly base: number;
}

/**
 * packId of a (tag, shard) as a line, for encoders that write many IDs without a BigInt each:
 * packId is linear in the counter, so its values at 0 and 1 give it. shard_bits <= 12,
 * app_bits <= 16 and stride <= 10^6 (tag validation): step and base stay below 2^48.
 */
export function packing(layout: SegmentLayout, shard: number): Packing {
  // Permuted IDs are no line: their writers call permutedIds (core/permute.ts) instead.
  if (layout.permute) throw new Error(`tag IDs are permuted: they have no packing; write them with permutedIds`);
  const base = packId(layout, 0, shard);
  return {
    plain: layout.layout === 'plain' && layout.stride === 1,
    step: Number(packId(layout, 1, shard) - base),
    base: Number(base),
  };
}

export interface SegmentParts {
  /** The sequence field of the ID (for a plain tag, the ID itself; for a permuted one, its counter). */
  readonly seq: bigint;
  /**
   * The counter behind seq; undefined when seq is not one of the tag's (wrong offset, or outside a permuted tag's
   * domain).
   */
  readonly counter: bigint | undefined;
  readonly shard: number;
  readonly appId: number;
}

export function unpackId(layout: SegmentLayout, id: bigint): SegmentParts {
  if (layout.permute) {
    const counter = permutationOf(layout.permute).decrypt(id);
    return { seq: counter ?? id, counter, shard: 0, appId: 0 };
  }
  if (layout.layout === 'plain') return { seq: id, counter: counterOfSeq(layout, id), shard: 0, appId: 0 };
  const appMask = (1n << BigInt(layout.appBits)) - 1n;
  const shardMask = (1n << BigInt(shardBits(layout.shards))) - 1n;
  const seq = id >> lowBits(layout);
  return {
    seq,
    counter: counterOfSeq(layout, seq),
    shard: Number((id >> BigInt(layout.appBits)) & shardMask),
    appId: Number(id & appMask),
  };
}

/** The largest sequence value whose packed ID, for any shard, stays at or below maxIdLimit (-1: none). */
function seqLimit(layout: SegmentLayout, maxIdLimit: bigint): bigint {
  const low = lowBits(layout);
  const highestLow = (1n << low) - 1n;
  if (maxIdLimit < highestLow) return -1n;
  return (maxIdLimit - highestLow) >> low;
}

/**
 * The largest counter value whose packed ID, for any shard, stays at or below maxIdLimit;
 * capped at MAX_COUNTER. 0 means the layout cannot issue a single ID under the limit.
 */
export function counterLimit(layout: SegmentLayout, maxIdLimit: bigint): number {
  const seq = seqLimit(layout, maxIdLimit);
  if (seq < 0n) return 0;
  const counter = counterAtOrBelow(layout, seq);
  return counter > BigInt(MAX_COUNTER) ? MAX_COUNTER : Number(counter);
}

/**
 * The counter floor from which a tag re-created with layout `next` issues only IDs above every
 * ID that counters up to oldMax could have had under layout `old` (any shard).
 */
export function floorAbove(old: SegmentLayout, oldMax: number, next: SegmentLayout): number {
  const oldMaxId = ((seqOf(old, oldMax) + 1n) << lowBits(old)) - 1n;
  return Number(counterAtOrBelow(next, oldMaxId >> lowBits(next)));
}
