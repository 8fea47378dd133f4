// Take blocks encoded a slice at a time (../bulk-slices.ts): each slice is encoded on its own
// (take-encode.ts) and the slices' bytes are joined, which is the block's encoding (a repeated
// field's entries, one after another); ranges of string IDs are joined across slice bounds.
// Each builder answers undefined when the take stopped before its last slice.
import { appendDecimalRuns, decimalRuns } from '../../core/id-runs.js';
import type { Packing } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';
import { indexSlices, runSlices, type Slicer } from '../bulk-slices.js';
import type { TakeBlock } from './requests.js';
import { encodeIdsBlock, encodeRunsBlock } from './take-encode.js';

/**
 * The encoded block of the IDs of counter runs holding `count` counters; 'not-from-runs' when it
 * cannot be written from the runs (an ID from 2^53, or more than maxBytes).
 */
export async function slicedRunsBlock(
  slice: Slicer,
  runs: readonly Range[],
  count: number,
  packing: Packing,
  maxBytes: number,
): Promise<Buffer | 'not-from-runs' | undefined> {
  const parts: Buffer[] = [];
  let bytes = 0;
  let strings = false;
  const done = await slice(runSlices(runs, count, slice.ids()), (runsSlice) => {
    if (strings) return;
    const part = encodeRunsBlock(runsSlice.runs, runsSlice.count, packing, maxBytes - bytes);
    if (part === undefined) strings = true;
    else {
      parts.push(part);
      bytes += part.length;
    }
  });
  if (!done) return undefined;
  return strings ? 'not-from-runs' : Buffer.concat(parts, bytes);
}

/** The encoded block of ids[start, end). */
export async function slicedIdsBlock(
  slice: Slicer,
  ids: readonly string[],
  start: number,
  end: number,
  encode: (block: TakeBlock) => Buffer,
): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  const done = await slice(indexSlices(start, end, slice.strings()), ([from, to]) =>
    parts.push(encodeIdsBlock(ids, from, to, encode)),
  );
  return done ? Buffer.concat(parts) : undefined;
}

/** Inclusive runs of ids[start, end), ascending decimal strings. */
export async function slicedIdsRanges(
  slice: Slicer,
  ids: readonly string[],
  start: number,
  end: number,
): Promise<[string, string][] | undefined> {
  const runs: [string, string][] = [];
  const done = await slice(indexSlices(start, end, slice.strings()), ([from, to]) =>
    appendDecimalRuns(runs, decimalRuns(ids, from, to)),
  );
  return done ? runs : undefined;
}
