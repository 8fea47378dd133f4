// Local wall-clock time in an IANA time zone, and the reset periods of rule counters.
//
// A period is a run of `resetSeconds` of *local wall-clock* time, counted from
// 1970-01-01 00:00 local: 86400 → each local day (starting at local midnight), 3600 → each
// local hour. resetSeconds 0 → one period (index 0) for all time.
//
// Daylight saving time. Period indexes are computed from the wall clock the IDs are rendered
// with, so an ID's time tokens always belong to the period whose counter numbered it:
// - spring forward (a gap): wall-clock times that never happen belong to no instant; a period
//   lying wholly in the gap is empty (its start equals its end, at the transition);
// - fall back (an overlap): a repeated wall-clock time maps to the same period both times, so
//   the counter of that period simply continues and the repeated rendering stays unique. For
//   reset periods that are whole hours the period index never decreases; for shorter ones (and
//   in zones that fall back across midnight) the index can step back to a period already
//   used, and that period's counter must still be there. `periodEnd` gives the instant after
//   which a period can never come back: keep a period's counter at least until then.
// Zones are assumed to change their UTC offset at most once within any two days.
import { SpecProblems } from './spec-problems.js';

export const DEFAULT_TIME_ZONE = 'UTC';

/** Local calendar and clock fields. month 1-12, day 1-31, hour 0-23. */
export interface LocalParts {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly millisecond: number;
}

const DAY_MS = 86_400_000;
/** Beyond the largest fall-back shift any zone has had (2 hours), with room to spare. */
const MAX_SHIFT_MS = 6 * 3_600_000;
/** Zones cached at once; more than any deployment has rules in different zones. */
const MAX_CACHED_ZONES = 256;

interface SecondParts {
  readonly sec: number;
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  /** Local wall-clock time of this second, as milliseconds since 1970-01-01 00:00 local. */
  readonly wallMs: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Zone names validated before, by their canonical spelling (each check builds a formatter). */
const canonicalZones = new Map<string, string>();
const lastSecond = new Map<string, SecondParts>();

function isUtc(zone: string): boolean {
  return zone === 'UTC';
}

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    if (formatters.size >= MAX_CACHED_ZONES) formatters.clear();
    formatters.set(zone, format);
  }
  return format;
}

/** Date.UTC without its mapping of years 0-99 to 1900-1999. */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  return year >= 0 && year < 100 ? new Date(ms).setUTCFullYear(year) : ms;
}

/** The local fields of one whole second (uncached: one Intl call outside UTC). */
function computeSecond(sec: number, zone: string): SecondParts {
  const ms = sec * 1000;
  if (isUtc(zone)) {
    const date = new Date(ms);
    return {
      sec,
      year: date.getUTCFullYear(),
      month: date.getUTCMonth() + 1,
      day: date.getUTCDate(),
      hour: date.getUTCHours(),
      minute: date.getUTCMinutes(),
      second: date.getUTCSeconds(),
      wallMs: ms,
    };
  }
  let year = 0,
    month = 1,
    day = 1,
    hour = 0,
    minute = 0,
    second = 0;
  for (const part of formatter(zone).formatToParts(ms)) {
    switch (part.type) {
      case 'year':
        year = Number(part.value);
        break;
      case 'month':
        month = Number(part.value);
        break;
      case 'day':
        day = Number(part.value);
        break;
      case 'hour':
        hour = Number(part.value) % 24;
        break;
      case 'minute':
        minute = Number(part.value);
        break;
      case 'second':
        second = Number(part.value);
        break;
    }
  }
  return { sec, year, month, day, hour, minute, second, wallMs: utcMs(year, month, day, hour, minute, second) };
}

