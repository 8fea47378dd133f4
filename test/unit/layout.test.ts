// Segment layouts: packing (seq, shard, app) into one 63-bit ID and back, the key-to-shard
// hash, and the counter limit that keeps every packed ID at or below max_id_limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  counterLimit,
  MAX_COUNTER,
  MAX_ID,
  packId,
  shardBits,
  shardOf,
  unpackId,
  type SegmentLayout,
} from '../../src/core/layout.js';
import { rng, SEED } from '../../tools/prng.js';

const plain: SegmentLayout = { layout: 'plain', shards: 1, appId: 0, appBits: 0, stride: 1, offset: 0 };
const sharded = (shards: number, appBits: number, appId: number): SegmentLayout => ({
  layout: 'sharded',
  shards,
  appBits,
  appId,
  stride: 1,
  offset: 0,
});
const low = (l: SegmentLayout) => (l.layout === 'sharded' ? shardBits(l.shards) + l.appBits : 0);

describe('shardBits', () => {
  it('is the number of bits that holds every shard index', () => {
    const cases: [number, number][] = [
      [1, 0],
      [2, 1],
      [3, 2],
      [4, 2],
      [5, 3],
      [64, 6],
      [65, 7],
      [1000, 10],
      [1024, 10],
      [1025, 11],
      [4096, 12],
    ];
    for (const [shards, bits] of cases) {
      assert.equal(shardBits(shards), bits, `shards ${shards}`);
      assert.ok(shards - 1 < 2 ** bits, `shard ${shards - 1} fits in ${bits} bits`);
    }
  });
});

describe('packId / unpackId', () => {
  it('plain: the ID is the counter', () => {
    for (const seq of [1n, 2n, 1000n, BigInt(MAX_COUNTER), MAX_ID]) {
      assert.equal(packId(plain, seq, 0), seq);
      assert.deepEqual(unpackId(plain, seq), { seq, counter: seq, shard: 0, appId: 0 });
    }
  });

  it('sharded: matches the documented formula', () => {
    const l = sharded(64, 8, 3);
    // id = seq << (6 + 8) | shard << 8 | app
    assert.equal(packId(l, 5n, 17), (5n << 14n) | (17n << 8n) | 3n);
    assert.equal(packId(l, 1n, 0), 16384n + 3n);
  });

  it('round-trips at the edge shard and app values', () => {
    let checked = 0;
    for (const shards of [1, 2, 3, 63, 64, 65, 4096]) {
      for (const appBits of [0, 1, 8, 16]) {
        const bits = shardBits(shards) + appBits;
        const maxSeq = MAX_ID >> BigInt(bits);
        for (const appId of [0, 2 ** appBits - 1]) {
          const l = sharded(shards, appBits, appId);
          for (const shard of [0, shards - 1]) {
            for (const seq of [0n, 1n, 2n, BigInt(MAX_COUNTER), maxSeq - 1n, maxSeq].filter((s) => s <= maxSeq)) {
              const id = packId(l, seq, shard);
              assert.ok(
                id >= 0n && id <= MAX_ID,
                `${JSON.stringify(l)} seq ${seq} shard ${shard}: ${id} out of 63 bits`,
              );
              assert.deepEqual(
                unpackId(l, id),
                { seq, counter: seq, shard, appId },
                `${JSON.stringify(l)} seq ${seq} shard ${shard}`,
              );
              checked++;
            }
          }
        }
      }
    }
    assert.ok(checked > 500);
  });

  it('round-trips random values, and distinct inputs give distinct IDs', () => {
    const r = rng(SEED);
    const seen = new Map<bigint, string>();
    for (let i = 0; i < 20_000; i++) {
      const shards = r.pick([1, 2, 7, 64, 1000, 4096]);
      const appBits = r.int(0, 16);
      const appId = r.int(0, 2 ** appBits - 1);
      const l = sharded(shards, appBits, appId);
      const seq = r.bits(63 - low(l));
      const shard = r.int(0, shards - 1);
      const id = packId(l, seq, shard);
      const what = `seed ${SEED} case ${i}: ${JSON.stringify(l)} seq ${seq} shard ${shard}`;
      assert.deepEqual(unpackId(l, id), { seq, counter: seq, shard, appId }, what);
      // Within one layout, distinct (seq, shard) pairs never share an ID.
      const fixed = sharded(64, 8, 3);
      const k = packId(fixed, seq & 0xffffn, shard % 64);
      const prev = seen.get(k);
      const mine = `${seq & 0xffffn}/${shard % 64}`;
      if (prev !== undefined) assert.equal(prev, mine, `two inputs packed to ${k}`);
      seen.set(k, mine);
    }
  });

  it('orders IDs of one shard by their counter', () => {
    const l = sharded(64, 8, 200);
    for (let s = 1n; s < 2000n; s++) assert.ok(packId(l, s, 9) > packId(l, s - 1n, 9));
    // and every ID of a higher counter lies above every ID of a lower one, whatever the shard
    assert.ok(packId(l, 101n, 0) > packId(l, 100n, 63));
  });
});

