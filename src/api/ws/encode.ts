// Encoding of stream blocks: binary frames (u32 req, u32 count, then count u64 IDs, all
// little-endian), JSON ID lists and JSON inclusive ranges. Segment IDs are written from their
// counter runs without a BigInt per ID: a packed ID is seq * 2^low + c, kept as two 32-bit
// halves that step by 2^low.
import { endianness } from 'node:os';
import { shardBits, type SegmentLayout } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';

const TWO32 = 4294967296;
const LITTLE_ENDIAN = endianness() === 'LE';
/** IDs whose high half is below this are below 2^53 and exact as numbers. */
const SAFE_HIGH = 2 ** 21;

/** How the counters of one (tag, shard) become IDs. */
export interface Packing {
  /** The layout is `plain`: the ID is the counter, and consecutive counters are consecutive IDs. */
  readonly plain: boolean;
  /** 2^low: the distance between the IDs of consecutive counters. */
  readonly stride: number;
  /** 2^(32 - low): splits a counter into the halves of its ID. */
  readonly split: number;
  /** shard << app_bits | app_id: the low bits of every ID. */
  readonly low: number;
}

export function packing(l: SegmentLayout, shard: number): Packing {
  if (l.layout === 'plain') return { plain: true, stride: 1, split: TWO32, low: 0 };
  const bits = shardBits(l.shards) + l.appBits;
  // shard_bits <= 12 and app_bits <= 16 (tag validation), so the low part fits 32 bits.
  return { plain: false, stride: 2 ** bits, split: 2 ** (32 - bits), low: shard * 2 ** l.appBits + l.appId };
}

function header(buf: Buffer, req: number, count: number): void {
  buf.writeUInt32LE(req, 0);
  buf.writeUInt32LE(count, 4);
}

/** A binary frame of the IDs of counter runs holding `count` counters in all. */
export function binaryFromRuns(req: number, runs: readonly Range[], count: number, p: Packing): Buffer {
  // A buffer of its own (offset 0), so the u32 view over it is aligned.
  const buf = Buffer.allocUnsafeSlow(8 + 8 * count);
  header(buf, req, count);
  if (!LITTLE_ENDIAN) return fillSlow(buf, runs, p);
  const u32 = new Uint32Array(buf.buffer, buf.byteOffset + 8, 2 * count);
  const stride = p.stride;
  let i = 0;
  for (const [a, b] of runs) {
    let hi = Math.floor(a / p.split);
    let lo = (a % p.split) * stride + p.low;
    for (let n = b - a + 1; n > 0; n--) {
      u32[i++] = lo;
      u32[i++] = hi;
      lo += stride;
      if (lo >= TWO32) {
        lo -= TWO32;
        hi++;
      }
    }
  }
  return buf;
}

function fillSlow(buf: Buffer, runs: readonly Range[], p: Packing): Buffer {
  let off = 8;
  for (const [a, b] of runs) {
    for (let v = a; v <= b; v++) {
      const hi = Math.floor(v / p.split);
      const lo = (v % p.split) * p.stride + p.low;
      buf.writeUInt32LE(lo, off);
      buf.writeUInt32LE(hi, off + 4);
      off += 8;
    }
  }
  return buf;
}

/** A binary frame of IDs given as decimal strings (snowflake IDs). */
export function binaryFromDecimals(req: number, ids: readonly string[], start: number, end: number): Buffer {
  const count = end - start;
  const buf = Buffer.allocUnsafeSlow(8 + 8 * count);
  header(buf, req, count);
  if (LITTLE_ENDIAN) {
    const u64 = new BigUint64Array(buf.buffer, buf.byteOffset + 8, count);
    for (let i = 0; i < count; i++) u64[i] = BigInt(ids[start + i]);
  } else {
    for (let i = 0; i < count; i++) buf.writeBigUInt64LE(BigInt(ids[start + i]), 8 + 8 * i);
  }
  return buf;
}

function idString(hi: number, lo: number): string {
  return hi < SAFE_HIGH ? String(hi * TWO32 + lo) : ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

/** The IDs of counter runs holding `count` counters in all, as decimal strings. */
export function idsFromRuns(runs: readonly Range[], count: number, p: Packing): string[] {
  const parts = new Array<string>(count);
  let i = 0;
  for (const [a, b] of runs) {
    if (p.plain) {
      for (let v = a; v <= b; v++) parts[i++] = String(v);
      continue;
    }
    let hi = Math.floor(a / p.split);
    let lo = (a % p.split) * p.stride + p.low;
    for (let n = b - a + 1; n > 0; n--) {
      parts[i++] = idString(hi, lo);
      lo += p.stride;
      if (lo >= TWO32) {
        lo -= TWO32;
        hi++;
      }
    }
  }
  return parts;
}

/** `{"op":"block","req":n,"ids":["..."]}` of the IDs of counter runs. */
export function jsonFromRuns(req: number, runs: readonly Range[], count: number, p: Packing): string {
  return `{"op":"block","req":${req},"ids":["${idsFromRuns(runs, count, p).join('","')}"]}`;
}

/** `{"op":"block","req":n,"ids":[...]}` of strings (snowflake decimals, rule IDs). */
export function jsonFromStrings(req: number, ids: readonly string[], start: number, end: number): string {
  return `{"op":"block","req":${req},"ids":${JSON.stringify(ids.slice(start, end))}}`;
}

/** `{"op":"block","req":n,"ranges":[["first","last"],...]}` of plain counter runs (ID = counter). */
export function rangesFromRuns(req: number, runs: readonly Range[]): string {
  let s = `{"op":"block","req":${req},"ranges":[`;
  for (let i = 0; i < runs.length; i++) s += `${i ? ',' : ''}["${runs[i][0]}","${runs[i][1]}"]`;
  return `${s}]}`;
}

/** Inclusive runs [first, last] of ascending decimal IDs: one per stretch of consecutive IDs. */
export function decimalRuns(ids: readonly string[], start: number, end: number): [string, string][] {
  const out: [string, string][] = [];
  let first = start;
  let prev = BigInt(ids[start]);
  for (let i = start + 1; i <= end; i++) {
    const cur = i < end ? BigInt(ids[i]) : -1n;
    if (cur === prev + 1n) {
      prev = cur;
      continue;
    }
    out.push([ids[first], ids[i - 1]]);
    first = i;
    prev = cur;
  }
  return out;
}

/** Ranges of IDs given as ascending decimal strings: one run per stretch of consecutive IDs. */
export function rangesFromDecimals(req: number, ids: readonly string[], start: number, end: number): string {
  return `{"op":"block","req":${req},"ranges":${JSON.stringify(decimalRuns(ids, start, end))}}`;
}
