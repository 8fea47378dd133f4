// The run-based no-duplicate check (tools/duplicates.ts repeatsInRuns), against a count of every
// ID one by one on random runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countRepeats, IdList, repeatsInRuns } from '../../tools/duplicates.js';
import { rng, SEED } from '../../tools/prng.js';

function runs(list: [number, number][]): [BigInt64Array, BigInt64Array] {
  return [BigInt64Array.from(list, ([a]) => BigInt(a)), BigInt64Array.from(list, ([, b]) => BigInt(b))];
}

describe('repeatsInRuns', () => {
  it('finds no repeat in runs that touch or lie apart, in any order', () => {
    assert.deepEqual(
      repeatsInRuns(
        ...runs([
          [11, 20],
          [1, 10],
          [30, 30],
          [21, 21],
        ]),
      ),
      { ids: 22n, repeats: 0n },
    );
    assert.deepEqual(repeatsInRuns(...runs([])), { ids: 0n, repeats: 0n });
  });

  it('counts each ID covered twice once, three times twice', () => {
    assert.deepEqual(
      repeatsInRuns(
        ...runs([
          [1, 10],
          [10, 12],
        ]),
      ),
      { ids: 13n, repeats: 1n },
    );
    assert.deepEqual(
      repeatsInRuns(
        ...runs([
          [1, 10],
          [3, 4],
        ]),
      ),
      { ids: 12n, repeats: 2n },
    );
    assert.deepEqual(
      repeatsInRuns(
        ...runs([
          [5, 5],
          [5, 5],
          [5, 5],
        ]),
      ),
      { ids: 3n, repeats: 2n },
    );
    assert.deepEqual(
      repeatsInRuns(
        ...runs([
          [2 ** 52, 2 ** 52 + 4],
          [1, 1],
          [2 ** 52 + 4, 2 ** 52 + 4],
        ]),
      ),
      { ids: 7n, repeats: 1n },
    );
  });

  it('agrees with a count of every ID on random runs', () => {
    const r = rng(SEED);
    for (let round = 0; round < 200; round++) {
      const list: [number, number][] = [];
      for (let k = 0, n = r.int(1, 30); k < n; k++) {
        const a = r.int(0, 200);
        list.push([a, a + r.int(0, 14)]);
      }
      const seen = new Map<number, number>();
      for (const [a, b] of list) for (let x = a; x <= b; x++) seen.set(x, (seen.get(x) ?? 0) + 1);
      let repeats = 0;
      for (const c of seen.values()) repeats += c - 1;
      const ids = list.reduce((s, [a, b]) => s + b - a + 1, 0);
      assert.deepEqual(
        repeatsInRuns(...runs(list)),
        { ids: BigInt(ids), repeats: BigInt(repeats) },
        `seed ${SEED}: ${JSON.stringify(list)}`,
      );
    }
  });

  it('refuses a run that ends below its start', () => {
    assert.throws(() => repeatsInRuns(...runs([[5, 4]])), /ends \(4\) below its start \(5\)/);
  });
});

describe('IdList', () => {
  it('keeps every ID in order past each doubling, and countRepeats counts the repeats among them', () => {
    const list = new IdList(2);
    const want: bigint[] = [];
    for (let i = 0; i < 37; i++) {
      const id = BigInt(1000 - (i % 30));
      list.push(id);
      want.push(id);
    }
    assert.deepEqual([...list.values], want);
    assert.equal(countRepeats(list.values), 7);
  });
});
