// The pure parts of idempotency keys (src/core/idempotency-key.ts): which keys and counts are
// accepted, the fingerprint and what it tells apart, the compact form of a kept answer (every
// answer comes back as the same strings), and the decoding of the record script's replies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import {
  decodeIds,
  encodeIds,
  fingerprintDifference,
  fingerprintOf,
  keyedCountProblem,
  keyProblem,
} from '../../src/core/idempotency-key.js';
import { decodeClaim, decodeHeld, decodeRecord, decodeUnclaim } from '../../src/store/redis/idempotency-replies.js';
import { rng, SEED } from '../../tools/prng.js';

describe('idempotency keys: keys and counts', () => {
  it('accepts 1 to 255 visible ASCII characters, and nothing else', () => {
    for (const ok of ['a', '~', '!', 'x'.repeat(255), 'order-2026-11-26/42', '{tag}', '"quoted"', '\\'])
      assert.equal(keyProblem(ok), undefined, JSON.stringify(ok));
    assert.match(keyProblem('')!, /empty/);
    assert.match(keyProblem('x'.repeat(256))!, /256 bytes long; at most 255/);
    for (const bad of [' ', 'a b', 'a\tb', 'a\nb', '\x7f', '\x00', 'é', '😀', '\u00a0'])
      assert.match(keyProblem(bad)!, /visible ASCII characters only/, JSON.stringify(bad));
  });

  it('accepts 1 to 1000 IDs', () => {
    assert.equal(keyedCountProblem(1), undefined);
    assert.equal(keyedCountProblem(1000), undefined);
    assert.match(keyedCountProblem(1001)!, /at most 1000 IDs .*got 1001/);
    assert.match(keyedCountProblem(0)!, /at least 1/);
    assert.match(keyedCountProblem(1.5)!, /at least 1/);
  });
});

describe('idempotency keys: fingerprints', () => {
  it('tells apart every field of a request, and only those', () => {
    const base = { count: 3, shape: 'ids' };
    const fp = fingerprintOf(base);
    assert.equal(fingerprintOf({ shape: 'ids', count: 3 }), fp, 'field order does not matter');
    assert.equal(fingerprintOf({ ...base, key: undefined }), fp, 'an absent field is absent');
    const variants = [
      { ...base, count: 4 },
      { ...base, shape: 'id' },
      { ...base, key: 'user-1' },
      { ...base, app: 'web' },
      { ...base, salt: '' },
      { ...base, salt: 's' },
    ];
    const all = new Set([fp, ...variants.map(fingerprintOf)]);
    assert.equal(all.size, variants.length + 1, 'each variant has a fingerprint of its own');
    // An empty salt is a salt; a key that looks like JSON stays one field.
    assert.notEqual(fingerprintOf({ ...base, key: '","' }), fingerprintOf({ ...base, key: '"', app: '"' }));
    assert.ok(!fingerprintOf({ ...base, key: 'a\nb' }).includes('\n'), 'never a raw line break');
  });

  it('names what differs', () => {
    const a = fingerprintOf({ count: 5, shape: 'ids', app: 'web' });
    const b = fingerprintOf({ count: 2, shape: 'ids' });
    assert.equal(fingerprintDifference(a, b), 'count 5, not 2; app "web", not none');
    assert.equal(fingerprintDifference(a, a), 'a different request');
    assert.equal(fingerprintDifference(a, 'not json'), 'a different request');
  });
});

describe('idempotency keys: kept answers', () => {
  const roundTrip = (ids: string[]) => assert.deepEqual(decodeIds(encodeIds(ids)), ids, JSON.stringify(ids));

  it('keeps a run of evenly increasing integers as one run', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => String(1001 + i));
    const text = encodeIds(ids);
    assert.equal(text, '[["1001","1",1000]]');
    roundTrip(ids);
    // A sharded layout's IDs step by a power of two; IDs above 2^53 stay exact.
    const big = Array.from({ length: 5 }, (_, i) => String(2n ** 60n + BigInt(i) * 1024n));
    assert.equal(encodeIds(big), `[["${2n ** 60n}","1024",5]]`);
    roundTrip(big);
  });

  it('keeps anything else as it is: short runs, gaps, decreasing values, leading zeros, rule IDs', () => {
    assert.equal(encodeIds(['5', '6']), '["5","6"]');
    assert.equal(encodeIds(['1', '2', '3', '10', '11', '12', '13']), '[["1","1",3],["10","1",4]]');
    for (const ids of [
      [],
      ['7'],
      ['3', '2', '1', '0'],
      ['007', '008', '009'],
      ['505140001', '505140002', 'x', '505140003'],
      ['A-1', 'A-2', 'A-3'],
      ['1', '1', '1'],
      ['0', '1', '2'],
      ['-1', '0', '1'],
    ])
      roundTrip(ids);
  });

  it('gives back every answer as it was (random answers; a failure names its seed)', () => {
    const r = rng(SEED);
    const pick = (n: number) => r.int(0, n - 1);
    for (let c = 0; c < 2000; c++) {
      const ids: string[] = [];
      let v = BigInt(pick(1000));
      const n = 1 + pick(30);
      for (let i = 0; i < n; i++) {
        const kind = pick(6);
        if (kind === 0) ids.push(`r${pick(100)}`);
        else if (kind === 1) ids.push(`0${pick(10)}`);
        else {
          v += BigInt(pick(3));
          ids.push(String(v));
        }
      }
      assert.deepEqual(decodeIds(encodeIds(ids)), ids, `seed ${SEED}, case ${c}`);
    }
  });

  it('refuses a kept answer it did not write', () => {
    assert.throws(() => decodeIds('{}'), /not a list/);
    assert.throws(() => decodeIds('[["1","1",0]]'), /neither an ID nor a run/);
    assert.throws(() => decodeIds('[["1","1",1000001]]'), /neither an ID nor a run/);
    assert.throws(() => decodeIds('[3]'), /neither an ID nor a run/);
  });
});

