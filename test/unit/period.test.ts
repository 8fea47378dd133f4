// Local time and reset periods: UTC, a fixed-offset zone (Asia/Shanghai), a DST zone
// (America/New_York) across both changes, a zone that skipped midnight, and properties that
// hold for every instant.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_TIME_ZONE,
  instantsAtWall,
  isTimeZone,
  localParts,
  localWallMs,
  msUntilNextPeriod,
  nextPeriodChange,
  offsetMs,
  periodEnd,
  periodOf,
  periodStart,
  validateTimeZone,
} from '../../src/core/period.js';
import { SpecProblems } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';

const NY = 'America/New_York';
const SH = 'Asia/Shanghai';
const H = 3_600_000;
const DAY = 24 * H;
const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0) => Date.UTC(y, mo - 1, d, h, mi, s, ms);
const parts = (ms: number, zone: string) => {
  const p = localParts(ms, zone);
  return [p.year, p.month, p.day, p.hour, p.minute, p.second, p.millisecond];
};
/** Period index of a local wall-clock time. */
const wallPeriod = (y: number, mo: number, d: number, h: number, mi: number, resetSeconds: number) =>
  Math.floor(utc(y, mo, d, h, mi) / (resetSeconds * 1000));

describe('time zones', () => {
  it('validates and canonicalises names', () => {
    assert.equal(DEFAULT_TIME_ZONE, 'UTC');
    assert.equal(validateTimeZone('UTC'), 'UTC');
    assert.equal(validateTimeZone('utc'), 'UTC');
    assert.equal(validateTimeZone('Etc/UTC'), 'UTC');
    assert.equal(validateTimeZone('asia/shanghai'), SH);
    assert.equal(validateTimeZone(NY), NY);
    for (const bad of ['Mars/Olympus_Mons', '', 'x'.repeat(65), 42, null, undefined]) {
      assert.ok(!isTimeZone(bad), String(bad));
      assert.throws(
        () => validateTimeZone(bad),
        (e: unknown) => e instanceof SpecProblems && /is not a known IANA time zone/.test(e.message),
      );
    }
    assert.throws(() => validateTimeZone('Mars/Olympus_Mons'), {
      message: 'time_zone "Mars/Olympus_Mons" is not a known IANA time zone (e.g. "UTC", "Asia/Shanghai")',
    });
  });
});

describe('localParts', () => {
  it('reads UTC', () => {
    assert.deepEqual(parts(utc(2025, 5, 14, 9, 8, 7, 6), 'UTC'), [2025, 5, 14, 9, 8, 7, 6]);
    assert.deepEqual(parts(utc(2025, 5, 14, 9, 8, 7, 6), DEFAULT_TIME_ZONE), [2025, 5, 14, 9, 8, 7, 6]);
    assert.deepEqual(parts(0, 'UTC'), [1970, 1, 1, 0, 0, 0, 0]);
    assert.deepEqual(parts(-1, 'UTC'), [1969, 12, 31, 23, 59, 59, 999]);
  });

  it('reads Asia/Shanghai (UTC+8, no DST)', () => {
    assert.deepEqual(parts(utc(2025, 5, 13, 16, 30, 0, 250), SH), [2025, 5, 14, 0, 30, 0, 250]);
    assert.deepEqual(parts(utc(2024, 12, 31, 16), SH), [2025, 1, 1, 0, 0, 0, 0]);
    assert.equal(offsetMs(utc(2025, 1, 1), SH), 8 * H);
    assert.equal(offsetMs(utc(2025, 7, 1), SH), 8 * H);
  });

  it('reads America/New_York across both DST changes', () => {
    // 2025-03-09 02:00 EST → 03:00 EDT at 07:00Z.
    assert.deepEqual(parts(utc(2025, 3, 9, 6, 59, 59, 999), NY), [2025, 3, 9, 1, 59, 59, 999]);
    assert.deepEqual(parts(utc(2025, 3, 9, 7), NY), [2025, 3, 9, 3, 0, 0, 0]);
    // 2025-11-02 02:00 EDT → 01:00 EST at 06:00Z: 01:xx happens twice.
    assert.deepEqual(parts(utc(2025, 11, 2, 5, 30), NY), [2025, 11, 2, 1, 30, 0, 0]);
    assert.deepEqual(parts(utc(2025, 11, 2, 6, 30), NY), [2025, 11, 2, 1, 30, 0, 0]);
    assert.equal(offsetMs(utc(2025, 7, 1), NY), -4 * H);
    assert.equal(offsetMs(utc(2025, 12, 1), NY), -5 * H);
  });

  it('keeps zones apart and milliseconds exact while caching per second', () => {
    const t = utc(2025, 5, 13, 16, 30, 5);
    for (let ms = 0; ms < 1000; ms += 111) {
      assert.deepEqual(parts(t + ms, SH), [2025, 5, 14, 0, 30, 5, ms]);
      assert.deepEqual(parts(t + ms, 'UTC'), [2025, 5, 13, 16, 30, 5, ms]);
      assert.deepEqual(parts(t + ms, NY), [2025, 5, 13, 12, 30, 5, ms]);
      assert.equal(localWallMs(t + ms, SH), t + ms + 8 * H);
    }
    assert.deepEqual(parts(t + 1000, SH), [2025, 5, 14, 0, 30, 6, 0]);
    assert.deepEqual(parts(t - 1, SH), [2025, 5, 14, 0, 30, 4, 999]);
  });

  it('refuses times that are not numbers', () => {
    assert.throws(() => localParts(Number.NaN, 'UTC'), RangeError);
    assert.throws(() => localParts(Number.POSITIVE_INFINITY, 'UTC'), RangeError);
  });
});

