// The "capacity" field of the admin tag views, per kind of tag: rate, ID space left and
// forecast, in the API's snake_case, with times as ISO strings and "does not run out at this
// rate" as null; a segment tag's per shard, a rule's per app of the current period, a
// snowflake tag's end of time and worker-id pool.
import type { Forecast } from '../core/capacity.js';
import type { CounterCapacity, TagCapacity } from './capacity.js';

/** null for "never": no end, or a rule that never resets (its period ends at Infinity). */
const iso = (ms: number | null): string | null =>
  ms === null || !Number.isFinite(ms) ? null : new Date(ms).toISOString();
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
  switch (c.mode) {
    case 'snowflake':
      return {
        exhaustion_seconds: seconds(c.forecast.exhaustionSeconds),
        runs_out_at: iso(c.forecast.runsOutAtMs),
        worker_pool: { worker_bits: c.workerPool.workerBits, size: c.workerPool.size, used: c.workerPool.used },
      };
    case 'rule':
      return {
        ...forecastJson(c.forecast),
        period: c.period.period,
        period_ends_at: iso(c.period.endsAtMs),
        period_end_seconds: seconds(c.period.endSeconds),
        runs_out_before_reset: c.period.runsOutBeforeReset,
        apps: c.counters.map(counterJson),
      };
    case 'segment':
      return { ...forecastJson(c.forecast), shards: c.counters.map(counterJson) };
  }
}