describe('idempotency keys: replies of the claim and record scripts', () => {
  const record = '[3,"ids",null,null,null]\n["1","2"]';
  const answered = { kind: 'answered', fingerprint: '[3,"ids",null,null,null]', answer: '["1","2"]', ttlMs: 86_000 };
  it('decodes each reply, and refuses others', () => {
    assert.deepEqual(decodeClaim([1]), { kind: 'claimed' });
    assert.deepEqual(decodeClaim([2, record, 86_000]), answered);
    assert.throws(() => decodeClaim([2, record]), /idem-claim-3\.lua answered/);
    assert.deepEqual(decodeClaim([3, 1500]), { kind: 'full', retryInMs: 1500 });
    assert.deepEqual(decodeClaim([4, '[1,"id",null,null,null]', 900]), {
      kind: 'busy',
      fingerprint: '[1,"id",null,null,null]',
      ttlMs: 900,
    });
    assert.throws(() => decodeClaim([4, 'x']), /idem-claim-3\.lua answered \[4,"x"\]/);
    assert.deepEqual(decodeRecord([1]), { kind: 'recorded' });
    assert.deepEqual(decodeRecord([2, record, 86_000]), answered);
    assert.deepEqual(decodeRecord([4, '[1,"id",null,null,null]', 0]), {
      kind: 'busy',
      fingerprint: '[1,"id",null,null,null]',
      ttlMs: 0,
    });
    assert.throws(() => decodeRecord([2, 'no line break', 5]), /no line break/);
    assert.throws(() => decodeRecord([3, 1500]), /idem-record-3\.lua answered \[3,1500\]/);
    assert.throws(() => decodeRecord(1), /idem-record-3\.lua answered 1/);
    assert.equal(decodeUnclaim(1), true);
    assert.equal(decodeUnclaim(0), false);
    assert.throws(() => decodeUnclaim('1'), /idem-release-3\.lua answered "1"/);
    assert.equal(decodeHeld(7), 7);
    assert.throws(() => decodeHeld(-1), /idem-held-1\.lua answered -1/);
  });
});

describe('idempotency keys: IDEMPOTENCY_MAX_KEYS', () => {
  it('defaults to 100000 and takes 1 to 100000000', () => {
    assert.equal(loadConfig({}).idempotencyMaxKeys, 100_000);
    assert.equal(loadConfig({ IDEMPOTENCY_MAX_KEYS: '3' }).idempotencyMaxKeys, 3);
    assert.throws(
      () => loadConfig({ IDEMPOTENCY_MAX_KEYS: '0' }),
      /IDEMPOTENCY_MAX_KEYS must be between 1 and 100000000, got 0/,
    );
    assert.throws(() => loadConfig({ IDEMPOTENCY_MAX_KEYS: 'many' }), /IDEMPOTENCY_MAX_KEYS must be a whole number/);
  });

  it('IDEMPOTENCY_MAX_BYTES defaults to 64 MiB and takes 1 MiB to 1 TiB', () => {
    assert.equal(loadConfig({}).idempotencyMaxBytes, 64 * 1024 * 1024);
    assert.equal(loadConfig({ IDEMPOTENCY_MAX_BYTES: '1048576' }).idempotencyMaxBytes, 1024 * 1024);
    assert.throws(
      () => loadConfig({ IDEMPOTENCY_MAX_BYTES: '1000' }),
      /IDEMPOTENCY_MAX_BYTES must be between 1048576 and/,
    );
  });
});
