// Per-tag capacity gauges and worker-id pool usage on /metrics, for alerts that forecast a tag
// running out. Every value is read from shared state (Redis, MySQL) through the capacity
// reader's cache, so every process reports the same: under `serve --processes N` the
// aggregate takes one value ('max', or 'min' for time left) instead of summing N copies.
// A value with nothing to forecast is left out rather than written as +Inf (the aggregate
// travels as JSON between processes, where Infinity does not survive).
import { Gauge, type Registry } from 'prom-client';
import type { TagCapacity } from '../service/capacity.js';
import { settleWithin } from '../settle-within.js';

export interface CapacitySources {
  readonly capacity: () => Promise<TagCapacity[]>;
  /** Worker-id spaces in Redis: width, size and live leases. */
  readonly workerPools: () => Promise<{ bits: number; size: number; used: number }[]>;
}

/** Longest a scrape waits for the stores: a store that does not answer leaves the gauges out. */
export const CAPACITY_SCRAPE_WAIT_MS = 2000;

export function registerCapacityMetrics(registry: Registry, src: CapacitySources): void {
  const registers = [registry];
  const all = () => settleWithin(src.capacity(), CAPACITY_SCRAPE_WAIT_MS, [] as TagCapacity[]);
  const perTag = (
    name: string,
    help: string,
    aggregator: 'max' | 'min',
    value: (capacity: TagCapacity) => number | undefined,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['tag'],
      registers,
      aggregator,
      async collect() {
        this.reset();
        for (const capacity of await all()) {
          const reading = value(capacity);
          if (reading !== undefined && Number.isFinite(reading)) this.set({ tag: capacity.tag }, reading);
        }
      },
    });
  const counted = (c: TagCapacity) => c.mode !== 'snowflake';
  perTag(
    'idmint_tag_remaining_ids',
    "IDs left before the tag's limit (segment: all shards; rule: the app closest to its max_counter in the current period)",
    'max',
    (c) => (counted(c) ? c.forecast.remaining : undefined),
  );
  perTag('idmint_tag_rate_ids_per_second', 'IDs per second the tag is consuming (segment and rule tags)', 'max', (c) =>
    counted(c) ? c.forecast.rate : undefined,
  );
  perTag(
    'idmint_tag_exhaustion_seconds',
    'Seconds until the tag runs out at the current rate (segment: first shard; rule: before the period resets; snowflake: layout end of time); absent when it does not',
    'min',
    (c) => c.forecast.exhaustionSeconds,
  );
  perTag(
    'idmint_rule_period_remaining_ids',
    'Rule tags: counter values left in the current period for the app closest to max_counter',
    'max',
    (c) => (c.period ? c.forecast.remaining : undefined),
  );
  perTag(
    'idmint_rule_period_end_seconds',
    'Rule tags: seconds until the current period ends and the counters start again',
    'min',
    (c) => c.period?.endSeconds,
  );
  perTag(
    'idmint_snowflake_end_of_time_seconds',
    'Snowflake tags: seconds until the layout can no longer represent the time',
    'min',
    (c) => (c.mode === 'snowflake' ? c.forecast.exhaustionSeconds : undefined),
  );

  const pools = () =>
    settleWithin(src.workerPools(), CAPACITY_SCRAPE_WAIT_MS, [] as { bits: number; size: number; used: number }[]);
  new Gauge({
    name: 'idmint_worker_ids_leased',
    help: 'Worker ids currently leased, per worker-id width',
    labelNames: ['worker_bits'],
    registers,
    aggregator: 'max',
    async collect() {
      this.reset();
      for (const pool of await pools()) this.set({ worker_bits: pool.bits }, pool.used);
    },
  });
  new Gauge({
    name: 'idmint_worker_ids_total',
    help: 'Worker ids a worker-id width has (2^worker_bits)',
    labelNames: ['worker_bits'],
    registers,
    aggregator: 'max',
    async collect() {
      this.reset();
      for (const pool of await pools()) this.set({ worker_bits: pool.bits }, pool.size);
    },
  });
}
