// Runs of consecutive counter values and the RangeQueue that hands out the lowest first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expand, RangeQueue, rangeSize, totalSize, type Range } from '../../src/core/ranges.js';
import { rng, SEED } from '../../tools/prng.js';

const filled = (...rs: Range[]) => {
  const q = new RangeQueue();
  for (const r of rs) q.push(r);
  return q;
};

describe('range helpers', () => {
  it('sizes runs inclusively', () => {
    assert.equal(rangeSize([5, 5]), 1);
    assert.equal(rangeSize([1, 10]), 10);
    assert.equal(rangeSize([2 ** 53 - 10, 2 ** 53 - 1]), 10);
    assert.equal(totalSize([]), 0);
    assert.equal(
      totalSize([
        [1, 10],
        [20, 20],
        [30, 39],
      ]),
      21,
    );
  });

  it('expands runs into their values, in order', () => {
    assert.deepEqual(expand([]), []);
    assert.deepEqual(expand([[3, 3]]), [3]);
    assert.deepEqual(
      expand([
        [1, 3],
        [7, 9],
      ]),
      [1, 2, 3, 7, 8, 9],
    );
    assert.deepEqual(expand([[2 ** 53 - 3, 2 ** 53 - 1]]), [2 ** 53 - 3, 2 ** 53 - 2, 2 ** 53 - 1]);
    assert.equal(
      expand([
        [1, 10000],
        [20001, 30000],
      ]).length,
      20000,
    );
  });
});

describe('RangeQueue', () => {
  it('starts empty and takes nothing from nothing', () => {
    const q = new RangeQueue();
    assert.equal(q.size, 0);
    assert.deepEqual(q.take(5), []);
    assert.equal(q.size, 0);
  });

  it('hands out the lowest values first, splitting a run', () => {
    const q = filled([1, 10]);
    assert.deepEqual(q.take(3), [[1, 3]]);
    assert.equal(q.size, 7);
    assert.deepEqual(q.take(1), [[4, 4]]);
    assert.deepEqual(q.take(6), [[5, 10]]);
    assert.equal(q.size, 0);
  });

  it('takes across runs and gives at most what it holds', () => {
    const q = filled([1, 3], [10, 12], [20, 29]);
    assert.equal(q.size, 16);
    assert.deepEqual(q.take(5), [
      [1, 3],
      [10, 11],
    ]);
    assert.equal(q.size, 11);
    assert.deepEqual(q.take(100), [
      [12, 12],
      [20, 29],
    ]);
    assert.equal(q.size, 0);
  });

  it('take(0) takes nothing', () => {
    const q = filled([1, 3]);
    assert.deepEqual(q.take(0), []);
    assert.equal(q.size, 3);
  });

  it('merges a run that continues the last one', () => {
    const q = filled([1, 5], [6, 10], [11, 11]);
    assert.equal(q.size, 11);
    assert.deepEqual(q.take(11), [[1, 11]], 'one merged run, not three');
  });

  it('keeps a gap between runs that do not touch', () => {
    const q = filled([1, 5], [7, 10]);
    assert.deepEqual(q.take(10), [
      [1, 5],
      [7, 10],
    ]);
  });

  it('ignores empty runs', () => {
    const q = filled([5, 4]);
    assert.equal(q.size, 0);
    q.push([1, 2]);
    q.push([9, 3]);
    assert.equal(q.size, 2);
    q.push([3, 3]);
    assert.deepEqual(q.take(5), [[1, 3]]);
  });

  it('refuses runs that do not lie above what it holds, and stays unchanged', () => {
    const q = filled([10, 20]);
    for (const bad of [
      [5, 9],
      [10, 12],
      [20, 25],
      [15, 30],
      [1, 100],
      [20, 20],
    ] as Range[]) {
      assert.throws(() => q.push(bad), RangeError, `${bad} after 10..20`);
      assert.equal(q.size, 11);
    }
    q.push([21, 22]);
    assert.deepEqual(q.take(20), [[10, 22]]);
  });

  it('guards the order against the last run pushed, even after taking', () => {
    const q = filled([1, 10]);
    q.take(10);
    q.push([50, 60]);
    q.take(5);
    assert.throws(() => q.push([55, 70]), RangeError);
    q.push([61, 61]);
    assert.deepEqual(q.take(10), [[55, 61]]);
  });

  it('clear drops every value', () => {
    const q = filled([1, 10], [20, 30]);
    q.clear();
    assert.equal(q.size, 0);
    assert.deepEqual(q.take(5), []);
    q.push([5, 6]);
    assert.deepEqual(q.take(5), [[5, 6]]);
  });

  it('behaves as a FIFO of values (random pushes and takes against a model)', () => {
    const r = rng(SEED);
    let totalTaken = 0;
    for (let round = 0; round < 200; round++) {
      const q = new RangeQueue();
      const model: number[] = [];
      let next = r.int(1, 1000);
      for (let op = 0; op < 200; op++) {
        const what = `seed ${SEED} round ${round} op ${op}`;
        if (r.next() < 0.5) {
          const first = next + r.pick([0, 0, 1, r.int(2, 50)]);
          const last = first + r.int(-1, 60);
          q.push([first, last]);
          for (let v = first; v <= last; v++) model.push(v);
          if (last >= first) next = last + 1;
        } else {
          const n = r.int(0, 80);
          const got = q.take(n);
          const want = model.splice(0, n);
          assert.deepEqual(expand(got), want, what);
          assert.equal(totalSize(got), want.length, what);
          // Runs come out maximal: two returned runs never touch.
          for (let i = 1; i < got.length; i++)
            assert.ok(got[i][0] > got[i - 1][1] + 1, `${what}: ${JSON.stringify(got)}`);
          totalTaken += want.length;
        }
        assert.equal(q.size, model.length, what);
      }
    }
    assert.ok(totalTaken > 100_000, `only ${totalTaken} values checked`);
  });
});