describe('periodOf', () => {
  it('is always 0 without a reset', () => {
    for (const t of [0, utc(2025, 5, 14), utc(2099, 1, 1)]) assert.equal(periodOf(t, NY, 0), 0);
  });

  it('counts local days and hours since 1970-01-01 00:00 local', () => {
    assert.equal(periodOf(utc(1970, 1, 1), 'UTC', 86_400), 0);
    assert.equal(periodOf(utc(2025, 5, 14, 23, 59, 59, 999), 'UTC', 86_400), 20_222);
    assert.equal(periodOf(utc(2025, 5, 15), 'UTC', 86_400), 20_223);
    assert.equal(periodOf(utc(2025, 5, 14, 15, 59, 59, 999), SH, 86_400), 20_222);
    assert.equal(periodOf(utc(2025, 5, 14, 16), SH, 86_400), 20_223); // local midnight
    assert.equal(periodOf(utc(2025, 5, 14, 9, 30), 'UTC', 3600), 20_222 * 24 + 9);
    assert.equal(periodOf(utc(2025, 5, 14, 9, 30), SH, 3600), 20_222 * 24 + 17);
    assert.equal(periodOf(utc(2025, 5, 14, 9, 30), 'UTC', 60), (20_222 * 24 + 9) * 60 + 30);
  });

  it('refuses a bad reset period', () => {
    assert.throws(() => periodOf(0, 'UTC', -1), RangeError);
    assert.throws(() => periodOf(0, 'UTC', 1.5), RangeError);
  });
});

