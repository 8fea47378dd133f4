// The IDs of counter runs as decimal strings, and ascending decimal IDs as inclusive runs: what
// the bulk takes of every transport (the websocket stream, gRPC Take) send. A run's IDs are
// written from its packing (core/layout.ts) as two 32-bit halves stepping by the halves of the
// step, without a BigInt per ID.
import type { Packing } from './layout.js';
import type { Range } from './ranges.js';

export const TWO32 = 4294967296;
/** IDs whose high half is below this are below 2^53 and exact as numbers. */
const SAFE_HIGH = 2 ** 21;

/** The halves of the ID of `counter`. */
export function halves(counter: number, packing: Packing): [hi: number, lo: number] {
  const id = BigInt(counter) * BigInt(packing.step) + BigInt(packing.base);
  return [Number(id >> 32n), Number(id & 0xffffffffn)];
}

function idString(hi: number, lo: number): string {
  return hi < SAFE_HIGH ? String(hi * TWO32 + lo) : ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

/** The IDs of counter runs holding `count` counters in all, as decimal strings. */
export function idsFromRuns(runs: readonly Range[], count: number, packing: Packing): string[] {
  const parts = new Array<string>(count);
  let next = 0;
  for (const [first, last] of runs) {
    if (packing.plain) {
      for (let v = first; v <= last; v++) parts[next++] = String(v);
      continue;
    }
    const stepLo = packing.step % TWO32;
    const stepHi = Math.floor(packing.step / TWO32);
    let [hi, lo] = halves(first, packing);
    for (let n = last - first + 1; n > 0; n--) {
      parts[next++] = idString(hi, lo);
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

/** Appends runs of ascending decimal IDs to `into`, joining the first to the last of `into` when they touch. */
export function appendDecimalRuns(into: [string, string][], runs: readonly [string, string][]): void {
  let next = 0;
  const last = into[into.length - 1];
  if (last !== undefined && runs.length > 0 && BigInt(last[1]) + 1n === BigInt(runs[0][0])) {
    last[1] = runs[0][1];
    next = 1;
  }
  for (; next < runs.length; next++) into.push(runs[next]);
}
