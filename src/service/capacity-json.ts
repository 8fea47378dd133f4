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

function forecastJson(forecast: Forecast): Record<string, unknown> {
  return {
    rate_ids_per_second: rate(forecast.rate),
    remaining_ids: forecast.remaining,
    exhaustion_seconds: seconds(forecast.exhaustionSeconds),
    runs_out_at: iso(forecast.runsOutAtMs),
  };
}

function counterJson(counter: CounterCapacity): Record<string, unknown> {
  return {
    ...(counter.shard !== undefined ? { shard: counter.shard } : {}),
    ...(counter.app !== undefined ? { app: counter.app } : {}),
    ...forecastJson(counter),
    limit: counter.limit,
    allocated_max: counter.allocatedMax,
    ...(counter.redisRead ? {} : { redis: 'unreachable' }),
  };
}

export function capacityJson(capacity: TagCapacity): Record<string, unknown> {
  switch (capacity.mode) {
    case 'snowflake':
      return {
        exhaustion_seconds: seconds(capacity.forecast.exhaustionSeconds),
        runs_out_at: iso(capacity.forecast.runsOutAtMs),
        worker_pool: {
          worker_bits: capacity.workerPool.workerBits,
          size: capacity.workerPool.size,
          used: capacity.workerPool.used,
        },
      };
    case 'rule':
      return {
        ...forecastJson(capacity.forecast),
        period: capacity.period.period,
        period_ends_at: iso(capacity.period.endsAtMs),
        period_end_seconds: seconds(capacity.period.endSeconds),
        runs_out_before_reset: capacity.period.runsOutBeforeReset,
        apps: capacity.counters.map(counterJson),
      };
    case 'segment':
      return { ...forecastJson(capacity.forecast), shards: capacity.counters.map(counterJson) };
  }
}
