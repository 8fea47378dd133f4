// Segment ID layouts. `plain`: the ID is the counter. `sharded`: a request's key picks a
// shard, each (tag, shard) has its own counter, and the ID packs the three:
//   id = seq << (shardBits + appBits) | shard << appBits | appId
// so IDs do not reveal volume and the app id and shard can be read back from any ID.

/** Counters live in Redis Lua (doubles) and MySQL BIGINT: they stay within 2^53 - 1. */
export const MAX_COUNTER = Number.MAX_SAFE_INTEGER;
export const MAX_ID = (1n << 63n) - 1n;

export interface SegmentLayout {
  readonly layout: 'plain' | 'sharded';
  readonly shards: number;
  readonly appId: number;
  readonly appBits: number;
}

export function shardBits(shards: number): number {
  return shards <= 1 ? 0 : Math.ceil(Math.log2(shards));
}

function lowBits(l: SegmentLayout): bigint {
  return l.layout === 'sharded' ? BigInt(shardBits(l.shards) + l.appBits) : 0n;
}

/** FNV-1a (32-bit) over the key's UTF-8 bytes, modulo the shard count. */
export function shardOf(key: string, shards: number): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(key, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

export function packId(l: SegmentLayout, seq: bigint, shard: number): bigint {
  if (l.layout === 'plain') return seq;
  return (seq << lowBits(l)) | (BigInt(shard) << BigInt(l.appBits)) | BigInt(l.appId);
}

export interface SegmentParts {
  readonly seq: bigint;
  readonly shard: number;
  readonly appId: number;
}

export function unpackId(l: SegmentLayout, id: bigint): SegmentParts {
  if (l.layout === 'plain') return { seq: id, shard: 0, appId: 0 };
  const appMask = (1n << BigInt(l.appBits)) - 1n;
  const shardMask = (1n << BigInt(shardBits(l.shards))) - 1n;
  return {
    seq: id >> lowBits(l),
    shard: Number((id >> BigInt(l.appBits)) & shardMask),
    appId: Number(id & appMask),
  };
}

/**
 * The largest counter value whose packed ID, for any shard, stays at or below maxIdLimit;
 * capped at MAX_COUNTER. 0 means the layout cannot issue a single ID under the limit.
 */
export function counterLimit(l: SegmentLayout, maxIdLimit: bigint): number {
  const low = lowBits(l);
  const highestLow = (1n << low) - 1n;
  if (maxIdLimit < highestLow) return 0;
  const seq = (maxIdLimit - highestLow) >> low;
  return seq > BigInt(MAX_COUNTER) ? MAX_COUNTER : Number(seq);
}