describe('period boundaries', () => {
  it('days in UTC and Shanghai start at local midnight', () => {
    const d = periodOf(utc(2025, 5, 14, 12), 'UTC', 86_400);
    assert.equal(periodStart(d, 'UTC', 86_400), utc(2025, 5, 14));
    assert.equal(periodEnd(d, 'UTC', 86_400), utc(2025, 5, 15));
    const s = periodOf(utc(2025, 5, 14, 12), SH, 86_400);
    assert.equal(periodStart(s, SH, 86_400), utc(2025, 5, 13, 16));
    assert.equal(periodEnd(s, SH, 86_400), utc(2025, 5, 14, 16));
    assert.equal(msUntilNextPeriod(utc(2025, 5, 14, 12), SH, 86_400), 4 * H);
    assert.equal(msUntilNextPeriod(utc(2025, 5, 14, 15, 59, 59, 999), SH, 86_400), 1);
    assert.equal(msUntilNextPeriod(utc(2025, 5, 14, 16), SH, 86_400), DAY);
  });

  it('a spring-forward day lasts 23 hours and its missing hour is an empty period', () => {
    const d = periodOf(utc(2025, 3, 9, 12), NY, 86_400);
    assert.equal(periodStart(d, NY, 86_400), utc(2025, 3, 9, 5));
    assert.equal(periodEnd(d, NY, 86_400), utc(2025, 3, 10, 4));
    const h2 = wallPeriod(2025, 3, 9, 2, 0, 3600);
    assert.equal(periodStart(h2, NY, 3600), utc(2025, 3, 9, 7));
    assert.equal(periodEnd(h2, NY, 3600), utc(2025, 3, 9, 7));
    assert.equal(periodEnd(h2 - 1, NY, 3600), utc(2025, 3, 9, 7));
    assert.equal(periodOf(utc(2025, 3, 9, 7), NY, 3600), h2 + 1);
    assert.equal(msUntilNextPeriod(utc(2025, 3, 9, 6, 30), NY, 3600), 30 * 60_000);
    assert.deepEqual(instantsAtWall(utc(2025, 3, 9, 2, 30), NY), []);
  });

  it('a fall-back day lasts 25 hours and the repeated hour is one two-hour period', () => {
    const d = periodOf(utc(2025, 11, 2, 12), NY, 86_400);
    assert.equal(periodEnd(d, NY, 86_400) - periodStart(d, NY, 86_400), 25 * H);
    const h1 = wallPeriod(2025, 11, 2, 1, 0, 3600);
    assert.equal(periodOf(utc(2025, 11, 2, 5, 30), NY, 3600), h1);
    assert.equal(periodOf(utc(2025, 11, 2, 6, 30), NY, 3600), h1);
    assert.equal(periodStart(h1, NY, 3600), utc(2025, 11, 2, 5));
    assert.equal(periodEnd(h1, NY, 3600), utc(2025, 11, 2, 7));
    assert.equal(msUntilNextPeriod(utc(2025, 11, 2, 5, 30), NY, 3600), 90 * 60_000);
    assert.deepEqual(instantsAtWall(utc(2025, 11, 2, 1, 30), NY), [utc(2025, 11, 2, 5, 30), utc(2025, 11, 2, 6, 30)]);
  });

  it('short periods step back into the repeated hour, and end only after it', () => {
    const m = wallPeriod(2025, 11, 2, 1, 30, 60);
    assert.equal(periodOf(utc(2025, 11, 2, 5, 30, 20), NY, 60), m);
    assert.equal(periodOf(utc(2025, 11, 2, 6, 30, 20), NY, 60), m);
    assert.equal(periodStart(m, NY, 60), utc(2025, 11, 2, 5, 30));
    assert.equal(periodEnd(m, NY, 60), utc(2025, 11, 2, 6, 31));
    // 01:59:30 EDT: the next change is the step back to 01:00 EST, 30 s later.
    const t = utc(2025, 11, 2, 5, 59, 30);
    assert.equal(nextPeriodChange(t, NY, 60), utc(2025, 11, 2, 6));
    assert.equal(msUntilNextPeriod(t, NY, 60), 30_000);
    assert.ok(periodOf(utc(2025, 11, 2, 6), NY, 60) < periodOf(t, NY, 60));
    assert.equal(msUntilNextPeriod(utc(2025, 11, 2, 6, 30), NY, 60), 60_000);
  });

  it('a day that starts at 01:00 (America/Sao_Paulo skipped midnight in 2018) starts at the jump', () => {
    const SP = 'America/Sao_Paulo';
    const d = periodOf(utc(2018, 11, 4, 12), SP, 86_400);
    assert.equal(periodStart(d, SP, 86_400), utc(2018, 11, 4, 3));
    assert.equal(periodEnd(d, SP, 86_400), utc(2018, 11, 5, 2));
    assert.equal(periodEnd(d - 1, SP, 86_400), utc(2018, 11, 4, 3));
  });

  it('has one period for all time without a reset', () => {
    assert.equal(periodStart(0, NY, 0), Number.NEGATIVE_INFINITY);
    assert.equal(periodEnd(0, NY, 0), Number.POSITIVE_INFINITY);
    assert.equal(msUntilNextPeriod(utc(2025, 1, 1), NY, 0), Number.POSITIVE_INFINITY);
  });
});

