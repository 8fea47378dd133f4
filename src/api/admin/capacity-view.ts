// The "capacity" field of the admin tag views: rate, ID space left and forecast, in the API's
// snake_case, with times as ISO strings and "does not run out at this rate" as null.
import type { Forecast } from '../../core/capacity.js';
import type { CounterCapacity, TagCapacity } from '../../service/capacity.js';

/** null for "never": no end, or a rule that never resets (its period ends at Infinity). */
const iso = (ms: number | null): string | null => (ms === null || !Number.isFinite(ms) ? null : new Date(ms).toISOString());
const seconds = (s: number): number | null => (Number.isFinite(s) ? Math.round(s * 1000) / 1000 : null);
const rate = (r: number): number => Math.round(r * 1000) / 1000;

function forecastJson(f: Forecast): Record<string, unknown> {
  return {
    rate_ids_per_second: rate(f.rate),
    remaining_ids: f.remaining,
    exhaustion_seconds: seconds(f.exhaustionSeconds),
    runs_out_at: iso(f.runsOutAtMs),
  };
}

function counterJson(c: CounterCapacity): Record<string, unknown> {
  return {
    ...(c.shard !== undefined ? { shard: c.shard } : {}),
    ...(c.app !== undefined ? { app: c.app } : {}),
    ...forecastJson(c),
    limit: c.limit,
    allocated_max: c.allocatedMax,
    ...(c.redisRead ? {} : { redis: 'unreachable' }),
  };
}

export function capacityJson(c: TagCapacity): Record<string, unknown> {
  if (c.mode === 'snowflake') {
    return {
      exhaustion_seconds: seconds(c.forecast.exhaustionSeconds),
      runs_out_at: iso(c.forecast.runsOutAtMs),
      worker_pool: c.workerPool ? { worker_bits: c.workerPool.workerBits, size: c.workerPool.size, used: c.workerPool.used } : null,
    };
  }
  const base = forecastJson(c.forecast);
  if (c.period) {
    return {
      ...base,
      period: c.period.period,
      period_ends_at: iso(c.period.endsAtMs),
      period_end_seconds: seconds(c.period.endSeconds),
      runs_out_before_reset: c.period.runsOutBeforeReset,
      apps: c.counters.map(counterJson),
    };
  }
  return { ...base, shards: c.counters.map(counterJson) };
}
