// Encoding of stream blocks: binary frames (u32 req, u32 count, then count u64 IDs, all
// little-endian), JSON ID lists and JSON inclusive ranges. Segment IDs are written from their
// counter runs without a BigInt per ID: the ID of counter k is k * step + base (step =
// stride << low, base = offset << low | shard << app_bits | app_id), kept as two 32-bit halves
// that step by the halves of `step`.
import { endianness } from 'node:os';
import { shardBits, type SegmentLayout } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';

const TWO32 = 4294967296;
const LITTLE_ENDIAN = endianness() === 'LE';
/** IDs whose high half is below this are below 2^53 and exact as numbers. */
const SAFE_HIGH = 2 ** 21;

/** How the counters of one (tag, shard) become IDs: id = k * step + base. */
export interface Packing {
  /** The ID is the counter (plain layout, stride 1): consecutive counters are consecutive IDs. */
  readonly plain: boolean;
  /** The distance between the IDs of consecutive counters (below 2^48: exact). */
  readonly step: number;
  /** The ID of counter 0 (below 2^48: exact). */
  readonly base: number;
}

export function packing(l: SegmentLayout, shard: number): Packing {
  const bits = l.layout === 'plain' ? 0 : shardBits(l.shards) + l.appBits;
  // shard_bits <= 12, app_bits <= 16 and stride <= 10^6 (tag validation): step and base stay below 2^48.
  const low = l.layout === 'plain' ? 0 : shard * 2 ** l.appBits + l.appId;
  return { plain: l.layout === 'plain' && l.stride === 1, step: l.stride * 2 ** bits, base: l.offset * 2 ** bits + low };
}

/** The halves of the ID of counter k. */
function halves(k: number, p: Packing): [hi: number, lo: number] {
  const id = BigInt(k) * BigInt(p.step) + BigInt(p.base);
  return [Number(id >> 32n), Number(id & 0xffffffffn)];
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
  const stepLo = p.step % TWO32;
  const stepHi = Math.floor(p.step / TWO32);
  let i = 0;
  for (const [a, b] of runs) {
    let [hi, lo] = halves(a, p);
    for (let n = b - a + 1; n > 0; n--) {
      u32[i++] = lo;
      u32[i++] = hi;
      lo += stepLo;
      hi += stepHi;
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
      const [hi, lo] = halves(v, p);
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
    const stepLo = p.step % TWO32;
    const stepHi = Math.floor(p.step / TWO32);
    let [hi, lo] = halves(a, p);
    for (let n = b - a + 1; n > 0; n--) {
      parts[i++] = idString(hi, lo);
      lo += stepLo;
      hi += stepHi;
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

/** `{"op":"block","req":n,"ranges":[["first","last"],...]}` of counter runs of a tag whose ID is the counter (Packing.plain). */
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
