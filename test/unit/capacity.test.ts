// Capacity forecasts: the rate chosen from Redis's and MySQL's windows, remaining counter
// values, when a tag runs out at the current rate (sharded tags at their first shard), rule
// counters against their period's end, snowflake layouts against their end of time. The clock
// is a number moved by hand.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MIN_WINDOW_MS,
  combine,
  counterRemaining,
  forecast,
  rateOf,
  ruleForecast,
  snowflakeForecast,
} from '../../src/core/capacity.js';
import { PRESETS, runsOutAt } from '../../src/core/snowflake-layout.js';

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0);

describe('rateOf', () => {
  it("takes Redis's window once it spans MIN_WINDOW_MS", () => {
    assert.equal(rateOf({ ids: 20_000, ms: MIN_WINDOW_MS }, { ids: 1, ms: 1000 }), 2000);
    assert.equal(rateOf({ ids: 600, ms: 60_000 }), 10);
  });
  it("prefers the longer window while Redis's is short (just after an install)", () => {
    assert.equal(rateOf({ ids: 3, ms: 2 }, { ids: 36_000, ms: 3_600_000 }), 10);
    assert.equal(rateOf({ ids: 0, ms: 500 }, { ids: 5000, ms: 1000 }), 5000);
  });
  it('falls back to a short Redis window, and says nothing without any', () => {
    assert.equal(rateOf({ ids: 50, ms: 500 }, undefined), 100);
    assert.equal(rateOf({ ids: 50, ms: 500 }, { ids: 0, ms: 0 }), 100, 'a longer window of no time says nothing');
    assert.equal(rateOf(undefined, undefined), undefined);
    assert.equal(rateOf({ ids: 10, ms: 0 }), undefined);
  });
});

describe('forecast', () => {
  it('runs out after remaining / rate seconds', () => {
    const f = forecast(3600, 2, T0);
    assert.equal(f.exhaustionSeconds, 1800);
    assert.equal(f.runsOutAtMs, T0 + 1_800_000);
    assert.equal(f.rate, 2);
    assert.equal(f.remaining, 3600);
  });
  it('never runs out at rate 0 or unknown', () => {
    for (const r of [0, undefined, -1, NaN]) {
      const f = forecast(100, r, T0);
      assert.equal(f.exhaustionSeconds, Infinity);
      assert.equal(f.runsOutAtMs, null);
      assert.equal(f.rate, 0);
    }
  });
  it('has no date for an end past what a Date holds (2^53 IDs at a trickle)', () => {
    const f = forecast(2 ** 53 - 1, 0.001, T0);
    assert.ok(Number.isFinite(f.exhaustionSeconds) && f.exhaustionSeconds > 1e15);
    assert.equal(f.runsOutAtMs, null);
  });
  it('is out now when nothing is left, whatever the rate', () => {
    assert.deepEqual(forecast(0, 0, T0), { remaining: 0, rate: 0, exhaustionSeconds: 0, runsOutAtMs: T0 });
    assert.equal(forecast(-5, 10, T0).remaining, 0);
  });
  it('moves with the clock: the same state forecasts the same instant', () => {
    const a = forecast(1000, 10, T0);
    const b = forecast(900, 10, T0 + 10_000);
    assert.equal(a.runsOutAtMs, b.runsOutAtMs);
  });
});

describe('counterRemaining', () => {
  it('adds what MySQL has not allocated up to the limit and what Redis still holds', () => {
    assert.equal(counterRemaining(10_000, 2000, 150), 8150);
    assert.equal(counterRemaining(10_000, 10_000, 150), 150, 'the last segment is in Redis');
    assert.equal(counterRemaining(10_000, 10_000, 0), 0);
    assert.equal(counterRemaining(100, 0, 0), 100, 'nothing allocated yet');
  });
});

describe('combine (sharded tags)', () => {
  it('sums remaining and rate and runs out at the first shard to run out', () => {
    const a = forecast(1000, 1, T0); // 1000 s
    const b = forecast(100, 1, T0); // 100 s
    const c = forecast(5000, 0, T0); // never
    const t = combine([a, b, c], T0);
    assert.equal(t.remaining, 6100);
    assert.equal(t.rate, 2);
    assert.equal(t.exhaustionSeconds, 100);
    assert.equal(t.runsOutAtMs, T0 + 100_000);
  });
  it('never runs out when no shard does, and is empty without shards', () => {
    assert.equal(combine([forecast(5, 0, T0), forecast(7, 0, T0)], T0).exhaustionSeconds, Infinity);
    assert.equal(combine([], T0).remaining, 0);
  });
});

describe('ruleForecast', () => {
  const hourEnd = T0 + 3_600_000;
  it('runs out before the reset when remaining / rate is shorter than the rest of the period', () => {
    const f = ruleForecast(1000, 1, T0, hourEnd);
    assert.equal(f.runsOutBeforeReset, true);
    assert.equal(f.exhaustionSeconds, 1000);
    assert.equal(f.runsOutAtMs, T0 + 1_000_000);
    assert.equal(f.periodEndSeconds, 3600);
  });
  it('does not run out when the period resets the counter first', () => {
    const f = ruleForecast(5000, 1, T0, hourEnd);
    assert.equal(f.runsOutBeforeReset, false);
    assert.equal(f.exhaustionSeconds, Infinity);
    assert.equal(f.runsOutAtMs, null);
    assert.equal(f.rate, 1);
  });
  it('decides again as the clock moves towards the reset', () => {
    // 3200 s before the reset: 3300 left at 1/s lasts past it, at 1.25/s (2640 s) it does not.
    assert.equal(ruleForecast(3300, 1, T0 + 400_000, hourEnd).runsOutBeforeReset, false);
    assert.equal(ruleForecast(3300, 1.25, T0 + 400_000, hourEnd).runsOutBeforeReset, true);
  });
  it('a counter used up is out now; a rule without reset runs out at the rate alone', () => {
    assert.equal(ruleForecast(0, 0, T0, hourEnd).exhaustionSeconds, 0);
    const never = ruleForecast(10, 1, T0, Infinity);
    assert.equal(never.periodEndSeconds, Infinity);
    assert.equal(never.exhaustionSeconds, 10);
  });
});

describe('snowflakeForecast', () => {
  it("counts down to the layout's end of time", () => {
    const l = PRESETS.uid; // 28-bit seconds from 2020: ends in 2028
    const end = runsOutAt(l).getTime();
    assert.deepEqual(snowflakeForecast(l, end - 86_400_000), { exhaustionSeconds: 86_400, runsOutAtMs: end });
    assert.equal(snowflakeForecast(l, end + 5).exhaustionSeconds, 0);
    const wide = { ...l, timeBits: 50 }; // 2^50 seconds: past the year 275760
    assert.equal(snowflakeForecast(wide, T0).runsOutAtMs, null);
    assert.ok(snowflakeForecast(wide, T0).exhaustionSeconds > 1e15);
  });
});
