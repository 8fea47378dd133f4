// Which periods of an imported rule could render IDs that id_server already rendered, when its
// zone cannot be read from its data. id_server decides a counter's period with glibc's
// `timezone` (the zone's standard offset, without daylight saving: framework/time_util.h,
// is_same_cycle) but renders the dates of its IDs with the local time (`now` of create_id,
// daylight saving included). Its counter table keeps the instant of each save (update_time),
// not the zone. So a save at instant T belongs to the period that holds T + o for the
// machine's standard offset o, which may be anything from UTC-12 to UTC+14, and the IDs of that
// period carry the wall-clock times of that period moved by daylight saving (up to 2 hours
// ahead, 1 behind). The IDs of idmint's period p carry the wall-clock times of p in the rule's
// zone. Two IDs can be equal only when their time fields are equal, so idmint's period p must
// continue above a save when p's wall-clock times and the save's possible wall-clock times
// render alike: they meet at the granularity of the template's finest time token. Whatever the
// zone really was, those periods cover it; a wrong zone given to the import only wastes
// counters of a few more periods. Pure.
import { localWallMs, offsetMs, periodEnd, periodOf } from './period.js';

const HOUR_MS = 3_600_000;
/** Standard offsets a machine can have had: UTC-12 (Baker Island) to UTC+14 (Kiribati). */
export const OFFSETS_MS = { min: -12 * HOUR_MS, max: 14 * HOUR_MS } as const;
/**
 * What daylight saving adds to the standard offset: 30 min (Lord Howe), 2 h (double summer time), -1 h (Dublin's
 * winter).
 */
export const DST_MS = { min: -1 * HOUR_MS, max: 2 * HOUR_MS } as const;

/** A span of wall-clock time, as milliseconds since 1970-01-01 00:00 local, [lo, hi). */
export interface WallSpan {
  readonly lo: number;
  readonly hi: number;
}

const QUARTER_MS = 15 * 60_000;
/** Every zone's offset is a whole number of quarter hours (Kathmandu +5:45, Chatham +12:45). */
const STANDARD_OFFSETS: readonly number[] = Array.from(
  { length: (OFFSETS_MS.max - OFFSETS_MS.min) / QUARTER_MS + 1 },
  (_, i) => OFFSETS_MS.min + i * QUARTER_MS,
);
/** What daylight saving has added to a standard offset: none, 30 min, 1 h, 2 h, or -1 h. */
const DST_SHIFTS: readonly number[] = [DST_MS.min, 0, HOUR_MS / 2, HOUR_MS, DST_MS.max];

/** Spans sorted and joined where they touch or overlap. */
function merge(spans: WallSpan[]): WallSpan[] {
  const out: WallSpan[] = [];
  for (const span of [...spans].sort((a, b) => a.lo - b.lo)) {
    const last = out[out.length - 1];
    if (last && span.lo <= last.hi) out[out.length - 1] = { lo: last.lo, hi: Math.max(last.hi, span.hi) };
    else out.push(span);
  }
  return out;
}

/**
 * Pushes standard-time period `period` (of `periodMs`) as each daylight-saving shift moves its wall
 * times, each cut after `lastStdMs` (the standard-time wall clock of the last instant anything
 * was rendered at) moved by the same shift.
 */
function pushShiftedPeriod(spans: WallSpan[], period: number, periodMs: number, lastStdMs: number): void {
  for (const shift of DST_SHIFTS) {
    const lo = period * periodMs + shift;
    const hi = Math.min(lo + periodMs, lastStdMs + shift + 1);
    if (hi > lo) spans.push({ lo, hi });
  }
}

/**
 * The wall-clock times id_server could have rendered with the counters of the period a save
 * at `savedMs` belongs to, under any standard offset and daylight saving, up to the import at
 * `importMs` (id_server is stopped before it). `resetSeconds` is the rule's as id_server ran
 * it; 0 has no period boundary to find (id_server starts each request's counter anew), so every
 * time up to the import counts. A save later than the import (a clock that ran ahead) counts
 * for the import's own period as well: a node whose clock went back kept numbering that later
 * period (generate_time keeps the latest update_time) with the dates of the clock, and until
 * then it rendered the dates of its clock running ahead.
 */
