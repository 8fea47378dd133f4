// Capacity of every tag: consumption rate, ID space left and when it runs out at that rate
// (arithmetic in src/core/capacity.ts), read from what Redis and MySQL already record:
// segment hashes (taken, and the time and taken count at the last install), MySQL's
// high-water marks and allocation log, worker-id leases; each kind of tag read its own way
// (ofTag), and shown its own way (capacity-json.ts). The admin API reads one tag fresh;
// /metrics reads all of them through a short cache so scrapes stay cheap.
import {
  combine,
  counterRemaining,
  forecast,
  rateOf,
  ruleForecast,
  snowflakeForecast,
  type Forecast,
  type Window,
} from '../core/capacity.js';
import type { Clock } from '../core/clock.js';
import { counterLimit } from '../core/layout.js';
import { nextPeriodChange, periodOf } from '../core/period.js';
import { maxWorkers } from '../core/snowflake-layout.js';
import { windowKey, type CountersRepo } from '../store/mysql/counters-repo.js';
import type { StoredOf, StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import type { LeaseStore } from '../store/redis/leases.js';
import type { SegmentStats, SegmentStore } from '../store/redis/segments.js';

export { capacityJson } from './capacity-json.js';

/** How long /metrics reuses the capacity of all tags. */
export const CAPACITY_CACHE_MS = 10_000;

export interface CounterCapacity extends Forecast {
  /** Shard number (segment tags) or app name (rule tags). */
  readonly shard?: number;
  readonly app?: string;
  /** Largest counter value the tag's max_id_limit allows, and MySQL's high-water mark. */
  readonly limit: number;
  readonly allocatedMax: number;
  /** False when Redis could not be read: only MySQL's share is counted. */
  readonly redisRead: boolean;
}

interface CapacityOf<M extends StoredTag['mode']> {
  readonly tag: string;
  readonly mode: M;
  readonly forecast: Forecast;
  /** Segment tags: one entry per shard that has a counter. Rule tags: one per app in the current period. */
  readonly counters: readonly CounterCapacity[];
}

/** The capacity of a tag, by kind. */
export type TagCapacity =
  | (CapacityOf<'segment'> & { readonly period?: undefined })
  /** Rule tags: the current period and when it ends. */
  | (CapacityOf<'rule'> & {
      readonly period: {
        readonly period: number;
        readonly endsAtMs: number;
        readonly endSeconds: number;
        readonly runsOutBeforeReset: boolean;
      };
    })
  /** Snowflake tags: the worker-id pool of the layout's width. */
  | (CapacityOf<'snowflake'> & {
      readonly period?: undefined;
      readonly workerPool: { readonly workerBits: number; readonly size: number; readonly used: number };
    });

export interface CapacityDeps {
  readonly tags: TagsRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly leaseStore: LeaseStore;
  readonly clock: Clock;
}

const installWindow = (s: SegmentStats | undefined, nowMs: number): Window | undefined =>
  s?.lastInstallMs === undefined || s.takenAtInstall === undefined
    ? undefined
    : { ids: Math.max(0, s.taken - s.takenAtInstall), ms: nowMs - s.lastInstallMs };

/** IDs Redis holds allocated but not yet handed out: the rest of the current segment and the next one. */
function buffered(stats: SegmentStats | undefined): number {
  if (!stats?.gen) return 0;
  const cur = stats.cur !== undefined && stats.end !== undefined ? Math.max(0, stats.end - stats.cur + 1) : 0;
  return cur + (stats.next ? stats.next[1] - stats.next[0] + 1 : 0);
}

export class CapacityReader {
  private cached?: { atMs: number; value: Promise<TagCapacity[]> };

  constructor(private readonly deps: CapacityDeps) {}

  /** Every live tag's capacity, reused for CAPACITY_CACHE_MS (concurrent callers share one read). */
  all(): Promise<TagCapacity[]> {
    const now = Date.now();
    if (this.cached && now - this.cached.atMs < CAPACITY_CACHE_MS) return this.cached.value;
    const value = (async () => {
      const out: TagCapacity[] = [];
      for (const tag of await this.deps.tags.list()) out.push(await this.ofTag(tag));
      return out;
    })();
    this.cached = { atMs: now, value };
    // A failed read is not kept: the next scrape tries again.
    value.catch(() => {
      if (this.cached?.value === value) this.cached = undefined;
    });
    return value;
  }

  async ofTag(tag: StoredTag): Promise<TagCapacity> {
    switch (tag.mode) {
      case 'snowflake':
        return this.snowflake(tag);
      case 'rule':
        return this.rule(tag);
      case 'segment':
        return this.segment(tag);
    }
  }

  private async stats(tag: StoredTag, shard: number, scope = ''): Promise<SegmentStats | undefined> {
    return this.deps.segments
      .stats({ tag: tag.tag, epoch: tag.epoch, shard, scope, redis: tag.redis })
      .catch(() => undefined);
  }

  private counter(
    limit: number,
    allocatedMax: number,
    stats: SegmentStats | undefined,
    longer: Window | undefined,
    nowMs: number,
  ): CounterCapacity {
    const estimate = forecast(
      counterRemaining(limit, allocatedMax, buffered(stats)),
      rateOf(installWindow(stats, nowMs), longer),
      nowMs,
    );
    return { ...estimate, limit, allocatedMax, redisRead: stats !== undefined };
  }

  private async segment(tag: StoredOf<'segment'>): Promise<TagCapacity> {
    const limit = counterLimit(tag, BigInt(tag.maxIdLimit));
    // Redis first, MySQL after: every segment Redis holds was allocated (committed) before it was
    // installed, so the marks read afterwards include it. Read the other way round, a refill
    // landing in between would count its segment both as unallocated and as held.
    const stats: (SegmentStats | undefined)[] = [];
    for (let shard = 0; shard < tag.shards; shard++) stats.push(await this.stats(tag, shard));
    const [marks, windows] = await Promise.all([
      this.deps.counters.marks(tag.tag),
      this.deps.counters.allocationWindows(tag.tag, tag.epoch),
    ]);
    const byShard = new Map(marks.map((m) => [m.shard, m.maxId]));
    const now = this.deps.clock.now();
    const counters: CounterCapacity[] = [];
    for (let shard = 0; shard < tag.shards; shard++) {
      counters.push({
        shard,
        ...this.counter(limit, byShard.get(shard) ?? 0, stats[shard], windows.get(windowKey(shard, '')), now),
      });
    }
    return { tag: tag.tag, mode: tag.mode, forecast: combine(counters, now), counters };
  }

  private async rule(tag: StoredOf<'rule'>): Promise<TagCapacity> {
    const rule = tag.rule;
    const limit = counterLimit(tag, BigInt(tag.maxIdLimit));
    const now = this.deps.clock.now();
    const period = periodOf(now, rule.timeZone, rule.resetSeconds);
    const endsAtMs = nextPeriodChange(now, rule.timeZone, rule.resetSeconds);
    // The apps come from MySQL; each one's Redis state is read before its mark (see segment()).
    const scopes = (await this.deps.counters.periodMarks(tag.tag, period)).map((m) => m.scope);
    const stats = new Map<string, SegmentStats | undefined>();
    for (const scope of scopes) stats.set(scope, await this.stats(tag, 0, scope));
    const [marks, windows] = await Promise.all([
      this.deps.counters.periodMarks(tag.tag, period),
      this.deps.counters.allocationWindows(tag.tag, tag.epoch),
    ]);
    const counters: CounterCapacity[] = [];
    for (const mark of marks) {
      // An app that appeared between the two reads has its Redis state read now, after its mark:
      // at most one segment in flight is counted twice until the next read.
      const appStats = stats.has(mark.scope) ? stats.get(mark.scope) : await this.stats(tag, 0, mark.scope);
      const counter = this.counter(limit, mark.maxId, appStats, windows.get(windowKey(0, mark.scope)), now);
      const rf = ruleForecast(counter.remaining, counter.rate, now, endsAtMs);
      counters.push({ ...counter, ...rf, app: mark.scope.slice(0, mark.scope.lastIndexOf('/')) });
    }
    // An app that has not taken an ID this period has the whole period's capacity.
    const tagForecast = counters.length ? combine(counters, now) : forecast(limit, 0, now);
    const endSeconds = Math.max(0, (endsAtMs - now) / 1000);
    // Every app's counter is its own: the tag's remaining is the app closest to running out.
    const least = counters.reduce((a, c) => Math.min(a, c.remaining), limit);
    return {
      tag: tag.tag,
      mode: tag.mode,
      counters,
      forecast: { ...tagForecast, remaining: least },
      period: { period, endsAtMs, endSeconds, runsOutBeforeReset: tagForecast.exhaustionSeconds < endSeconds },
    };
  }

  private async snowflake(tag: StoredOf<'snowflake'>): Promise<TagCapacity> {
    const layout = tag.snowflake;
    const now = this.deps.clock.now();
    const sf = snowflakeForecast(layout, now);
    const used = await this.deps.leaseStore.count(layout.workerBits).catch(() => 0);
    return {
      tag: tag.tag,
      mode: tag.mode,
      counters: [],
      forecast: { remaining: 0, rate: 0, ...sf },
      workerPool: { workerBits: layout.workerBits, size: maxWorkers(layout), used },
    };
  }
}
