// The keyed permutation of permuted tags (core/permute.ts): a bijection of [1, size) on small
// domains (every value exactly once), width and bounds on large ones, its inverse, determinism
// per key, independence between keys, fixed answers for a fixed key (stored tags depend on the
// function never changing), and how uncorrelated the IDs of consecutive counters are.
import assert from 'node:assert/strict';
import { createCipheriv } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  counterOfPermuted,
  domainSize,
  Permutation,
  permutationOf,
  permutedIds,
  type PermuteSpec,
} from '../../src/core/permute.js';
import { rng, SEED } from '../../tools/prng.js';

const key = (seed: number): Buffer => {
  const r = rng(seed);
  return Buffer.from(Array.from({ length: 16 }, () => r.int(0, 255)));
};
const KEY = key(SEED);

/** Every counter of [1, size) once: each ID lies in [1, size), none twice, and maps back. */
function assertBijection(p: Permutation, size: number): void {
  const seen = new Uint8Array(size);
  const all = p.idStrings([[1, size - 1]]);
  for (let k = 1; k < size; k++) {
    const id = p.idString(k);
    assert.equal(all[k - 1], id, `idStrings and idString agree on ${k}`);
    const v = Number(id);
    assert.ok(Number.isInteger(v) && v >= 1 && v < size, `ID ${id} of ${k} lies in [1, ${size})`);
    assert.equal(seen[v], 0, `ID ${id} given twice`);
    seen[v] = 1;
    assert.equal(p.decrypt(BigInt(v)), BigInt(k));
    assert.equal(p.encrypt(BigInt(k)), BigInt(v));
  }
}

describe('Permutation: small domains, exhaustively', () => {
  for (const size of [1000, 1024, 2048, 4096, 10_000, 1 << 14]) {
    it(`maps [1, ${size}) onto itself, each value once, and back`, () =>
      assertBijection(new Permutation(KEY, BigInt(size)), size));
  }

  it('never gives 0 and refuses values outside the domain', () => {
    const p = new Permutation(KEY, 1000n);
    assert.equal(p.decrypt(0n), undefined);
    assert.equal(p.decrypt(1000n), undefined);
    assert.throws(() => p.idString(0), RangeError);
    assert.throws(() => p.idString(1000), RangeError);
    assert.throws(() => p.encrypt(1000n), RangeError);
  });
});

describe('Permutation: large domains, sampled', () => {
  const widths: [string, PermuteSpec['unit'], number][] = [
    ['digits 6', 'digits', 6],
    ['digits 9 (tabulated rounds)', 'digits', 9],
    ['digits 10 (batched rounds)', 'digits', 10],
    ['digits 12', 'digits', 12],
    ['digits 18', 'digits', 18],
    ['bits 20', 'bits', 20],
    ['bits 30 (the widest tabulated)', 'bits', 30],
    ['bits 32', 'bits', 32],
    ['bits 33', 'bits', 33],
    ['bits 53', 'bits', 53],
    ['bits 63', 'bits', 63],
  ];
  for (const [name, unit, width] of widths) {
    it(`${name}: IDs lie in [1, size), most are of the full width, and map back`, () => {
      const size = domainSize({ unit, width });
      const p = new Permutation(KEY, size);
      const r = rng(SEED + width);
      const max = size - 1n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size - 1n);
      const counters = [1, 2, 3, max, max - 1, ...Array.from({ length: 2000 }, () => r.int(1, max))];
      // Runs of consecutive counters too: the batched path of wide domains.
      const runs: [number, number][] = [
        [1, 300],
        [max - 299, max],
      ];
      const fromRuns = p.idStrings(runs);
      const runCounters = runs.flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i));
      let full = 0;
      for (const k of [...counters, ...runCounters]) {
        const id = BigInt(p.idString(k));
        assert.ok(id >= 1n && id < size, `ID ${id} of counter ${k} lies in [1, ${size})`);
        assert.equal(p.decrypt(id), BigInt(k), `counter ${k} back from ${id}`);
        if ((unit === 'digits' ? id.toString().length : id.toString(2).length) === width) full++;
      }
      runCounters.forEach((k, i) => assert.equal(fromRuns[i], p.idString(k)));
      // 9 in 10 values of [1, 10^D) have D digits, 1 in 2 of [1, 2^B) have B bits.
      const share = full / (counters.length + runCounters.length);
      assert.ok(unit === 'digits' ? share > 0.85 : share > 0.44 && share < 0.56, `share of full-width IDs ${share}`);
      const ids = new Set([...counters, ...runCounters].map((k) => p.idString(k)));
      assert.equal(ids.size, new Set([...counters, ...runCounters]).size, 'distinct counters, distinct IDs');
    });
  }
});