describe('shardOf', () => {
  it('is 32-bit FNV-1a over the UTF-8 bytes of the key', () => {
    const full = 2 ** 32;
    assert.equal(shardOf('', full), 0x811c9dc5);
    assert.equal(shardOf('a', full), 0xe40c292c);
    assert.equal(shardOf('foobar', full), 0xbf9cf968);
    assert.equal(shardOf('é', full), 0x1e9de8c1, 'UTF-8 (0xc3 0xa9), not Latin-1');
  });

  it('is stable: a key always maps to the same shard, within range', () => {
    const r = rng(SEED + 1);
    for (let i = 0; i < 2000; i++) {
      const key = `k${r.int(0, 1e9)}-${'x'.repeat(r.int(0, 40))}`;
      const shards = r.pick([1, 2, 3, 64, 100, 4096]);
      const s = shardOf(key, shards);
      assert.ok(Number.isInteger(s) && s >= 0 && s < shards, `${key} -> ${s} of ${shards}`);
      assert.equal(shardOf(key, shards), s);
      assert.equal(shardOf(String(key), shards), s);
    }
    assert.equal(shardOf('alice', 1), 0);
  });

  it('spreads keys evenly over the shards', () => {
    for (const [shards, prefix] of [
      [64, 'user-'],
      [100, '1380013'],
      [7, 'order:'],
    ] as const) {
      const n = shards * 1000;
      const counts = new Array<number>(shards).fill(0);
      for (let i = 0; i < n; i++) counts[shardOf(`${prefix}${i}`, shards)]++;
      const chi2 = counts.reduce((s, c) => s + (c - 1000) ** 2 / 1000, 0);
      // Chi-square with shards-1 degrees of freedom: mean shards-1, sd sqrt(2(shards-1)).
      const bound = shards - 1 + 6 * Math.sqrt(2 * (shards - 1));
      assert.ok(
        chi2 < bound,
        `${shards} shards, keys ${prefix}N: chi2 ${chi2.toFixed(1)} >= ${bound.toFixed(1)}; counts ${counts.join(',')}`,
      );
      assert.ok(
        Math.min(...counts) > 800 && Math.max(...counts) < 1200,
        `uneven: ${Math.min(...counts)}..${Math.max(...counts)}`,
      );
    }
  });
});

