// CapacityReader reads Redis before MySQL: a refill that commits in MySQL and installs in Redis
// between the two reads must never be counted twice (as unallocated in MySQL and as held in
// Redis), which would forecast more room than the tag has. The stores are fakes in which the
// refill lands right after the first read of either store.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CapacityReader, type CapacityDeps } from '../../src/service/capacity.js';
import type { StoredTag } from '../../src/store/mysql/tags-repo.js';
import type { SegmentStats } from '../../src/store/redis/segments.js';

const LIMIT = 10_000;
// Before the refill: MySQL's mark 200, Redis holds 150..200 (51 IDs). The refill allocates
// 201..300 in MySQL and installs it as Redis's next segment.
const before = {
  mark: 200,
  stats: { gen: 'g', taken: 149, cur: 150, end: 200, hwm: 200, exhausted: false } as SegmentStats,
};
const after = { mark: 300, stats: { ...before.stats, next: [201, 300], hwm: 300 } as SegmentStats };
const truth = LIMIT - 149; // IDs handed out so far: 149; everything else is left

function deps(order: string[]): CapacityDeps {
  let landed = false;
  /** The state as of now; the refill lands just after this read. */
  const read = () => {
    const state = landed ? after : before;
    landed = true;
    return state;
  };
  const fake = {
    tags: {},
    counters: {
      async marks() {
        order.push('mysql');
        return [{ shard: 0, maxId: read().mark, step: 100 }];
      },
      async periodMarks(_tag: string, period: number) {
        order.push('mysql');
        return [{ scope: `a/${period}`, maxId: read().mark }];
      },
      async allocationWindows() {
        return new Map();
      },
    },
    segments: {
      async stats() {
        order.push('redis');
        return read().stats;
      },
    },
    leaseStore: {},
    clock: { now: () => Date.UTC(2026, 10, 23, 12) },
  };
  return fake as unknown as CapacityDeps;
}

const segmentTag = {
  tag: 's',
  mode: 'segment',
  epoch: 1,
  shards: 1,
  layout: 'plain',
  appId: 0,
  appBits: 8,
  stride: 1,
  offset: 0,
  maxIdLimit: String(LIMIT),
  rule: null,
  snowflake: null,
} as unknown as StoredTag;
const ruleTag = {
  ...segmentTag,
  tag: 'r',
  mode: 'rule',
  maxIdLimit: String(LIMIT),
  rule: { timeZone: 'UTC', resetSeconds: 86400, minCounter: 0, maxCounter: LIMIT - 1 },
} as unknown as StoredTag;

describe('CapacityReader', () => {
  it('never counts a refill landing between its reads twice (segment tag)', async () => {
    const order: string[] = [];
    const c = await new CapacityReader(deps(order)).ofTag(segmentTag);
    assert.ok(c.forecast.remaining <= truth, `${c.forecast.remaining} IDs left counted, ${truth} in truth`);
  });

  it('never counts a refill landing between its reads twice (rule tag)', async () => {
    const order: string[] = [];
    const c = await new CapacityReader(deps(order)).ofTag(ruleTag);
    assert.ok(c.forecast.remaining <= truth, `${c.forecast.remaining} IDs left counted, ${truth} in truth`);
  });
});
