// Interleaved counters: the pure mapping from the counter k that MySQL and Redis hand out to
// the sequence value k * stride + offset, its inverse, the ID limit in counter space, the
// floor of a re-created tag, the rule counter mapping, and the validation of stride/offset.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  counterAtOrBelow,
  counterLimit,
  counterOfSeq,
  floorAbove,
  MAX_COUNTER,
  MAX_ID,
  MAX_STRIDE,
  packId,
  packing,
  seqOf,
  seqString,
  shardBits,
  unpackId,
  type SegmentLayout,
} from '../../src/core/layout.js';
import { counterAt, firstCounter, periodCapacity, type RuleSpec } from '../../src/core/rule-spec.js';
import { specFromCreate, specFromUpdate, specToJson } from '../../src/core/tag-spec.js';
import { binaryFromRuns, jsonFromRuns } from '../../src/api/ws/encode.js';
import { rng, SEED } from '../../tools/prng.js';
import { specProblems } from '../helpers/spec-problems.js';

const plain = (stride: number, offset: number): SegmentLayout => ({
  layout: 'plain',
  shards: 1,
  appId: 0,
  appBits: 0,
  stride,
  offset,
});
const sharded = (shards: number, appBits: number, appId: number, stride: number, offset: number): SegmentLayout => ({
  layout: 'sharded',
  shards,
  appBits,
  appId,
  stride,
  offset,
});

describe('interleave mapping', () => {
  it('stride 1 is the identity (what every tag issued before stride existed)', () => {
    for (const k of [1, 2, 1000, MAX_COUNTER]) {
      assert.equal(seqOf(plain(1, 0), k), BigInt(k));
      assert.equal(seqString(plain(1, 0), k), String(k));
      assert.equal(packId(plain(1, 0), k, 0), BigInt(k));
    }
  });

  it('maps counter k to k * stride + offset, exactly above 2^53, and back', () => {
    const r = rng(SEED);
    for (let i = 0; i < 20_000; i++) {
      const stride = r.pick([1, 2, 3, 7, 10, 1024, MAX_STRIDE, r.int(1, MAX_STRIDE)]);
      const offset = r.int(0, stride - 1);
      const k = r.pick([1, 2, r.int(1, 1e9), MAX_COUNTER - r.int(0, 100)]);
      const l = plain(stride, offset);
      const want = BigInt(k) * BigInt(stride) + BigInt(offset);
      assert.equal(seqOf(l, k), want);
      assert.equal(seqString(l, k), want.toString());
      assert.equal(want % BigInt(stride), BigInt(offset), 'every value is offset (mod stride)');
      assert.equal(counterOfSeq(l, want), BigInt(k));
      if (stride > 1)
        assert.equal(counterOfSeq(l, want + 1n), undefined, "a value of another residue is not the tag's");
    }
  });

  it('two deployments with one stride and distinct offsets never issue the same value, and each increases', () => {
    const stride = 3;
    const seen = new Map<bigint, number>();
    for (let offset = 0; offset < stride; offset++) {
      let prev = -1n;
      for (let k = 1; k <= 5000; k++) {
        const v = seqOf(plain(stride, offset), k);
        assert.ok(v > prev);
        prev = v;
        assert.equal(seen.get(v), undefined, `value ${v} of offset ${offset} also issued by offset ${seen.get(v)}`);
        seen.set(v, offset);
      }
    }
  });

  it('interleaves the sequence field of sharded IDs; decoding gives the counter back', () => {
    const l = sharded(64, 8, 3, 2, 1);
    // id = (k * 2 + 1) << 14 | shard << 8 | 3
    assert.equal(packId(l, 5, 17), (11n << 14n) | (17n << 8n) | 3n);
    const p = unpackId(l, packId(l, 5, 17));
    assert.deepEqual(p, { seq: 11n, counter: 5n, shard: 17, appId: 3 });
    assert.equal(unpackId(l, (10n << 14n) | 3n).counter, undefined, 'an even sequence field is not an ID of offset 1');
    // Same layout, other offset: the same (k, shard) packs to another ID.
    assert.notEqual(packId(sharded(64, 8, 3, 2, 0), 5, 17), packId(l, 5, 17));
  });

  it('counterLimit converts the ID limit into counter space: no ID above the limit, the largest counter that fits', () => {
    assert.equal(counterLimit(plain(2, 1), 25n), 12, '12 * 2 + 1 = 25');
    assert.equal(counterLimit(plain(2, 1), 24n), 11, '11 * 2 + 1 = 23');
    assert.equal(counterLimit(plain(2, 0), 25n), 12, '24');
    assert.equal(counterLimit(plain(10, 9), 18n), 0, 'the first value, 19, is above 18');
    assert.equal(counterLimit(plain(10, 9), 19n), 1);
    assert.equal(counterLimit(plain(2, 0), MAX_ID), MAX_COUNTER, 'capped by the counter, not the ID');
    const r = rng(SEED + 1);
    for (let i = 0; i < 20_000; i++) {
      const stride = r.pick([1, 2, 3, 1000, r.int(1, MAX_STRIDE)]);
      const offset = r.int(0, stride - 1);
      const sb = r.int(0, 12);
      const appBits = r.int(0, 16);
      const l = r.next() < 0.5 ? plain(stride, offset) : sharded(2 ** sb, appBits, 2 ** appBits - 1, stride, offset);
      const limit = r.pick([r.bits(r.int(1, 63)), MAX_ID - r.bits(20), BigInt(r.int(0, 1e7))]);
      const c = counterLimit(l, limit);
      const shard = l.shards - 1;
      const what = `seed ${SEED + 1} case ${i}: ${JSON.stringify(l)} limit ${limit} -> ${c}`;
      if (c > 0) assert.ok(packId(l, c, shard) <= limit, what);
      if (c < MAX_COUNTER) assert.ok(packId(l, c + 1, shard) > limit, `${what}: counter ${c + 1} would still fit`);
    }
  });

  it('floorAbove: a re-created tag (other stride, offset or layout) issues only IDs above the old ones', () => {
    const r = rng(SEED + 2);
    for (let i = 0; i < 20_000; i++) {
      const make = () => {
        const stride = r.pick([1, 2, 3, 64, r.int(1, 5000)]);
        const offset = r.int(0, stride - 1);
        const appBits = r.int(0, 8);
        return r.next() < 0.5
          ? plain(stride, offset)
          : sharded(r.int(1, 64), appBits, r.int(0, 2 ** appBits - 1), stride, offset);
      };
      const old = make();
      const next = make();
      const oldMax = r.int(0, 1e9);
      const floor = floorAbove(old, oldMax, next);
      // Beyond the counter cap the re-created tag is exhausted at once (nothing to check).
      if (floor >= MAX_COUNTER) continue;
      const highestOld =
        oldMax === 0
          ? -1n
          : packId(old, oldMax, old.shards - 1) |
            ((1n << BigInt(old.layout === 'sharded' ? shardBits(old.shards) + old.appBits : 0)) - 1n);
      const lowestNew =
        packId(next, floor + 1, 0) &
        ~((1n << BigInt(next.layout === 'sharded' ? shardBits(next.shards) + next.appBits : 0)) - 1n);
      assert.ok(lowestNew > highestOld, `seed ${SEED + 2} case ${i}: ${JSON.stringify({ old, next, oldMax, floor })}`);
      if (old.stride === next.stride && old.offset === next.offset && old.layout === 'plain' && next.layout === 'plain')
        assert.equal(floor, oldMax);
    }
  });

  it('counterAtOrBelow is 0 below the first value', () => {
    assert.equal(counterAtOrBelow(plain(4, 3), 2n), 0n);
    assert.equal(counterAtOrBelow(plain(4, 3), 6n), 0n);
    assert.equal(counterAtOrBelow(plain(4, 3), 7n), 1n);
  });
});

