// Snowflake layouts: the presets' shapes, encode/decode round trips up to every field's
// maximum, the sign bit never set, the JS-safe preset below 2^53, when each layout runs out,
// and the problems reported for unusable layouts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_EPOCH_MS,
  PRESETS,
  decode,
  encode,
  layoutProblems,
  maxSeq,
  maxWorkers,
  runsOutAt,
  toUnits,
  unitMs,
  type SnowflakeLayout,
} from '../../src/core/snowflake-layout.js';

const PRESET_NAMES = Object.keys(PRESETS) as (keyof typeof PRESETS)[];

/** Deterministic pseudo-random integers (a failing case replays exactly). */
function lcg(seed: number): (lo: number, hi: number) => number {
  let s = seed >>> 0;
  return (lo, hi) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return lo + Math.floor((s / 2 ** 32) * (hi - lo + 1));
  };
}

/** The expected bit pattern, computed independently of encode(). */
function packed(l: SnowflakeLayout, time: number, worker: number, seq: number): bigint {
  return BigInt(time) * 2n ** BigInt(l.workerBits + l.seqBits) + BigInt(worker) * 2n ** BigInt(l.seqBits) + BigInt(seq);
}

describe('snowflake presets', () => {
  it('have the documented shapes', () => {
    assert.deepEqual(PRESETS.snowflake, {
      epochMs: Date.UTC(2020, 0, 1),
      unit: 'ms',
      timeBits: 41,
      workerBits: 10,
      seqBits: 12,
    });
    assert.deepEqual(PRESETS.uid, {
      epochMs: Date.UTC(2020, 0, 1),
      unit: 's',
      timeBits: 28,
      workerBits: 22,
      seqBits: 13,
    });
    assert.deepEqual(PRESETS.jssafe, {
      epochMs: Date.UTC(2020, 0, 1),
      unit: 'ms',
      timeBits: 41,
      workerBits: 6,
      seqBits: 6,
    });
    assert.equal(DEFAULT_EPOCH_MS, Date.parse('2020-01-01T00:00:00Z'));
    assert.deepEqual(PRESET_NAMES.sort(), ['jssafe', 'snowflake', 'uid']);
  });

  it('are usable layouts', () => {
    for (const name of PRESET_NAMES) assert.deepEqual(layoutProblems(PRESETS[name]), [], name);
  });

  it('report their worker and sequence ranges', () => {
    assert.equal(maxWorkers(PRESETS.snowflake), 1024);
    assert.equal(maxSeq(PRESETS.snowflake), 4095);
    assert.equal(maxWorkers(PRESETS.uid), 4_194_304);
    assert.equal(maxSeq(PRESETS.uid), 8191);
    assert.equal(maxWorkers(PRESETS.jssafe), 64);
    assert.equal(maxSeq(PRESETS.jssafe), 63);
  });

  it('run out when documented', () => {
    assert.equal(runsOutAt(PRESETS.snowflake).toISOString(), '2089-09-06T15:47:35.552Z');
    assert.equal(runsOutAt(PRESETS.uid).toISOString(), '2028-07-03T21:24:16.000Z');
    assert.equal(runsOutAt(PRESETS.jssafe).toISOString(), '2089-09-06T15:47:35.552Z');
    // The first instant that cannot be represented: one unit before it still can.
    for (const name of PRESET_NAMES) {
      const l = PRESETS[name];
      const end = runsOutAt(l).getTime();
      assert.equal(toUnits(l, end), 2 ** l.timeBits, name);
      assert.equal(toUnits(l, end - unitMs(l.unit)), 2 ** l.timeBits - 1, name);
    }
  });
});

