// The `permute` setting of a tag definition: which tags may be
// permuted, the bounds of the width, the counter limit derived from (or checked against) the
// domain, the setting fixed at creation, no key in the wire form; the layout applying the
// permutation where a counter becomes an ID (seqString, packId) and undoing it (unpackId); and
// imports from old systems, which cannot continue a permuted tag.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counterLimit, MAX_COUNTER, packId, packing, seqString, unpackId } from '../../src/core/layout.js';
import { clash, type Current } from '../../src/core/import-plan.js';
import { permutationOf, type PermuteSpec } from '../../src/core/permute.js';
import { specFromCreate, specFromUpdate, specToJson, type TagSpec } from '../../src/core/tag-spec.js';
import { createProblems, specProblems } from '../helpers/spec-problems.js';

const KEY = '00112233445566778899aabbccddeeff';
/** A permuted spec as the tag store holds it (with its key). */
const stored = (body: Record<string, unknown>): TagSpec => {
  const s = specFromCreate(body);
  return s.permute ? { ...s, permute: { ...s.permute, key: KEY } } : s;
};

/** The permutation of a permuted tag's spec. */
function keyedPermutation(s: TagSpec): PermuteSpec {
  assert.ok(s.permute, `tag "${s.tag}" is permuted`);
  return s.permute;
}

describe('permute: create', () => {
  it('accepts digits or bits on a plain segment tag, with an empty key for the store to fill', () => {
    const d = specFromCreate({ tag: 'order', permute: { digits: 10 } });
    assert.deepEqual(d.permute, { unit: 'digits', width: 10, key: '' });
    assert.equal(d.maxIdLimit, '9999999999', 'max_id_limit defaults to the largest ID of the domain');
    const b = specFromCreate({ tag: 'order', order: 'node', permute: { bits: 40 } });
    assert.deepEqual(b.permute, { unit: 'bits', width: 40, key: '' });
    assert.equal(b.maxIdLimit, String(2 ** 40 - 1));
    assert.equal(specFromCreate({ tag: 'big', permute: { bits: 63 } }).maxIdLimit, ((1n << 63n) - 1n).toString());
    assert.equal(specFromCreate({ tag: 'plain' }).permute, null);
    assert.equal(specFromCreate({ tag: 'plain', permute: null }).permute, null);
  });

  it('keeps the counter limit within the domain', () => {
    assert.equal(specFromCreate({ tag: 'o', permute: { digits: 8 }, max_id_limit: '5000000' }).maxIdLimit, '5000000');
    assert.equal(specFromCreate({ tag: 'o', permute: { digits: 8 }, max_id_limit: 99_999_999 }).maxIdLimit, '99999999');
    assert.deepEqual(createProblems({ tag: 'o', permute: { digits: 8 }, max_id_limit: 100_000_000 }), [
      'max_id_limit 100000000 does not fit permute {"digits":8}: a permuted tag issues at most 99999999 IDs (from 1 to 99999999); leave max_id_limit out or set it at most 99999999',
    ]);
    // Counters stay below 2^53 whatever the domain: the limit of a 63-bit domain is MAX_COUNTER.
    assert.equal(counterLimit(stored({ tag: 'o', permute: { bits: 63 } }), (1n << 63n) - 1n), MAX_COUNTER);
  });

  it('refuses widths out of bounds and other shapes', () => {
    const shape = 'permute must be {"digits": D} (D from 6 to 18) or {"bits": B} (B from 20 to 63)';
    for (const v of [5, 'digits', [], { digits: 8, bits: 30 }, { width: 8 }, {}])
      assert.deepEqual(createProblems({ tag: 'o', permute: v }), [shape], JSON.stringify(v));
    for (const d of [5, 19, 8.5, '8'])
      assert.deepEqual(createProblems({ tag: 'o', permute: { digits: d } }), [
        'permute.digits must be an integer from 6 to 18',
      ]);
    for (const b of [19, 64, 0])
      assert.deepEqual(createProblems({ tag: 'o', permute: { bits: b } }), [
        'permute.bits must be an integer from 20 to 63',
      ]);
  });

  it('refuses sharded, interleaved, rule and snowflake tags, saying why', () => {
    assert.deepEqual(createProblems({ tag: 'o', layout: 'sharded', permute: { digits: 12 } }), [
      'permute applies to layout "plain" only: a sharded ID keeps its shard and app id in its low bits',
    ]);
    assert.deepEqual(createProblems({ tag: 'o', stride: 4, offset: 1, permute: { digits: 12 } }), [
      'permute applies to tags without interleaving only (stride 1, offset 0)',
    ]);
    assert.deepEqual(
      createProblems({ tag: 'o', mode: 'rule', template: '{counter:4}', max_counter: 9999, permute: { digits: 8 } }),
      ['permute does not apply to rule tags'],
    );
    assert.deepEqual(createProblems({ tag: 'o', mode: 'snowflake', permute: { digits: 8 } }), [
      'permute applies to segment tags only',
    ]);
  });
});