describe('counterLimit', () => {
  it('plain: the limit itself, capped at 2^53 - 1', () => {
    assert.equal(counterLimit(plain, 1n), 1);
    assert.equal(counterLimit(plain, 25n), 25);
    assert.equal(counterLimit(plain, BigInt(MAX_COUNTER) - 1n), MAX_COUNTER - 1);
    assert.equal(counterLimit(plain, BigInt(MAX_COUNTER)), MAX_COUNTER);
    assert.equal(counterLimit(plain, BigInt(MAX_COUNTER) + 1n), MAX_COUNTER);
    assert.equal(counterLimit(plain, MAX_ID), MAX_COUNTER);
  });

  it('plain: 0 below the first ID', () => {
    assert.equal(counterLimit(plain, 0n), 0);
  });

  it('sharded near 2^63: exact when the counter fits in 53 bits, and every packed ID stays in 63 bits', () => {
    // 64 shards x 8 app bits = 14 low bits: seq up to 2^49 - 1 < 2^53.
    const l = sharded(64, 8, 255);
    const lim = counterLimit(l, MAX_ID);
    assert.equal(lim, 2 ** 49 - 1);
    assert.equal(packId(l, BigInt(lim), 63), MAX_ID);
    // 4096 shards x 16 app bits = 28 low bits: 2^35 - 1.
    const wide = sharded(4096, 16, 65535);
    assert.equal(counterLimit(wide, MAX_ID), 2 ** 35 - 1);
    assert.equal(packId(wide, BigInt(2 ** 35 - 1), 4095), MAX_ID);
    // Few low bits: the 2^53 counter cap binds before the limit does.
    assert.equal(counterLimit(sharded(2, 0, 0), MAX_ID), MAX_COUNTER);
    assert.equal(counterLimit(sharded(1, 0, 0), MAX_ID - 1n), MAX_COUNTER);
  });

  it('sharded: too small a limit leaves no counter value', () => {
    const l = sharded(64, 8, 0); // 14 low bits
    assert.equal(counterLimit(l, 0n), 0);
    assert.equal(counterLimit(l, 1n), 0);
    assert.equal(counterLimit(l, 2n ** 14n - 2n), 0);
    assert.equal(counterLimit(l, 2n ** 14n - 1n), 0, 'only counter 0 fits, and counters start at 1');
    assert.equal(counterLimit(l, 2n ** 15n - 2n), 0);
    assert.equal(counterLimit(l, 2n ** 15n - 1n), 1);
  });

  it('never lets a packed ID exceed the limit, and is the largest such counter (all shard bits used)', () => {
    const r = rng(SEED + 2);
    let exact = 0;
    for (let i = 0; i < 20_000; i++) {
      // Shard counts that fill their bits, so the highest shard and app use every low bit.
      const sb = r.int(0, 12);
      const appBits = r.int(0, 16);
      const l = sharded(2 ** sb, appBits, 2 ** appBits - 1);
      const limit = r.pick([r.bits(r.int(1, 63)), MAX_ID - r.bits(20), BigInt(r.int(0, 1e6))]);
      const c = counterLimit(l, limit);
      const what = `seed ${SEED + 2} case ${i}: ${JSON.stringify(l)} limit ${limit} -> ${c}`;
      assert.ok(Number.isSafeInteger(c) && c >= 0 && c <= MAX_COUNTER, what);
      if (c > 0) assert.ok(packId(l, BigInt(c), 2 ** sb - 1) <= limit, what);
      if (c < MAX_COUNTER) {
        assert.ok(packId(l, BigInt(c) + 1n, 2 ** sb - 1) > limit, `${what}: counter ${c + 1} would still fit`);
        exact++;
      }
    }
    assert.ok(exact > 5000, `only ${exact} cases below the 2^53 cap`);
  });

  it('never lets a packed ID exceed the limit for any shard when shard counts do not fill their bits', () => {
    const r = rng(SEED + 3);
    for (let i = 0; i < 5000; i++) {
      const shards = r.int(1, 4096);
      const appBits = r.int(0, 16);
      const l = sharded(shards, appBits, r.int(0, 2 ** appBits - 1));
      const limit = r.bits(r.int(1, 63));
      const c = counterLimit(l, limit);
      if (c > 0)
        assert.ok(
          packId(l, BigInt(c), shards - 1) <= limit,
          `seed ${SEED + 3} case ${i}: ${JSON.stringify(l)} limit ${limit} -> ${c}`,
        );
    }
  });
});
