// suite: cluster
// prime-2.lua on the real Redis: a primed hash is the hash a cold take creates (every field
// equal but the gen, so every take and install after it behaves the same), a hash that exists is
// left as it is whoever made it, and a tag's retired epoch gets no hash.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';
import type { RedisClient } from '../../src/store/redis/connection.js';

describe('prime: the hash of a counter not taken from yet', () => {
  const names = testNames();
  let redis: RedisClient;
  let store: SegmentStore;

  before(() => {
    redis = testRedis();
    store = new SegmentStore({ default: redis }, new Keys(names.prefix));
  });

  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  const hash = async (ref: SegmentRef): Promise<Record<string, string>> => redis.hgetall(store.key(ref));

  it('creates what a cold take creates, gen aside, and hands out nothing', async () => {
    const primed: SegmentRef = { tag: 'rule', epoch: 1, shard: 0, scope: 'a/20887' };
    const taken: SegmentRef = { tag: 'rule', epoch: 1, shard: 0, scope: 'b/20887' };
    const gen = await store.prime(primed);
    assert.ok(gen !== undefined);
    const cold = await store.take(taken, 1, 0.5);
    assert.equal(cold.status, 'cold');
    const { gen: primedGen, ...primedRest } = await hash(primed);
    const { gen: takenGen, ...takenRest } = await hash(taken);
    assert.equal(primedGen, gen);
    assert.equal(takenGen, cold.gen);
    assert.deepEqual(primedRest, takenRest);
    // The first take finds it dry and asks a refill under the primed gen, as after a cold take.
    const dry = await store.take(primed, 1, 0.5);
    assert.deepEqual([dry.status, dry.gen, dry.seg, dry.refillWanted, dry.ranges], ['dry', gen, 0, true, []]);
    assert.equal(await store.install(primed, gen, [1, 100], 0.5), 'current');
    assert.deepEqual((await store.take(primed, 3, 0.5)).ranges, [[1, 3]]);
  });

  it('leaves a hash that exists as it is', async () => {
    const ref: SegmentRef = { tag: 'rule', epoch: 1, shard: 0, scope: 'c/20887' };
    const first = await store.prime(ref);
    assert.ok(first !== undefined);
    const once = await hash(ref);
    assert.equal(await store.prime(ref), undefined);
    assert.deepEqual(await hash(ref), once);
    assert.equal(await store.install(ref, first, [1, 10], 0.5), 'current');
    await store.take(ref, 2, 0.5);
    const served = await hash(ref);
    assert.equal(await store.prime(ref), undefined);
    assert.deepEqual(await hash(ref), served);
    assert.deepEqual((await store.take(ref, 1, 0.5)).ranges, [[3, 3]]);
  });

  it('creates nothing for an epoch retired on the server', async () => {
    const ref: SegmentRef = { tag: 'moved', epoch: 2, shard: 0, scope: 'a/20887' };
    await store.retire('moved', 2);
    assert.equal(await store.prime(ref), undefined);
    assert.equal(await redis.exists(store.key(ref)), 0);
  });
});
