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
export function binaryFromRuns(req: number, runs: readonly Range[], count: number, packing: Packing): Buffer {
  const buf = binaryFrame(req, count);
  fillRuns(buf, 0, runs, packing);
  return buf;
}

/** Memory of `bytes` bytes at offset 0 of a buffer of its own: a new one, or one used again (frame-pool.ts). */
export type FrameMemory = (bytes: number) => Buffer;

const newFrameMemory: FrameMemory = (bytes) => Buffer.allocUnsafeSlow(bytes);

/** A binary frame's header, with room for `count` IDs (filled by fillRuns and fillDecimals). */
export function binaryFrame(req: number, count: number, memory: FrameMemory = newFrameMemory): Buffer {
  // A buffer of its own (offset 0), so the u32 view over it is aligned.
  const buf = memory(8 + 8 * count);
  header(buf, req, count);
  return buf;
}

/** Writes the IDs of counter runs into a binary frame, from its ID number `at` (0 the first). */
export function fillRuns(buf: Buffer, at: number, runs: readonly Range[], packing: Packing): void {
  if (!LITTLE_ENDIAN) {
    fillSlow(buf, 8 + 8 * at, runs, packing);
    return;
  }
  const u32 = new Uint32Array(buf.buffer, buf.byteOffset + 8, (buf.length - 8) / 4);
  // Each half is held as a signed 32-bit integer of the same bits (a typed array stores its value
  // mod 2^32), so the loop's arithmetic stays in 32-bit integers in optimised code. Held as a
  // number up to 2^32, a half above 2^31 is no small integer to V8: once IDs passed 2^31, code
  // optimised again after that kept the halves as heap numbers, a new one per ID (some 19 bytes
  // of garbage an ID, ten times the rest of a take's), and the collections it made paused the
  // process's single requests too.
  const stepLo = (packing.step % TWO32) | 0;
  const stepHi = Math.floor(packing.step / TWO32) | 0;
  let slot = 2 * at;
  for (const [first, last] of runs) {
    const [hi0, lo0] = halves(first, packing);
    let hi = hi0 | 0;
    let lo = lo0 | 0;
    for (let n = last - first + 1; n > 0; n--) {
      u32[slot++] = lo;
      u32[slot++] = hi;
      const next = (lo + stepLo) | 0;
      // The low half wrapped past 2^32 (unsigned, it came out below where it was): carry one.
      hi = (hi + stepHi + (next >>> 0 < lo >>> 0 ? 1 : 0)) | 0;
      lo = next;
    }
  }
}

function fillSlow(buf: Buffer, from: number, runs: readonly Range[], packing: Packing): void {
  let off = from;
  for (const [first, last] of runs) {
    for (let v = first; v <= last; v++) {
      const [hi, lo] = halves(v, packing);
      buf.writeUInt32LE(lo, off);
      buf.writeUInt32LE(hi, off + 4);
      off += 8;
    }
  }
}

/** A binary frame of IDs given as decimal strings (snowflake IDs). */
export function binaryFromDecimals(req: number, ids: readonly string[], start: number, end: number): Buffer {
  const buf = binaryFrame(req, end - start);
  fillDecimals(buf, 0, ids, start, end);
  return buf;
}

/** Writes ids[start, end) (decimal strings) into a binary frame, from its ID number `at`. */
export function fillDecimals(buf: Buffer, at: number, ids: readonly string[], start: number, end: number): void {
  if (LITTLE_ENDIAN) {
    const u64 = new BigUint64Array(buf.buffer, buf.byteOffset + 8, (buf.length - 8) / 8);
    for (let i = start; i < end; i++) u64[at + i - start] = BigInt(ids[i]);
  } else {
    for (let i = start; i < end; i++) buf.writeBigUInt64LE(BigInt(ids[i]), 8 + 8 * (at + i - start));
  }
}

/** `{"op":"block","req":n,"ids":["..."]}` of the IDs of counter runs. */
export function jsonFromRuns(req: number, runs: readonly Range[], count: number, packing: Packing): string {
  return `{"op":"block","req":${req},"ids":["${idsFromRuns(runs, count, packing).join('","')}"]}`;
}

/** `{"op":"block","req":n,"ids":["..."]}` of parts, each IDs joined by `","` (a block encoded in slices). */
export function jsonFromParts(req: number, parts: readonly string[]): string {
  return `{"op":"block","req":${req},"ids":["${parts.join('","')}"]}`;
}

/** `{"op":"block","req":n,"ids":[...]}` of strings (snowflake decimals, rule IDs). */
export function jsonFromStrings(req: number, ids: readonly string[], start: number, end: number): string {
  return `{"op":"block","req":${req},"ids":${JSON.stringify(ids.slice(start, end))}}`;
}

/**
 * `{"op":"block","req":n,"ranges":[["first","last"],...]}` of counter runs of a tag whose ID is the counter
 * (Packing.plain).
 */
export function rangesFromRuns(req: number, runs: readonly Range[]): string {
  let frame = `{"op":"block","req":${req},"ranges":[`;
  for (let i = 0; i < runs.length; i++) frame += `${i ? ',' : ''}["${runs[i][0]}","${runs[i][1]}"]`;
  return `${frame}]}`;
}

/** Ranges of IDs given as ascending decimal strings: one run per stretch of consecutive IDs. */
export function rangesFromDecimals(req: number, ids: readonly string[], start: number, end: number): string {
  return rangesFromDecimalRuns(req, decimalRuns(ids, start, end));
}

/** `{"op":"block","req":n,"ranges":[["first","last"],...]}` of inclusive runs of decimal IDs. */
export function rangesFromDecimalRuns(req: number, runs: readonly [string, string][]): string {
  return `{"op":"block","req":${req},"ranges":${JSON.stringify(runs)}}`;
}
