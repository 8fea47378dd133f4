// The stream's block frames encoded a slice at a time (../bulk-slices.ts): a binary frame is
// allocated whole and each slice writes its IDs into their places; a JSON frame is joined from
// the slices' parts; ranges of string IDs are joined across slice bounds. Each builder answers
// the frame, the same as encode.ts would build at once, or undefined when the take stopped
// before its last slice.
import { appendDecimalRuns, decimalRuns, idsFromRuns } from '../../core/id-runs.js';
import type { Packing } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';
import { indexSlices, runSlices, type Slicer } from '../bulk-slices.js';
import {
  binaryFrame,
  fillDecimals,
  fillRuns,
  jsonFromParts,
  rangesFromDecimalRuns,
  type FrameMemory,
} from './encode.js';

/**
 * A binary frame of the IDs of counter runs holding `count` counters. `filled`, if given, is told
 * in each slice's turn that the frame's bytes up to `end` are final (the last slice: its length).
 */
export async function slicedBinaryFromRuns(
  slice: Slicer,
  req: number,
  runs: readonly Range[],
  count: number,
  packing: Packing,
  memory?: FrameMemory,
  filled?: (frame: Buffer, end: number) => void,
): Promise<Buffer | undefined> {
  const frame = binaryFrame(req, count, memory);
  let at = 0;
  const done = await slice(runSlices(runs, count, slice.ids()), (runsSlice) => {
    fillRuns(frame, at, runsSlice.runs, packing);
    at += runsSlice.count;
    filled?.(frame, 8 + 8 * at);
  });
  return done ? frame : undefined;
}

/** A binary frame of ids[start, end), decimal strings. */
export async function slicedBinaryFromDecimals(
  slice: Slicer,
  req: number,
  ids: readonly string[],
  start: number,
  end: number,
  memory?: FrameMemory,
): Promise<Buffer | undefined> {
  const frame = binaryFrame(req, end - start, memory);
  const done = await slice(indexSlices(start, end, slice.strings()), ([from, to]) =>
    fillDecimals(frame, from - start, ids, from, to),
  );
  return done ? frame : undefined;
}

/** A JSON frame of the IDs of counter runs holding `count` counters. */
export async function slicedJsonFromRuns(
  slice: Slicer,
  req: number,
  runs: readonly Range[],
  count: number,
  packing: Packing,
): Promise<string | undefined> {
  const parts: string[] = [];
  const done = await slice(runSlices(runs, count, slice.strings()), (s) =>
    parts.push(idsFromRuns(s.runs, s.count, packing).join('","')),
  );
  return done ? jsonFromParts(req, parts) : undefined;
}

/** A JSON frame of ids[start, end) (strings). */
export async function slicedJsonFromStrings(
  slice: Slicer,
  req: number,
  ids: readonly string[],
  start: number,
  end: number,
): Promise<string | undefined> {
  const parts: string[] = [];
  const done = await slice(indexSlices(start, end, slice.strings()), ([from, to]) => {
    const list = JSON.stringify(ids.slice(from, to));
    parts.push(list.slice(1, -1));
  });
  return done ? `{"op":"block","req":${req},"ids":[${parts.join(',')}]}` : undefined;
}

/** A ranges frame of ids[start, end), ascending decimal strings. */
export async function slicedRangesFromDecimals(
  slice: Slicer,
  req: number,
  ids: readonly string[],
  start: number,
  end: number,
): Promise<string | undefined> {
  const runs: [string, string][] = [];
  const done = await slice(indexSlices(start, end, slice.strings()), ([from, to]) =>
    appendDecimalRuns(runs, decimalRuns(ids, from, to)),
  );
  return done ? rangesFromDecimalRuns(req, runs) : undefined;
}