describe('period properties', () => {
  const r = rng(SEED);
  const ZONES = ['UTC', SH, NY, 'Europe/London', 'Australia/Lord_Howe', 'America/Sao_Paulo'];
  const RESETS = [1, 60, 90, 1800, 3600, 7200, 86_400, 7 * 86_400];
  /** Offset changes of each zone, to sample around them. */
  const CHANGES: Record<string, number[]> = {
    UTC: [utc(2025, 1, 1)],
    [SH]: [utc(2025, 1, 1)],
    [NY]: [utc(2025, 3, 9, 7), utc(2025, 11, 2, 6)],
    'Europe/London': [utc(2025, 3, 30, 1), utc(2025, 10, 26, 1)],
    'Australia/Lord_Howe': [utc(2025, 4, 5, 15), utc(2025, 10, 4, 16)],
    'America/Sao_Paulo': [utc(2018, 11, 4, 3), utc(2019, 2, 17, 2)],
  };

  it(`every instant lies in its period, and the period changes exactly at nextPeriodChange (seed ${SEED})`, () => {
    for (let n = 0; n < 1000; n++) {
      const zone = r.pick(ZONES);
      const R = r.pick(RESETS);
      const t =
        r.next() < 0.5
          ? utc(2015, 1, 1) + Math.floor(r.next() * 12 * 365 * DAY)
          : r.pick(CHANGES[zone]) + Math.floor((r.next() * 2 - 1) * 3 * H);
      const p = periodOf(t, zone, R);
      const ctx = `${zone} R=${R} t=${new Date(t).toISOString()}`;
      assert.ok(periodStart(p, zone, R) <= t, ctx);
      assert.ok(t < periodEnd(p, zone, R), ctx);
      const next = nextPeriodChange(t, zone, R);
      assert.ok(next > t, ctx);
      assert.equal(periodOf(next - 1, zone, R), p, ctx);
      assert.notEqual(periodOf(next, zone, R), p, ctx);
    }
  });

  it('periods of whole hours never go backwards, minute by minute through DST changes', () => {
    const changes = [utc(2025, 3, 9, 7), utc(2025, 11, 2, 6)];
    for (const zone of [NY, 'Europe/London', 'Australia/Lord_Howe']) {
      for (const R of [3600, 7200, 86_400]) {
        for (const c of changes) {
          let last = Number.NEGATIVE_INFINITY;
          for (let t = c - 3 * H; t < c + 3 * H; t += 60_000) {
            const p = periodOf(t, zone, R);
            assert.ok(p >= last, `${zone} R=${R} at ${new Date(t).toISOString()}`);
            last = p;
          }
        }
      }
    }
    // Lord Howe changes by 30 minutes; check its own dates too (2025-04-06 and 2025-10-05).
    for (const c of [utc(2025, 4, 5, 15), utc(2025, 10, 4, 16)]) {
      let last = Number.NEGATIVE_INFINITY;
      for (let t = c - 3 * H; t < c + 3 * H; t += 60_000) {
        const p = periodOf(t, 'Australia/Lord_Howe', 3600);
        assert.ok(p >= last);
        last = p;
      }
    }
  });

  it('two instants with the same wall clock share a period (what keeps rendered IDs unique)', () => {
    for (const [a, b] of [
      [utc(2025, 11, 2, 5, 15), utc(2025, 11, 2, 6, 15)],
      [utc(2025, 11, 2, 5, 59, 59), utc(2025, 11, 2, 6, 59, 59)],
    ]) {
      assert.equal(localWallMs(a, NY), localWallMs(b, NY));
      for (const R of [1, 60, 900, 3600, 86_400]) assert.equal(periodOf(a, NY, R), periodOf(b, NY, R));
    }
  });
});