describe('permute: update', () => {
  const cur = stored({ tag: 'o', permute: { digits: 8 } });

  it('cannot change the setting (nor add or remove it), and keeps the key', () => {
    for (const v of [{ digits: 9 }, { digits: 8 }, null, { bits: 30 }])
      assert.deepEqual(
        specProblems(() => specFromUpdate(cur, { permute: v })),
        ['permute cannot be changed after creation'],
      );
    assert.deepEqual(
      specProblems(() => specFromUpdate(stored({ tag: 'p' }), { permute: { digits: 8 } })),
      ['permute cannot be changed after creation'],
    );
    const next = specFromUpdate(cur, { step: 500, description: 'orders' });
    assert.deepEqual(next.permute, cur.permute);
  });

  it('keeps max_id_limit within the domain', () => {
    assert.equal(specFromUpdate(cur, { max_id_limit: '1000' }).maxIdLimit, '1000');
    assert.match(
      specProblems(() => specFromUpdate(cur, { max_id_limit: '100000000' }))[0],
      /does not fit permute \{"digits":8\}/,
    );
  });
});

describe('permute: wire form', () => {
  it('shows the width, never the key, and round-trips through create', () => {
    const s = stored({ tag: 'o', permute: { bits: 36 } });
    const j = specToJson(s);
    assert.deepEqual(j.permute, { bits: 36 });
    assert.ok(!JSON.stringify(j).includes(KEY), 'the key is not in the wire form');
    const again = specFromCreate(j);
    assert.deepEqual(again, { ...s, permute: { ...keyedPermutation(s), key: '' } });
    assert.equal(
      'permute' in specToJson(specFromCreate({ tag: 'plain' })),
      false,
      'an unpermuted tag has no permute field',
    );
  });
});

describe('permute: layout', () => {
  const s = stored({ tag: 'o', permute: { digits: 8 } });
  const perm = permutationOf(keyedPermutation(s));

  it('writes the permuted ID wherever a counter becomes an ID, and reads the counter back', () => {
    for (const k of [1, 2, 3, 1000, 99_999_999]) {
      const id = perm.idString(k);
      assert.equal(seqString(s, k), id);
      assert.equal(packId(s, k, 0).toString(), id);
      assert.deepEqual(unpackId(s, BigInt(id)), { seq: BigInt(k), counter: BigInt(k), shard: 0, appId: 0 });
    }
    assert.notEqual(seqString(s, 1), '1');
    assert.equal(unpackId(s, 100_000_000n).counter, undefined, 'outside the domain');
    assert.equal(unpackId(s, 0n).counter, undefined);
  });

  it('has no packing: bulk writers must not write runs of a permuted tag as lines', () => {
    assert.throws(() => packing(s, 0), /permuted/);
    assert.doesNotThrow(() => packing(stored({ tag: 'p' }), 0));
  });
});

describe('permute: imports', () => {
  it('an import from an old system cannot continue a permuted tag: its IDs are spread over the whole domain', () => {
    const cur = stored({ tag: 'orders', permute: { digits: 10 } });
    const current: Current = {
      live: new Map([
        [
          'orders',
          { spec: cur, epoch: 1, counterFloor: 0, marks: new Map(), lowestLive: new Map(), tokenHashes: new Set() },
        ],
      ]),
      deleted: new Set(),
    };
    assert.equal(
      clash(current, specFromCreate({ tag: 'orders' }), 'Leaf tag "orders"'),
      'tag "orders" has permuted IDs in idmint, spread over its whole domain: they cannot continue above the IDs of Leaf tag "orders"',
    );
    assert.equal(
      clash(
        {
          ...current,
          live: new Map([['orders', { ...current.live.get('orders')!, spec: stored({ tag: 'orders' }) }]]),
        },
        specFromCreate({ tag: 'orders' }),
        'x',
      ),
      undefined,
    );
  });
});