export function savedSpans(savedMs: number, resetSeconds: number, importMs: number): WallSpan[] {
  // Rendering happens at instants up to the import, or up to the save of a clock ahead.
  const last = Math.max(importMs, savedMs);
  if (resetSeconds === 0) return [{ lo: Number.NEGATIVE_INFINITY, hi: last + OFFSETS_MS.max + DST_MS.max }];
  const resetMs = resetSeconds * 1000;
  const spans: WallSpan[] = [];
  for (const at of savedMs > importMs ? [savedMs, importMs] : [savedMs]) {
    for (const offset of STANDARD_OFFSETS)
      pushShiftedPeriod(spans, Math.floor((at + offset) / resetMs), resetMs, last + offset);
  }
  return merge(spans);
}

/**
 * savedSpans for a save known only by the local time of its log line (`wallMs`, daylight saving
 * included): its period, by standard time, holds wallMs less the saving then in effect, which
 * may be any of DST_SHIFTS, and that period's IDs carry its times moved by any saving. Its
 * instant lies anywhere from wallMs - UTC+14 - 2 h to wallMs + 12 h + 1 h, so it may be later than
 * the import: then the import's own period counts as well, as in savedSpans.
 */
export function loggedSpans(wallMs: number, resetSeconds: number, importMs: number): WallSpan[] {
  const latest = wallMs - OFFSETS_MS.min - DST_MS.min;
  const ahead = latest > importMs ? savedSpans(importMs, resetSeconds, importMs) : [];
  // The standard-time wall clock of the last instant anything was rendered at, in any zone.
  const lastStd = Math.max(importMs + OFFSETS_MS.max, wallMs - DST_MS.min);
  if (resetSeconds === 0) return merge([...ahead, { lo: Number.NEGATIVE_INFINITY, hi: lastStd + DST_MS.max + 1 }]);
  const resetMs = resetSeconds * 1000;
  const spans: WallSpan[] = [...ahead];
  for (const saving of DST_SHIFTS) pushShiftedPeriod(spans, Math.floor((wallMs - saving) / resetMs), resetMs, lastStd);
  return merge(spans);
}

/** Time tokens from the coarsest to the finest, as rule-template names them. */
const FINEST = ['{yyyy}', '{yy}', '{year%100}', '{year%10}', '{MM}', '{dd}', '{HH}', '{mm}', '{ss}', '{SSS}'] as const;

/** The start of the bucket of `wall` that the template's finest token tells apart. */
function bucketStart(wall: number, finest: string): number {
  const date = new Date(wall);
  const [year, month, day, hour, minute, second] = [
    date.getUTCFullYear(),
    date.getUTCMonth(),
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
  ];
  const at = (...fields: number[]) => {
    const start = new Date(0);
    start.setUTCFullYear(fields[0], fields[1] ?? 0, fields[2] ?? 1);
    start.setUTCHours(fields[3] ?? 0, fields[4] ?? 0, fields[5] ?? 0, 0);
    return start.getTime();
  };
  switch (finest) {
    case '{yyyy}':
    case '{yy}':
    case '{year%100}':
    case '{year%10}':
      return at(year);
    case '{MM}':
      return at(year, month);
    case '{dd}':
      return at(year, month, day);
    case '{HH}':
      return at(year, month, day, hour);
    case '{mm}':
      return at(year, month, day, hour, minute);
    case '{ss}':
      return at(year, month, day, hour, minute, second);
    default:
      return wall;
  }
}

/** The end of the bucket holding wall - 1 (exclusive), for the span's upper edge. */
function bucketEnd(wallExclusive: number, finest: string): number {
  const start = bucketStart(wallExclusive - 1, finest);
  if (finest === '{SSS}' || !FINEST.includes(finest as (typeof FINEST)[number])) return wallExclusive;
  // The next bucket's start: step past this one by its longest length, then back to its start.
  const longest: Record<string, number> = {
    '{ss}': 1000,
    '{mm}': 60_000,
    '{HH}': HOUR_MS,
    '{dd}': 24 * HOUR_MS,
    '{MM}': 31 * 24 * HOUR_MS,
  };
  return bucketStart(start + (longest[finest] ?? 366 * 24 * HOUR_MS), finest);
}

