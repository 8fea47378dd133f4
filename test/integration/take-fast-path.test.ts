// suite: cluster
// The steady-state path of the take script (hand out up to `fe:<identity>` with a cursor move and a
// one-integer reply) against the script's general path, on the real Redis: two hashes get the
// same installs (segments, prefetch, limits, final segments) and the same random sequence of
// takes; one is taken through SegmentStore.take (steady state where it applies), the other by
// a scratch copy of the script whose steady-state branch is cut out. Every reply (IDs, status,
// refill wanted, IDs left) and the hashes' cursors and segment fields must be equal, and the
// steady state must have served most takes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { rng } from '../../tools/prng.js';
import { Keys } from '../../src/store/redis/keys.js';
import { scriptText } from '../../src/store/redis/lua.js';
import { decodeTake } from '../../src/store/redis/replies.js';
import { SegmentStore, takenOf, type SegmentRef, type TakeResult } from '../../src/store/redis/segments.js';
import type { RedisClient } from '../../src/store/redis/connection.js';

const STEADY = 'if fastEnd then';
const SEED = Number(process.env.TAKE_SEED ?? '') || 20261123;

describe('take: the steady-state path against the general path', () => {
  const names = testNames();
  let redis: RedisClient;
  let store: SegmentStore;
  let keys: Keys;

  before(() => {
    redis = testRedis();
    keys = new Keys(names.prefix);
    store = new SegmentStore({ default: redis }, keys);
  });

  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('gives the same answers and leaves the same state', { timeout: 60000 }, async () => {
    const general = scriptText('take-2').replace(STEADY, 'if false then');
    assert.notEqual(general, scriptText('take-2'), 'the script has its steady-state branch');
    const fast: SegmentRef = { tag: 'fast', epoch: 1, shard: 0 };
    const slow: SegmentRef = { tag: 'slow', epoch: 1, shard: 0 };
    let gens = 0;
    const takeSlow = async (n: number, prefetch: number): Promise<TakeResult> => {
      const r = await redis.eval(
        general,
        2,
        store.key(slow),
        keys.moved(slow.tag),
        n,
        `g${names.prefix}-${gens++}`,
        prefetch,
        slow.epoch,
      );
      // Without its steady-state branch the script never answers a bare integer.
      assert.ok(Array.isArray(r), `the general path answered ${JSON.stringify(r)}`);
      return decodeTake(r, n);
    };
    const fields = ['cur', 'end', 'nf', 'ne', 'seg', 'pf', 'rq', 'ex', 'lim', 'hwm'];
    const state = async (ref: SegmentRef) => {
      const h = await redis.hgetall(store.key(ref));
      return { ...Object.fromEntries(fields.map((f) => [f, h[f]])), taken: takenOf(h) };
    };

    const rand = rng(SEED);
    let next = 1;
    let steps = 0;
    let steady = 0;
    let installs = 0;
    const a0 = await store.take(fast, 1, 0.5);
    const b0 = await takeSlow(1, 0.5);
    assert.equal(a0.status, 'cold');
    assert.equal(b0.status, 'cold');
    let genA = a0.gen;
    let genB = b0.gen;
    while (steps < 3000) {
      steps++;
      const prefetch = rand.pick([0.2, 0.5, 0.9]);
      const n = rand.pick([1, 1, 1, 2, 3, rand.int(1, 40)]);
      const before = await redis.hget(store.key(fast), 'cur');
      const a = await store.take(fast, n, prefetch);
      const b = await takeSlow(n, prefetch);
      const where = `step ${steps} (seed ${SEED}), n ${n}, cursor ${before}`;
      if (a.gen === '' && a.seg === -1) steady++;
      assert.equal(a.status, b.status, where);
      assert.deepEqual(a.ranges, b.ranges, where);
      assert.equal(a.refillWanted, b.refillWanted, where);
      assert.equal(a.avail, b.avail, where);
      assert.deepEqual(await state(fast), await state(slow), where);
      if (a.gen !== '') {
        genA = a.gen;
        genB = b.gen;
      }
      if (a.status === 'exhausted' && rand.next() < 0.3) {
        // The limit is raised: both forget the exhaustion, as after an admin change.
        for (const ref of [fast, slow]) await redis.hdel(store.key(ref), 'ex', 'lim');
        continue;
      }
      // Refills arrive when wanted, sometimes late; sometimes the last one is final, or the
      // limit lies inside the segment.
      if ((a.refillWanted || a.status === 'dry') && rand.next() < 0.8) {
        const size = rand.int(1, 60);
        const range: [number, number] = [next, next + size - 1];
        next += size + rand.int(0, 5);
        const limit = rand.pick([
          Number.MAX_SAFE_INTEGER,
          Number.MAX_SAFE_INTEGER,
          range[1],
          range[1] + rand.int(1, 10),
        ]);
        const ra = await store.install(fast, genA, range, prefetch, 1000 + steps, limit);
        const rb = await store.install(slow, genB, range, prefetch, 1000 + steps, limit);
        assert.equal(ra, rb, `install at ${where}`);
        installs++;
      }
    }
    assert.ok(installs > 100, `${installs} installs`);
    assert.ok(steady > steps / 3, `the steady state served ${steady} of ${steps} takes`);
  });
});