describe('encode and decode', () => {
  it('round-trip the extremes of every field for every preset', () => {
    for (const name of PRESET_NAMES) {
      const l = PRESETS[name];
      const tMax = 2 ** l.timeBits - 1;
      const wMax = maxWorkers(l) - 1;
      const sMax = maxSeq(l);
      const cases: [number, number, number][] = [
        [0, 0, 0],
        [tMax, wMax, sMax],
        [tMax, 0, 0],
        [0, wMax, 0],
        [0, 0, sMax],
        [1, 1, 1],
        [tMax, wMax, 0],
        [0, wMax, sMax],
      ];
      for (const [t, w, s] of cases) {
        const id = encode(l, t, w, s);
        assert.equal(id, packed(l, t, w, s), `${name} ${t}/${w}/${s}`);
        const d = decode(l, id);
        assert.deepEqual([d.time, d.workerId, d.sequence], [t, w, s], `${name} ${t}/${w}/${s}`);
        assert.equal(d.timestamp.getTime(), l.epochMs + t * unitMs(l.unit), name);
      }
      // The largest ID sets every bit below the sign bit that the layout uses, and never the sign bit.
      const max = encode(l, tMax, wMax, sMax);
      assert.equal(max, 2n ** BigInt(l.timeBits + l.workerBits + l.seqBits) - 1n, name);
      assert.ok(max < 2n ** 63n, `${name}: the sign bit is set`);
    }
  });

  it('round-trip random parts, and fields never bleed into each other', () => {
    const r = lcg(20240607);
    for (const name of PRESET_NAMES) {
      const l = PRESETS[name];
      for (let i = 0; i < 2000; i++) {
        const t = r(0, 2 ** l.timeBits - 1);
        const w = r(0, maxWorkers(l) - 1);
        const s = r(0, maxSeq(l));
        const d = decode(l, encode(l, t, w, s));
        assert.deepEqual([d.time, d.workerId, d.sequence], [t, w, s], `${name} ${t}/${w}/${s}`);
      }
    }
  });

  it('orders IDs by time first, then worker, then sequence', () => {
    const l = PRESETS.snowflake;
    assert.ok(encode(l, 101, 0, 0) > encode(l, 100, 1023, 4095));
    assert.ok(encode(l, 100, 6, 0) > encode(l, 100, 5, 4095));
    assert.ok(encode(l, 100, 5, 1) > encode(l, 100, 5, 0));
  });

  it('keeps every JS-safe ID below 2^53, exact as a JavaScript number', () => {
    const l = PRESETS.jssafe;
    const max = encode(l, 2 ** l.timeBits - 1, maxWorkers(l) - 1, maxSeq(l));
    assert.equal(max, 2n ** 53n - 1n);
    assert.ok(Number.isSafeInteger(Number(max)));
    assert.equal(BigInt(Number(max)), max);
    // The other presets do leave the safe range, so the check above is not vacuous.
    assert.ok(!Number.isSafeInteger(Number(encode(PRESETS.snowflake, 2 ** 41 - 1, 1023, 4095))));
  });

  it('decodes a known ID of the default layout', () => {
    const l = PRESETS.snowflake;
    const at = Date.parse('2024-05-06T07:08:09.123Z');
    const id = encode(l, toUnits(l, at), 5, 7);
    assert.equal(id, (BigInt(at - DEFAULT_EPOCH_MS) << 22n) | (5n << 12n) | 7n);
    const d = decode(l, id);
    assert.equal(d.timestamp.toISOString(), '2024-05-06T07:08:09.123Z');
    assert.equal(d.workerId, 5);
    assert.equal(d.sequence, 7);
  });
});

