// Encoding of stream blocks: binary frames (u32 req, u32 count, then count u64 IDs, all
// little-endian), JSON ID lists and JSON inclusive ranges. Segment IDs are written from their
// counter runs without a BigInt per ID: the ID of counter k is k * step + base (the tag's
// packing, core/layout.ts), kept as two 32-bit halves that step by the halves of `step`
// (core/id-runs.ts).
import { endianness } from 'node:os';
import { decimalRuns, halves, idsFromRuns, TWO32 } from '../../core/id-runs.js';
import type { Packing } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';

const LITTLE_ENDIAN = endianness() === 'LE';

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

/** Ranges of IDs given as ascending decimal strings: one run per stretch of consecutive IDs. */
export function rangesFromDecimals(req: number, ids: readonly string[], start: number, end: number): string {
  return `{"op":"block","req":${req},"ranges":${JSON.stringify(decimalRuns(ids, start, end))}}`;
}