/** The local fields of `ms`'s second: cached per zone for the last second asked, the hot path. */
function cachedSecond(ms: number, zone: string): SecondParts {
  const sec = Math.floor(ms / 1000);
  const cached = lastSecond.get(zone);
  if (cached !== undefined && cached.sec === sec) return cached;
  const fresh = computeSecond(sec, zone);
  if (cached === undefined && lastSecond.size >= MAX_CACHED_ZONES) lastSecond.clear();
  lastSecond.set(zone, fresh);
  return fresh;
}

function checkMs(ms: number): void {
  if (!Number.isFinite(ms)) throw new RangeError(`time must be a finite number of milliseconds, got ${ms}`);
}

function checkReset(resetSeconds: number): void {
  if (!Number.isSafeInteger(resetSeconds) || resetSeconds < 0) {
    throw new RangeError(`reset_seconds must be a whole number of seconds, 0 or more, got ${resetSeconds}`);
  }
}

/** True when `name` is a time zone this runtime knows (IANA names, any letter case). */
export function isTimeZone(name: unknown): name is string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The canonical spelling of a time zone (`asia/shanghai` → `Asia/Shanghai`, `utc` → `UTC`),
 * to store with a rule. Throws SpecProblems for anything else.
 */
export function validateTimeZone(name: unknown): string {
  const known = typeof name === 'string' ? canonicalZones.get(name) : undefined;
  if (known !== undefined) return known;
  if (!isTimeZone(name)) {
    const shown = typeof name === 'string' ? `"${name.slice(0, 64)}"` : typeof name;
    throw new SpecProblems([`time_zone ${shown} is not a known IANA time zone (e.g. "UTC", "Asia/Shanghai")`]);
  }
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  const canonical = resolved === 'Etc/UTC' || resolved === 'Etc/GMT' ? 'UTC' : resolved;
  if (canonicalZones.size >= MAX_CACHED_ZONES) canonicalZones.clear();
  canonicalZones.set(name, canonical);
  return canonical;
}

/** The local date and time of `ms` in `zone` (a validated zone). One Intl call per zone per second. */
export function localParts(ms: number, zone: string = DEFAULT_TIME_ZONE): LocalParts {
  checkMs(ms);
  const parts = cachedSecond(ms, zone);
  return {
    year: parts.year,
    month: parts.month,
    day: parts.day,
    hour: parts.hour,
    minute: parts.minute,
    second: parts.second,
    millisecond: Math.floor(ms) - parts.sec * 1000,
  };
}

/** Local wall-clock time of `ms`, as milliseconds since 1970-01-01 00:00 local. */
export function localWallMs(ms: number, zone: string = DEFAULT_TIME_ZONE): number {
  checkMs(ms);
  const parts = cachedSecond(ms, zone);
  return parts.wallMs + (Math.floor(ms) - parts.sec * 1000);
}

/** The zone's UTC offset at `ms`, in milliseconds (local = UTC + offset). Uncached. */
export function offsetMs(ms: number, zone: string = DEFAULT_TIME_ZONE): number {
  checkMs(ms);
  const sec = Math.floor(ms / 1000);
  return computeSecond(sec, zone).wallMs - sec * 1000;
}

/** Uncached wall clock, for the boundary searches (they would only thrash the hot cache). */
function wallOf(ms: number, zone: string): number {
  const sec = Math.floor(ms / 1000);
  return computeSecond(sec, zone).wallMs + (ms - sec * 1000);
}

/** The period `ms` falls in. */
export function periodOf(ms: number, zone: string, resetSeconds: number): number {
  checkReset(resetSeconds);
  if (resetSeconds === 0) return 0;
  return Math.floor(localWallMs(ms, zone) / (resetSeconds * 1000));
}

/** The instants whose wall-clock time is exactly `wallMs`: none (a gap), one, or two (an overlap), ascending. */
export function instantsAtWall(wallMs: number, zone: string = DEFAULT_TIME_ZONE): number[] {
  checkMs(wallMs);
  const before = offsetMs(wallMs - DAY_MS, zone);
  const after = offsetMs(wallMs + DAY_MS, zone);
  const out: number[] = [];
  for (const offset of before === after ? [before] : [before, after]) {
    const instant = wallMs - offset;
    if (wallOf(instant, zone) === wallMs && !out.includes(instant)) out.push(instant);
  }
  return out.sort((a, b) => a - b);
}

