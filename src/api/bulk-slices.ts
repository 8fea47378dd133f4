// A block of a bulk take cut into slices, each encoded in a turn of the event loop of its own
// (bulk-turns.ts), so that however many IDs a consumer asks for per block, the work the process
// does between two looks at its other sockets stays bounded. Slices follow one another in the
// block's order and land in their places of its frame: the block that is sent is the same,
// byte for byte, as one encoded at once. A take that stops (its socket gone, its call
// cancelled) stops before its next slice; the block's IDs are then a gap, as any IDs taken and
// not sent (docs/STREAM.md).
import { RangeQueue, type Range } from '../core/ranges.js';
import type { BulkTurns } from './bulk-turns.js';

/** Most IDs of counter runs encoded per slice (a few nanoseconds each). */
export const SLICE_IDS = 4096;
/** Most IDs encoded per slice where each ID is a string made or read (ten times the cost). */
export const SLICE_STRING_IDS = 1024;
/**
 * The same while single requests are being served (BulkTurns.servingSingles()): a single request
 * that comes during a slice waits for its end, and for the write of its bytes, so slices are a
 * quarter as long then. A take alone keeps the larger slices, fewer turns for the same IDs.
 */
export const SHARED_SLICE_IDS = 1024;
export const SHARED_SLICE_STRING_IDS = 256;

/** Part of a block's counter runs. */
export interface RunsSlice {
  readonly runs: Range[];
  readonly count: number;
}

/** Counter runs holding `count` counters, as slices of at most `size` counters each, in order. */
export function runSlices(runs: readonly Range[], count: number, size: number): RunsSlice[] {
  if (count <= size) return [{ runs: [...runs], count }];
  const queue = new RangeQueue();
  for (const run of runs) queue.push(run);
  const out: RunsSlice[] = [];
  while (queue.size > 0) {
    const sliceCount = Math.min(size, queue.size);
    out.push({ runs: queue.take(sliceCount), count: sliceCount });
  }
  return out;
}

/** Indices [start, end) as slices [from, to) of at most `size` each, in order. */
export function indexSlices(start: number, end: number, size: number): [from: number, to: number][] {
  const out: [number, number][] = [];
  for (let from = start; from < end; from += size) out.push([from, Math.min(end, from + size)]);
  return out;
}

/** A take's slices: how large to cut a block now, and the work of each slice done in turns. */
export interface Slicer {
  /**
   * Does `work` for each slice, in order, each in a turn of its own; false when the take stopped
   * before its last slice (nothing more is done then).
   */
  <T>(slices: readonly T[], work: (slice: T) => void): Promise<boolean>;
  /** Most IDs of counter runs per slice of a block cut now. */
  ids(): number;
  /** Most IDs held as strings per slice of a block cut now. */
  strings(): number;
}

/** A take's slicer: it asks `turns` for a turn before each slice, looks at `stopped` after, charges the slice. */
export function slicer(turns: BulkTurns, stopped: () => boolean): Slicer {
  const run = async <T>(slices: readonly T[], work: (slice: T) => void): Promise<boolean> => {
    for (const slice of slices) {
      await turns.next();
      if (stopped()) return false;
      turns.timed(() => work(slice));
    }
    return true;
  };
  return Object.assign(run, {
    ids: () => (turns.servingSingles() ? SHARED_SLICE_IDS : SLICE_IDS),
    strings: () => (turns.servingSingles() ? SHARED_SLICE_STRING_IDS : SLICE_STRING_IDS),
  });
}
