// Blocks encoded a slice at a time are the same, byte for byte, as blocks encoded at once, in
// every format of the websocket stream and of gRPC Take, with runs and ranges that cross slice
// bounds, whether a take runs alone or beside single requests (smaller slices); a take that
// stops mid-block stops before its next slice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decimalRuns, idsFromRuns } from '../../src/core/id-runs.js';
import type { Packing } from '../../src/core/layout.js';
import type { Range } from '../../src/core/ranges.js';
import {
  SHARED_SLICE_IDS,
  SHARED_SLICE_STRING_IDS,
  SLICE_IDS,
  SLICE_STRING_IDS,
  slicer,
} from '../../src/api/bulk-slices.js';
import { BulkTurns, type TurnClock } from '../../src/api/bulk-turns.js';
import {
  binaryFromDecimals,
  binaryFromRuns,
  jsonFromRuns,
  jsonFromStrings,
  rangesFromDecimals,
} from '../../src/api/ws/encode.js';
import {
  slicedBinaryFromDecimals,
  slicedBinaryFromRuns,
  slicedJsonFromRuns,
  slicedJsonFromStrings,
  slicedRangesFromDecimals,
} from '../../src/api/ws/sliced-frames.js';
import { slicedIdsBlock, slicedIdsRanges, slicedRunsBlock } from '../../src/api/grpc/sliced-blocks.js';
import { encodeIdsBlock, encodeRunsBlock } from '../../src/api/grpc/take-encode.js';

const plain: Packing = { plain: true, step: 1, base: 0 };
const packed: Packing = { plain: false, step: 4096, base: 2 ** 40 + 7 };
/** Runs of more than three slices in all, with gaps, one crossing 2^32 (as counters and as IDs). */
const runs: Range[] = [
  [10, 1000],
  [5000, 5000 + SLICE_IDS],
  [2 ** 32 - 2000, 2 ** 32 + 2 * SLICE_IDS],
];
const count = runs.reduce((n, [a, b]) => n + b - a + 1, 0);
const never = () => false;
const noEncode = (): Buffer => {
  throw new Error('the schema encoder is not needed for decimal IDs');
};

/** Turns of a process asked for a single request before every look: it is always serving singles. */
function servingTurns(): BulkTurns {
  let singles = 0;
  const clock: TurnClock = {
    now: () => performance.now(),
    singles: () => ++singles,
    immediate: (turn) => setImmediate(turn),
    later: (turn, ms) => setTimeout(turn, ms),
    busy: () => 0,
  };
  return new BulkTurns(1, clock);
}

describe('blocks encoded in slices', () => {
  const alone = slicer(new BulkTurns(), never);
  const beside = slicer(servingTurns(), never);
  const slicers = [alone, beside];

  it('write the same stream frames as blocks encoded at once', async () => {
    for (const [p, slice] of [plain, packed].flatMap((p) => slicers.map((s) => [p, s] as const))) {
      assert.deepEqual(await slicedBinaryFromRuns(slice, 7, runs, count, p), binaryFromRuns(7, runs, count, p));
      assert.equal(await slicedJsonFromRuns(slice, 7, runs, count, p), jsonFromRuns(7, runs, count, p));
      const ids = idsFromRuns(runs, count, p);
      assert.ok(ids.length > 2 * SLICE_STRING_IDS);
      assert.deepEqual(
        await slicedBinaryFromDecimals(slice, 7, ids, 3, ids.length - 2),
        binaryFromDecimals(7, ids, 3, ids.length - 2),
      );
      assert.equal(
        await slicedJsonFromStrings(slice, 7, ids, 3, ids.length - 2),
        jsonFromStrings(7, ids, 3, ids.length - 2),
      );
      assert.equal(
        await slicedRangesFromDecimals(slice, 7, ids, 3, ids.length - 2),
        rangesFromDecimals(7, ids, 3, ids.length - 2),
      );
    }
  });

  it('write the same gRPC blocks as blocks encoded at once', async () => {
    for (const [p, slice] of [plain, packed].flatMap((p) => slicers.map((s) => [p, s] as const))) {
      assert.deepEqual(await slicedRunsBlock(slice, runs, count, p, 1 << 30), encodeRunsBlock(runs, count, p, 1 << 30));
      const ids = idsFromRuns(runs, count, p);
      assert.deepEqual(
        await slicedIdsBlock(slice, ids, 1, ids.length, noEncode),
        encodeIdsBlock(ids, 1, ids.length, noEncode),
      );
      assert.deepEqual(await slicedIdsRanges(slice, ids, 1, ids.length), decimalRuns(ids, 1, ids.length));
    }
    // Past the byte bound, or from 2^53: not written from the runs.
    for (const slice of slicers) {
      assert.equal(await slicedRunsBlock(slice, runs, count, plain, 1000), 'not-from-runs');
      assert.equal(await slicedRunsBlock(slice, [[2 ** 53 - 10, 2 ** 53 + 10]], 21, plain, 1 << 30), 'not-from-runs');
    }
  });

  it('cut a block into slices a quarter as large while single requests are being served', async () => {
    assert.deepEqual([alone.ids(), alone.strings()], [SLICE_IDS, SLICE_STRING_IDS]);
    assert.deepEqual([beside.ids(), beside.strings()], [SHARED_SLICE_IDS, SHARED_SLICE_STRING_IDS]);
    assert.equal(SHARED_SLICE_IDS * 4, SLICE_IDS);
    const sizes = async (turns: BulkTurns) => {
      const slices: number[] = [];
      let before = 0;
      await slicedBinaryFromRuns(slicer(turns, never), 1, runs, count, plain, undefined, (_frame, end) => {
        slices.push((end - 8) / 8 - before);
        before = (end - 8) / 8;
      });
      return slices;
    };
    const whole = (n: number) => [...Array(Math.floor(count / n)).fill(n), count % n].filter((x) => x > 0);
    assert.deepEqual(await sizes(new BulkTurns()), whole(SLICE_IDS));
    assert.deepEqual(await sizes(servingTurns()), whole(SHARED_SLICE_IDS));
  });

  it('encode one slice per turn of the event loop, and stop before the next slice once the take stopped', async () => {
    let asked = 0;
    const counting = new BulkTurns();
    const next = counting.next.bind(counting);
    counting.next = () => {
      asked++;
      return next();
    };
    let stop = false;
    const stopping = slicer(counting, () => stop);
    assert.ok(await slicedBinaryFromRuns(stopping, 1, runs, count, plain));
    assert.equal(asked, Math.ceil(count / SLICE_IDS));
    asked = 0;
    let done = 0;
    const finished = await stopping([1, 2, 3, 4], () => {
      done++;
      if (done === 2) stop = true;
    });
    assert.equal(finished, false);
    assert.equal(done, 2);
    assert.equal(asked, 3);
  });
});