/**
 * The first instant in (lo, hi] whose offset differs from the offset at lo, assuming at most
 * one change in between; undefined when the offsets at lo and hi agree.
 */
function offsetChange(lo: number, hi: number, zone: string): number | undefined {
  if (!(hi > lo)) return undefined;
  const offset = offsetMs(lo, zone);
  if (offsetMs(hi, zone) === offset) return undefined;
  // Offsets change on whole seconds: search seconds.
  let low = Math.floor(lo / 1000);
  let high = Math.ceil(hi / 1000);
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (offsetMs(mid * 1000, zone) === offset) low = mid;
    else high = mid;
  }
  return Math.max(high * 1000, Math.floor(lo) + 1);
}

/** When `wallMs` falls in a gap: the transition instant, where the wall clock jumps past it. */
function gapEnd(wallMs: number, zone: string): number {
  const before = offsetMs(wallMs - DAY_MS, zone);
  const after = offsetMs(wallMs + DAY_MS, zone);
  const lo = Math.min(wallMs - before, wallMs - after);
  const hi = Math.max(wallMs - before, wallMs - after);
  return offsetChange(lo, hi, zone) ?? hi;
}

/**
 * The first instant of `period`: the earliest instant whose wall clock reaches the period's
 * start (the transition itself when the start lies in a gap). -Infinity when resetSeconds is 0.
 */
export function periodStart(period: number, zone: string, resetSeconds: number): number {
  checkReset(resetSeconds);
  if (resetSeconds === 0) return Number.NEGATIVE_INFINITY;
  const startWall = period * resetSeconds * 1000;
  const at = instantsAtWall(startWall, zone);
  return at.length > 0 ? at[0] : gapEnd(startWall, zone);
}

/**
 * The exclusive end of `period`: the last instant the wall clock reaches the next period's
 * start. From then on `period` never comes back (a fall-back can return to it before then).
 * +Infinity when resetSeconds is 0.
 */
export function periodEnd(period: number, zone: string, resetSeconds: number): number {
  checkReset(resetSeconds);
  if (resetSeconds === 0) return Number.POSITIVE_INFINITY;
  const nextStartWall = (period + 1) * resetSeconds * 1000;
  const at = instantsAtWall(nextStartWall, zone);
  return at.length > 0 ? at[at.length - 1] : gapEnd(nextStartWall, zone);
}

/**
 * The first instant after `ms` at which the period changes: usually the next period's start;
 * during a fall-back it can be the instant the wall clock steps back into an earlier period.
 * +Infinity when resetSeconds is 0.
 */
export function nextPeriodChange(ms: number, zone: string, resetSeconds: number): number {
  checkMs(ms);
  checkReset(resetSeconds);
  if (resetSeconds === 0) return Number.POSITIVE_INFINITY;
  const period = periodOf(ms, zone, resetSeconds);
  const nextStartWall = (period + 1) * resetSeconds * 1000;
  const at = instantsAtWall(nextStartWall, zone).filter((t) => t > ms);
  let next = at.length > 0 ? at[0] : gapEnd(nextStartWall, zone);
  if (!(next > ms)) next = Math.floor(ms) + 1; // unreachable with one change per two days
  // A fall-back shortly after ms may step the wall clock back out of `period` before `next`.
  const change = offsetChange(ms, Math.min(next - 1, ms + MAX_SHIFT_MS), zone);
  if (change !== undefined && change < next && periodOf(change, zone, resetSeconds) !== period) return change;
  return next;
}

/** Milliseconds from `ms` until the period changes (see nextPeriodChange). */
export function msUntilNextPeriod(ms: number, zone: string, resetSeconds: number): number {
  return nextPeriodChange(ms, zone, resetSeconds) - ms;
}
