// Capacity forecasts: how fast a tag's ID space is being used, what is left, and when it runs
// out at the current rate. Pure arithmetic over what the stores recorded; `nowMs` is always
// passed in, so tests move a fake clock.
import { consumptionRate } from './step.js';
import { unitMs, type SnowflakeLayout } from './snowflake-layout.js';

/** IDs consumed over a span of time. */
export interface Window {
  readonly ids: number;
  readonly ms: number;
}

/**
 * Shortest window trusted on its own: just after a segment is installed, Redis's window holds
 * a few milliseconds and says little, so a longer one (MySQL's allocation log) is preferred.
 */
export const MIN_WINDOW_MS = 10_000;

/**
 * IDs per second: from `recent` (Redis's window since the last install) when it spans at
 * least MIN_WINDOW_MS, else from `longer` (MySQL's allocation log) when it spans any time,
 * else from `recent` when it spans any; undefined when neither says anything.
 */
export function rateOf(recent?: Window, longer?: Window): number | undefined {
  const of = (w?: Window) => (w === undefined ? undefined : consumptionRate(w.ids, w.ms));
  if (recent !== undefined && recent.ms >= MIN_WINDOW_MS) return of(recent);
  return of(longer) ?? of(recent);
}

/** The last instant a JavaScript Date holds. */
const MAX_DATE_MS = 8.64e15;

export interface Forecast {
  /** IDs (counter values) left. */
  readonly remaining: number;
  /** IDs per second being used; 0 when unknown or idle. */
  readonly rate: number;
  /**
   * Seconds until nothing is left at the current rate: 0 when nothing is left, Infinity when it never runs out at this
   * rate.
   */
  readonly exhaustionSeconds: number;
  /**
   * When it runs out (ms since 1970), or null when it does not at this rate (or only past the last instant a Date
   * holds, in the year 275760).
   */
  readonly runsOutAtMs: number | null;
}

/** The forecast of `remaining` IDs used at `rate` per second from `nowMs`. */
export function forecast(remaining: number, rate: number | undefined, nowMs: number): Forecast {
  const left = Math.max(0, remaining);
  const knownRate = rate !== undefined && rate > 0 && Number.isFinite(rate) ? rate : 0;
  if (left === 0) return { remaining: 0, rate: knownRate, exhaustionSeconds: 0, runsOutAtMs: nowMs };
  if (knownRate === 0) return { remaining: left, rate: 0, exhaustionSeconds: Infinity, runsOutAtMs: null };
  const seconds = left / knownRate;
  const at = nowMs + Math.ceil(seconds * 1000);
  return { remaining: left, rate: knownRate, exhaustionSeconds: seconds, runsOutAtMs: at <= MAX_DATE_MS ? at : null };
}

/**
 * Counter values left to one (tag, shard) or rule counter: what MySQL has not allocated yet up
 * to the limit, plus what Redis holds allocated but not handed out.
 */
export function counterRemaining(limit: number, allocatedMax: number, buffered: number): number {
  return Math.max(0, limit - allocatedMax) + Math.max(0, buffered);
}

/**
 * A tag whose counters are used side by side (shards): remaining and rate add up, and the tag
 * runs out when its first counter does (a key hashed to that shard can no longer be served).
 */
export function combine(parts: readonly Forecast[], nowMs: number): Forecast {
  if (parts.length === 0) return forecast(0, 0, nowMs);
  let first = parts[0];
  for (const part of parts) if (part.exhaustionSeconds < first.exhaustionSeconds) first = part;
  return {
    remaining: parts.reduce((a, p) => a + p.remaining, 0),
    rate: parts.reduce((a, p) => a + p.rate, 0),
    exhaustionSeconds: first.exhaustionSeconds,
    runsOutAtMs: first.runsOutAtMs,
  };
}

export interface RuleForecast extends Forecast {
  /** Seconds until the period resets the counter (Infinity for a rule that never resets). */
  readonly periodEndSeconds: number;
  /** True when the counter runs out before the period ends, at the current rate. */
  readonly runsOutBeforeReset: boolean;
}

/**
 * A rule counter in its period: it only runs out if it does so before the period ends and the
 * counter starts again; otherwise its exhaustion is Infinity.
 */
export function ruleForecast(
  remaining: number,
  rate: number | undefined,
  nowMs: number,
  periodEndMs: number,
): RuleForecast {
  const plain = forecast(remaining, rate, nowMs);
  const periodEndSeconds = Math.max(0, (periodEndMs - nowMs) / 1000);
  const before = plain.exhaustionSeconds < periodEndSeconds;
  return before
    ? { ...plain, periodEndSeconds, runsOutBeforeReset: true }
    : { ...plain, exhaustionSeconds: Infinity, runsOutAtMs: null, periodEndSeconds, runsOutBeforeReset: false };
}

/** A snowflake layout runs out of time, whatever the rate: seconds until its end of time. */
export function snowflakeForecast(
  layout: SnowflakeLayout,
  nowMs: number,
): { exhaustionSeconds: number; runsOutAtMs: number | null } {
  // Wide second-unit layouts end past what a Date holds: seconds are still exact enough.
  const end = layout.epochMs + 2 ** layout.timeBits * unitMs(layout.unit);
  return { exhaustionSeconds: Math.max(0, (end - nowMs) / 1000), runsOutAtMs: end <= MAX_DATE_MS ? end : null };
}