describe('time units', () => {
  it('counts milliseconds or whole seconds since the epoch', () => {
    const at = DEFAULT_EPOCH_MS + 12_345_678;
    assert.equal(toUnits(PRESETS.snowflake, at), 12_345_678);
    assert.equal(toUnits(PRESETS.uid, at), 12_345);
    assert.equal(toUnits(PRESETS.uid, DEFAULT_EPOCH_MS + 999), 0);
    assert.equal(toUnits(PRESETS.uid, DEFAULT_EPOCH_MS + 1000), 1);
    assert.equal(toUnits(PRESETS.snowflake, DEFAULT_EPOCH_MS - 1), -1);
    assert.equal(toUnits(PRESETS.uid, DEFAULT_EPOCH_MS - 1), -1);
    assert.equal(unitMs('ms'), 1);
    assert.equal(unitMs('s'), 1000);
  });

  it('decodes seconds layouts to whole-second timestamps', () => {
    const l = PRESETS.uid;
    const d = decode(l, encode(l, 86_400, 4_194_303, 8191));
    assert.equal(d.timestamp.toISOString(), '2020-01-02T00:00:00.000Z');
    assert.equal(d.workerId, 4_194_303);
    assert.equal(d.sequence, 8191);
  });

  it('moves runsOutAt with the epoch and the unit', () => {
    const epoch = Date.UTC(2030, 0, 1);
    assert.equal(runsOutAt({ ...PRESETS.uid, epochMs: epoch }).getTime(), epoch + 2 ** 28 * 1000);
    assert.equal(runsOutAt({ epochMs: 0, unit: 'ms', timeBits: 20, workerBits: 1, seqBits: 1 }).getTime(), 2 ** 20);
    assert.equal(
      runsOutAt({ epochMs: 0, unit: 's', timeBits: 20, workerBits: 1, seqBits: 1 }).getTime(),
      2 ** 20 * 1000,
    );
  });
});

describe('layoutProblems', () => {
  const ok: SnowflakeLayout = { epochMs: DEFAULT_EPOCH_MS, unit: 'ms', timeBits: 41, workerBits: 10, seqBits: 12 };

  it('accepts the bounds of every field', () => {
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 20 }), []);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 50, workerBits: 1, seqBits: 12 }), []);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 20, workerBits: 22, seqBits: 21 }), []);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 20, workerBits: 21, seqBits: 22 }), []);
    assert.deepEqual(layoutProblems({ ...ok, epochMs: 0 }), []);
    assert.deepEqual(layoutProblems({ ...ok, unit: 's' }), []);
  });

  it('names each field out of range', () => {
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 19 }), ['time_bits must be an integer from 20 to 50']);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 51, workerBits: 1, seqBits: 1 }), [
      'time_bits must be an integer from 20 to 50',
    ]);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 40.5 }), ['time_bits must be an integer from 20 to 50']);
    assert.deepEqual(layoutProblems({ ...ok, workerBits: 0 }), ['worker_bits must be an integer from 1 to 22']);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 20, workerBits: 23 }), [
      'worker_bits must be an integer from 1 to 22',
    ]);
    assert.deepEqual(layoutProblems({ ...ok, seqBits: 0 }), ['seq_bits must be an integer from 1 to 22']);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 20, seqBits: 23 }), [
      'seq_bits must be an integer from 1 to 22',
    ]);
    assert.deepEqual(layoutProblems({ ...ok, seqBits: Number.NaN }), ['seq_bits must be an integer from 1 to 22']);
  });

  it('refuses layouts wider than 63 bits (the sign bit stays clear)', () => {
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 42 }), [
      'time_bits + worker_bits + seq_bits must not exceed 63',
    ]);
    assert.deepEqual(layoutProblems({ ...ok, timeBits: 41, workerBits: 11, seqBits: 11 }), []);
  });

  it('refuses a bad unit or epoch', () => {
    assert.deepEqual(layoutProblems({ ...ok, unit: 'h' as never }), ['time_unit must be "ms" or "s"']);
    assert.deepEqual(layoutProblems({ ...ok, epochMs: -1 }), ['epoch must be a time at or after 1970-01-01']);
    assert.deepEqual(layoutProblems({ ...ok, epochMs: 1.5 }), ['epoch must be a time at or after 1970-01-01']);
  });

  it('lists every problem at once', () => {
    const p = layoutProblems({ epochMs: -5, unit: 'x' as never, timeBits: 60, workerBits: 30, seqBits: 0 });
    assert.deepEqual(p, [
      'time_bits must be an integer from 20 to 50',
      'worker_bits must be an integer from 1 to 22',
      'seq_bits must be an integer from 1 to 22',
      'time_bits + worker_bits + seq_bits must not exceed 63',
      'time_unit must be "ms" or "s"',
      'epoch must be a time at or after 1970-01-01',
    ]);
  });
});