describe('Permutation: keys', () => {
  it('is the same function for the same key, in any instance', () => {
    const a = new Permutation(KEY, 10n ** 8n);
    const b = new Permutation(Buffer.from(KEY), 10n ** 8n);
    for (let k = 1; k <= 1000; k++) assert.equal(a.idString(k), b.idString(k));
  });

  it('is another permutation under another key', () => {
    for (const size of [10n ** 8n, 10n ** 12n]) {
      const a = new Permutation(KEY, size);
      const b = new Permutation(key(SEED + 1), size);
      let same = 0;
      for (let k = 1; k <= 1000; k++) if (a.idString(k) === b.idString(k)) same++;
      assert.ok(same <= 1, `${same} of 1000 counters got the same ID under two keys`);
    }
  });

  it('gives fixed answers for a fixed key: the function of stored tags never changes', () => {
    const fixed = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex');
    const ids = (size: bigint) => new Permutation(fixed, size).idStrings([[1, 5]]);
    assert.deepEqual(ids(10n ** 8n), FIXED.digits8);
    assert.deepEqual(ids(10n ** 12n), FIXED.digits12);
    assert.deepEqual(ids(1n << 63n), FIXED.bits63);
  });

  it('is built once per setting, and permutedIds and counterOfPermuted use it', () => {
    const spec: PermuteSpec = { unit: 'digits', width: 10, key: KEY.toString('hex') };
    assert.equal(permutationOf(spec), permutationOf({ ...spec }));
    const ids = permutedIds(spec, [
      [5, 7],
      [20, 20],
    ]);
    assert.deepEqual(
      ids,
      [5, 6, 7, 20].map((k) => permutationOf(spec).idString(k)),
    );
    assert.deepEqual(
      ids.map((id) => counterOfPermuted(spec, BigInt(id))),
      [5n, 6n, 7n, 20n],
    );
  });
});

describe('Permutation: consecutive counters give uncorrelated IDs', () => {
  for (const size of [10n ** 6n, 10n ** 10n, 1n << 63n]) {
    it(`domain ${size}: about half of consecutive pairs increase, and no difference repeats`, () => {
      const p = new Permutation(KEY, size);
      const n = 20_000;
      const ids = p.idStrings([[1, n]]).map(BigInt);
      let up = 0;
      const diffs = new Map<bigint, number>();
      for (let i = 1; i < n; i++) {
        if (ids[i] > ids[i - 1]) up++;
        const d = ids[i] - ids[i - 1];
        diffs.set(d, (diffs.get(d) ?? 0) + 1);
      }
      const share = up / (n - 1);
      // Binomial(19999, 1/2): the standard deviation is 0.0035; 0.03 is over 8 of them.
      assert.ok(Math.abs(share - 0.5) < 0.03, `share of increasing pairs ${share}`);
      const top = Math.max(...diffs.values());
      assert.ok(top <= 5, `one difference between consecutive IDs came back ${top} times`);
      // The low digit of the IDs of consecutive counters is spread evenly too.
      const low = new Array<number>(10).fill(0);
      for (const id of ids) low[Number(id % 10n)]++;
      for (const c of low) assert.ok(Math.abs(c / n - 0.1) < 0.02, `low digits ${low.join(' ')}`);
    });
  }
});

const FIXED = {
  digits8: ['90669744', '31366937', '20256151', '74789395', '1520492'],
  digits12: ['225795415624', '665537930941', '25887318997', '617008718160', '29757035447'],
  bits63: [
    '7465605169582817314',
    '4304854375535768181',
    '3387369158274481098',
    '8590251626488712240',
    '4209896951392241482',
  ],
};

/** The permutation as its header defines it, one AES call per round, in bigints. */
function reference(k: Buffer, size: bigint, x: bigint): bigint {
  const bits = (size - 1n).toString(2).length;
  const h = Math.ceil(bits / 2);
  const mask = (1n << BigInt(h)) - 1n;
  let [l, r] = [x >> BigInt(h), x & mask];
  do {
    for (let i = 0; i < 8; i++) {
      const block = Buffer.alloc(16);
      block[0] = i;
      block[1] = h;
      block.writeUInt32BE(Number(r), 12);
      const c = createCipheriv('aes-128-ecb', k, null);
      c.setAutoPadding(false);
      const f = BigInt(c.update(block).readUInt32BE(0) >>> (32 - h));
      [l, r] = [r, l ^ f];
    }
    x = (l << BigInt(h)) | r;
  } while (x === 0n || x >= size);
  return x;
}

describe('Permutation: the definition', () => {
  it('tabulated, batched and single rounds all compute the Feistel network of the header', () => {
    const r = rng(SEED);
    for (const size of [1000n, 10n ** 8n, 1n << 32n, 10n ** 10n, 10n ** 18n, 1n << 63n]) {
      const p = new Permutation(KEY, size);
      const max = size - 1n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(size - 1n);
      for (let j = 0; j < 50; j++) {
        const k = r.int(1, max);
        const want = reference(KEY, size, BigInt(k));
        assert.equal(p.idString(k), want.toString(), `counter ${k} of [1, ${size})`);
        assert.equal(p.encrypt(BigInt(k)), want);
      }
    }
  });
});