/** The span widened to whole buckets of the template's finest time token. */
export function widenToBuckets(span: WallSpan, finest: string | null): WallSpan {
  if (finest === null || !Number.isFinite(span.lo)) return span;
  return { lo: bucketStart(span.lo, finest), hi: bucketEnd(span.hi, finest) };
}

/**
 * idmint's periods (of a rule in `zone` resetting every `resetSeconds`) that the import at
 * `importMs` can still reach and whose wall-clock times meet one of `spans` (widened to whole
 * buckets of the template's `finest` time token), ascending; none for a span that lies wholly
 * before the wall-clock times idmint can still render. resetSeconds 0: the one period 0, which
 * a template without a time token shares with every save.
 */
export function periodsMeeting(
  spans: readonly WallSpan[],
  finest: string | null,
  zone: string,
  resetSeconds: number,
  importMs: number,
): number[] {
  if (spans.length === 0) return [];
  if (resetSeconds === 0) return [0];
  const resetMs = resetSeconds * 1000;
  // A fall-back can bring back the period before the current one: reachable until its end.
  let first = periodOf(importMs, zone, resetSeconds);
  while (periodEnd(first - 1, zone, resetSeconds) > importMs) first--;
  // A template without a time token writes the same IDs at every time: a save's counters
  // repeat in every period (such a template is forced); at least the ones up to the span's end.
  if (finest === null) {
    const to = Math.max(first, Math.ceil(Math.max(...spans.map((s) => s.hi)) / resetMs) - 1);
    return Array.from({ length: to - first + 1 }, (_, i) => first + i);
  }
  // Wall-clock times idmint can still render lie after the import's, less a fall-back.
  const wallNow = localWallMs(importMs, zone) - DST_MS.max;
  const live = merge(spans.map((s) => widenToBuckets(s, finest))).filter((s) => s.hi > wallNow);
  if (live.length === 0) return [];
  const out = new Set<number>();
  for (const span of live) {
    const to = Math.ceil(span.hi / resetMs) - 1;
    for (let p = Math.max(first, Number.isFinite(span.lo) ? Math.floor(span.lo / resetMs) : first); p <= to; p++)
      out.add(p);
  }
  return [...out].sort((a, b) => a - b);
}

/** Seconds one bucket of a time token spans (its shortest: a 28-day month, a 365-day year); Infinity without one. */
export function bucketSeconds(finest: string | null): number {
  const seconds: Record<string, number> = {
    '{SSS}': 0.001,
    '{ss}': 1,
    '{mm}': 60,
    '{HH}': 3600,
    '{dd}': 86_400,
    '{MM}': 28 * 86_400,
  };
  if (finest === null) return Number.POSITIVE_INFINITY;
  return seconds[finest] ?? 365 * 86_400;
}

/** A zone's standard offset in the year of `ms`: the smaller of January's and July's. */
export function standardOffsetMs(ms: number, zone: string): number {
  const year = new Date(ms).getUTCFullYear();
  return Math.min(offsetMs(Date.UTC(year, 0, 1), zone), offsetMs(Date.UTC(year, 6, 1), zone));
}

/**
 * id_server's daylight saving quirk, for a zone taken as the right one: the period it gave a
 * save (by standard time) and the wall-clock span at the start of that period during which it
 * still rendered the previous period's counters with this period's dates (local time ran ahead
 * of standard time). None when daylight saving was not in effect at that start.
 */
export function lateResetSpan(savedMs: number, zone: string, resetSeconds: number): WallSpan[] {
  if (resetSeconds === 0) return [];
  const resetMs = resetSeconds * 1000;
  const std = standardOffsetMs(savedMs, zone);
  const start = Math.floor((savedMs + std) / resetMs) * resetMs;
  const at = start - std;
  const ahead = localWallMs(at, zone) - (at + std);
  return ahead > 0 ? [{ lo: start, hi: start + ahead }] : [];
}