describe('stream encoding of interleaved counters', () => {
  it('binary and json frames carry k * stride + offset (plain and sharded, across 2^32 and 2^53)', () => {
    const r = rng(SEED + 3);
    for (let i = 0; i < 300; i++) {
      const stride = r.pick([1, 2, 3, 1000, MAX_STRIDE]);
      const offset = r.int(0, stride - 1);
      const appBits = r.int(0, 16);
      const l =
        r.next() < 0.5
          ? plain(stride, offset)
          : sharded(r.int(1, 4096), appBits, r.int(0, 2 ** appBits - 1), stride, offset);
      const shard = r.int(0, l.shards - 1);
      const limit = counterLimit(l, MAX_ID);
      const a = Math.min(r.pick([1, r.int(1, 2 ** 32), limit]), Math.max(1, limit - 40));
      const runs: [number, number][] = [[a, Math.min(limit, a + 19)]];
      const n = runs[0][1] - runs[0][0] + 1;
      const want: bigint[] = [];
      for (let k = runs[0][0]; k <= runs[0][1]; k++) want.push(packId(l, k, shard));
      const p = packing(l, shard);
      const frame = binaryFromRuns(1, runs, n, p);
      const got: bigint[] = [];
      for (let j = 0; j < n; j++) got.push(frame.readBigUInt64LE(8 + 8 * j));
      assert.deepEqual(got, want, JSON.stringify({ l, shard, runs }));
      const json = JSON.parse(jsonFromRuns(1, runs, n, p)) as { ids: string[] };
      assert.deepEqual(json.ids, want.map(String));
    }
  });
});

