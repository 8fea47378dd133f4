// The soak's verdict (scripts/soak/verdict.ts): the plateau, the band after the warm-up and the
// growth trend of a memory series, and the checks that fail a run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verdictLine } from '../../scripts/soak/report.js';
import {
  judgeSeries,
  median,
  SOAK_EXIT,
  slope,
  verdict,
  warmupEnd,
  warmupSeconds,
  type Point,
  type SeriesVerdict,
} from '../../scripts/soak/verdict.js';

/** A sample every 5 s for `minutes`, of value f(t seconds). */
const series = (minutes: number, f: (t: number) => number): Point[] =>
  Array.from({ length: (minutes * 60) / 5 }, (_, i) => ({ t: (i + 1) * 5, v: f((i + 1) * 5) }));

/** The judged series (RSS with V8's pages whole, heap after GC) and RSS, by default as the first. */
const memory = (whole: SeriesVerdict, heap: SeriesVerdict, rss = whole) => ({ whole, heap, rss });

const clean = { ids: 10n, duplicates: 0n, orderChecked: 5, orderViolations: 0, failed: 0, silentTags: [] };

describe('soak verdict', () => {
  it('warms up for a minute, or a third of a shorter run', () => {
    assert.equal(warmupSeconds(600), 60);
    assert.equal(warmupSeconds(15), 5);
  });

  it('ends the warm-up at the second sample after it that saw a full collection', () => {
    const gcs = (at: number[]) =>
      Array.from({ length: 20 }, (_, i) => ({ t: (i + 1) * 10, majorGcs: at.includes((i + 1) * 10) ? 1 : 0 }));
    assert.equal(warmupEnd(gcs([20, 90, 130, 150]), 600), 130);
    assert.equal(warmupEnd(gcs([60, 70]), 600), 70);
    assert.equal(warmupEnd(gcs([90]), 600), 60, 'not two: the first minute');
    assert.equal(warmupEnd(gcs([]), 30), 10);
  });

  it('median and least-squares slope', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.equal(slope([0, 1, 2, 3].map((x) => ({ x, y: 2 * x + 7 }))), 2);
    assert.ok(Number.isNaN(slope([{ x: 1, y: 1 }])));
  });

  it('passes a flat series whose warm-up climbed, with noise inside the band', () => {
    const s = judgeSeries(
      series(10, (t) => (t < 60 ? 100 + t : 160 + ((t / 5) % 2 ? 3 : -3))),
      60,
      0.1,
      1,
    );
    assert.equal(s.plateau, 160);
    assert.ok(s.ok, JSON.stringify(s));
    assert.ok(s.worst < 0.03);
    assert.ok(Math.abs(s.slope) < 0.1);
  });

  it('fails a series that keeps growing, even inside the band', () => {
    // 0.5 MB a minute from 150 MB: 4.5 MB over nine minutes, 3% of the plateau.
    const s = judgeSeries(
      series(10, (t) => 150 + (0.5 * t) / 60),
      60,
      0.1,
      0.25,
    );
    assert.ok(s.worst < 0.1);
    assert.ok(Math.abs(s.slope - 0.5) < 1e-9, String(s.slope));
    assert.equal(s.ok, false);
  });

  it('fails a sample after the warm-up outside the band, not one in it', () => {
    const spike = (at: number) => series(10, (t) => (t === at ? 200 : 150));
    assert.equal(judgeSeries(spike(30), 60, 0.1, 100).ok, true);
    const s = judgeSeries(spike(300), 60, 0.1, 100);
    assert.equal(s.ok, false);
    assert.ok(Math.abs(s.worst - 50 / 150) < 1e-9);
  });

  it("judges RSS with V8's pages counted whole, not RSS: RSS climbing toward pages already mapped passes", () => {
    const flat = judgeSeries(
      series(10, () => 380),
      60,
      0.1,
      1,
    );
    // RSS 1.2 MB a minute from 300 MB: V8's pages touched again, inside the band.
    const climbing = judgeSeries(
      series(10, (t) => 300 + (1.2 * t) / 60),
      60,
      0.1,
      1,
    );
    assert.equal(climbing.ok, false);
    const heap = judgeSeries(
      series(10, () => 50),
      60,
      0.1,
      1,
    );
    const v = verdict(memory(flat, heap, climbing), clean, 0.1, 1);
    assert.deepEqual([v.ok, v.reasons], [true, []]);
    assert.match(
      verdictLine(v, 0.1, 1),
      /^soak verdict: PASS: RSS with V8's pages whole plateau 380\.0 MB .*, heap after GC plateau 50\.0 MB .*, RSS plateau [\d.]+ MB \(slope \+1\.20 MB\/min, shown, not judged\), 0 duplicates/,
    );
    // The same growth in what V8's pages whole count fails the run.
    const grown = verdict(memory(climbing, heap, flat), clean, 0.1, 1);
    assert.equal(grown.ok, false);
    assert.match(grown.reasons.join('; '), /^RSS with V8's pages whole: growing 1\.20 MB\/min \(bound 1\)$/);
  });

  it('fails on a duplicate, an order violation, a failed request, an unchecked order or a silent tag', () => {
    const flat = judgeSeries(
      series(10, () => 100),
      60,
      0.1,
      1,
    );
    assert.deepEqual(verdict(memory(flat, flat), clean, 0.1, 1).reasons, []);
    assert.equal(verdict(memory(flat, flat), clean, 0.1, 1).ok, true);
    for (const [bad, reason] of [
      [{ duplicates: 2n }, /2 duplicate IDs/],
      [{ orderViolations: 1 }, /1 order violations/],
      [{ orderChecked: 0 }, /no answer was checked for order/],
      [{ failed: 3 }, /3 failed requests/],
      [{ silentTags: ['x'] }, /no ID of x/],
    ] as const) {
      const v = verdict(memory(flat, flat), { ...clean, ...bad }, 0.1, 1);
      assert.equal(v.ok, false);
      assert.match(v.reasons.join('; '), reason);
    }
    const short = judgeSeries([{ t: 1, v: 1 }], 60, 0.1, 1);
    assert.match(verdict(memory(short, flat), clean, 0.1, 1).reasons.join(), /fewer than 2 samples after the warm-up/);
  });

  it('says "too short to judge" (its own exit code) when the memory has too few samples and nothing else failed', () => {
    const flat = judgeSeries(
      series(10, () => 100),
      60,
      0.1,
      1,
    );
    const short = judgeSeries([{ t: 61, v: 100 }], 60, 0.1, 1);
    const v = verdict(memory(short, short), clean, 0.1, 1);
    assert.deepEqual([v.outcome, v.ok, SOAK_EXIT[v.outcome]], ['tooShort', false, 3]);
    assert.match(verdictLine(v, 0.1, 1), /^soak verdict: too short to judge: /);
    assert.equal(verdict(memory(flat, short), clean, 0.1, 1).outcome, 'tooShort');
    // A failed check fails the run however short it was.
    const bad = verdict(memory(short, short), { ...clean, duplicates: 1n }, 0.1, 1);
    assert.equal(bad.outcome, 'fail');
    assert.match(verdictLine(bad, 0.1, 1), /^soak verdict: FAIL: /);
    assert.equal(verdict(memory(flat, flat), clean, 0.1, 1).outcome, 'pass');
    assert.notEqual(SOAK_EXIT.tooShort, SOAK_EXIT.fail);
  });
});