describe('rule counters', () => {
  const rule = (minCounter: number, maxCounter: number): RuleSpec => ({
    template: '{counter:4}',
    minCounter,
    maxCounter,
    resetSeconds: 0,
    timeZone: 'UTC',
  });

  it('stride 1: min_counter + k - 1, as before', () => {
    const r = rule(5, 99);
    assert.equal(counterAt(r, { stride: 1, offset: 0 }, 1), 5);
    assert.equal(counterAt(r, { stride: 1, offset: 0 }, 95), 99);
    assert.equal(periodCapacity(r), 95);
  });

  it('gives the counters from min_counter to max_counter that are offset (mod stride), in order', () => {
    for (let stride = 1; stride <= 7; stride++) {
      for (let offset = 0; offset < stride; offset++) {
        for (const [min, max] of [
          [0, 0],
          [0, 9],
          [1, 9],
          [3, 40],
          [5, 5],
          [6, 8],
        ]) {
          const want: number[] = [];
          for (let c = min; c <= max; c++) if (c % stride === offset) want.push(c);
          const i = { stride, offset };
          const cap = periodCapacity(rule(min, max), i);
          assert.equal(cap, want.length, JSON.stringify({ stride, offset, min, max }));
          const got = Array.from({ length: cap }, (_, k) => counterAt(rule(min, max), i, k + 1));
          assert.deepEqual(got, want);
          if (cap > 0) assert.equal(firstCounter(rule(min, max), i), want[0]);
        }
      }
    }
  });
});

describe('stride and offset validation', () => {
  it('defaults to stride 1, offset 0, and shows both', () => {
    const s = specFromCreate({ tag: 'a' });
    assert.equal(s.stride, 1);
    assert.equal(s.offset, 0);
    assert.equal(specToJson(s).stride, 1);
    assert.equal(specToJson(s).offset, 0);
  });

  it('accepts 0 <= offset < stride <= 10^6 on segment and rule tags', () => {
    assert.equal(specFromCreate({ tag: 'a', stride: 2, offset: 1 }).offset, 1);
    assert.equal(specFromCreate({ tag: 'a', stride: MAX_STRIDE, offset: MAX_STRIDE - 1 }).stride, MAX_STRIDE);
    const r = specFromCreate({
      tag: 'r',
      mode: 'rule',
      template: '{counter:4}',
      max_counter: 9999,
      stride: 2,
      offset: 1,
    });
    assert.equal(r.maxIdLimit, '5000', 'a rule period holds the odd counters 1..9999');
    assert.deepEqual(
      specFromCreate(specToJson(specFromCreate({ tag: 'a', layout: 'sharded', stride: 3, offset: 2 }))).offset,
      2,
    );
  });

  it('refuses bad values with one message each', () => {
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', stride: 0 })),
      ['stride must be an integer from 1 to 1000000'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', stride: 1.5 })),
      ['stride must be an integer from 1 to 1000000'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', stride: MAX_STRIDE + 1 })),
      ['stride must be an integer from 1 to 1000000'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', offset: -1 })),
      ['offset must be an integer from 0 to 999999'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', stride: 2, offset: 2 })),
      ['offset must be below stride (2)'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', offset: 1 })),
      ['offset must be below stride (1)'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 'a', stride: 10, offset: 9, max_id_limit: 18 })),
      ['max_id_limit is too small for this layout to issue any ID'],
    );
    assert.deepEqual(
      specProblems(() => specFromCreate({ tag: 's', mode: 'snowflake', stride: 2 })),
      ['stride applies to segment tags only'],
    );
    assert.deepEqual(
      specProblems(() =>
        specFromCreate({
          tag: 'r',
          mode: 'rule',
          template: '{counter:1}',
          min_counter: 5,
          max_counter: 6,
          stride: 5,
          offset: 2,
        }),
      ),
      ['no counter value from min_counter to max_counter is 2 (mod 5)'],
    );
  });

  it('fixes stride and offset at creation', () => {
    const cur = specFromCreate({ tag: 'a', stride: 2, offset: 1 });
    assert.deepEqual(
      specProblems(() => specFromUpdate(cur, { stride: 4 })),
      ['stride cannot be changed after creation'],
    );
    assert.deepEqual(
      specProblems(() => specFromUpdate(cur, { offset: 0 })),
      ['offset cannot be changed after creation'],
    );
    const rule = specFromCreate({
      tag: 'r',
      mode: 'rule',
      template: '{counter:4}',
      max_counter: 999,
      stride: 2,
      offset: 1,
    });
    assert.equal(
      specFromUpdate(rule, { max_counter: 9999 }).maxIdLimit,
      '5000',
      "a rule's capacity keeps its interleave",
    );
  });
});
