// The wire form of a tag definition (specToJson): the wire names of create, and the round trip
// through specFromCreate for a snowflake spec and for random segment specs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_COUNTER } from '../../src/core/layout.js';
import { specFromCreate, specToJson } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';

describe('specToJson', () => {
  it('uses the wire names of create', () => {
    const j = specToJson(specFromCreate({ tag: 'user', layout: 'sharded', app_id: 3 }));
    assert.deepEqual(Object.keys(j).sort(), [
      'app_bits',
      'app_id',
      'description',
      'enabled',
      'key_retention_seconds',
      'layout',
      'max_id_limit',
      'max_step',
      'min_step',
      'mode',
      'node_block',
      'offset',
      'order',
      'prefetch',
      'shards',
      'step',
      'stride',
      'tag',
      'target_seconds',
    ]);
    assert.equal(j.app_id, 3);
    assert.equal(j.max_id_limit, String(MAX_COUNTER));
  });

  // specToJson documents its output as "as accepted by create"; for snowflake tags it adds
  // the derived runs_out_at, which create refuses as an unknown field.
  it('round-trips a snowflake spec through specFromCreate', () => {
    const spec = specFromCreate({ tag: 'evt', mode: 'snowflake', preset: 'jssafe', epoch: '2023-05-01T00:00:00Z' });
    assert.deepEqual(specFromCreate(specToJson(spec)), spec);
  });

  it('round-trips through specFromCreate (random specs)', () => {
    const r = rng(SEED);
    for (let i = 0; i < 2000; i++) {
      const sharded = r.next() < 0.5;
      const minStep = r.int(1, 10_000);
      const maxStep = r.int(minStep, 100_000_000);
      const appBits = r.int(0, 16);
      const body: Record<string, unknown> = {
        tag: `t${i}`,
        order: r.pick(['global', 'node']),
        step: r.int(minStep, maxStep),
        min_step: minStep,
        max_step: maxStep,
        target_seconds: r.int(1, 86_400),
        prefetch: r.int(1, 999) / 1000,
        max_id_limit: r.pick([String(2n ** 63n - 1n), String(r.int(2 ** 30, 2 ** 40)), '9007199254740993']),
        node_block: r.int(1, 1_000_000),
        enabled: r.next() < 0.5,
        description: 'd'.repeat(r.int(0, 255)),
      };
      if (sharded)
        Object.assign(body, {
          layout: 'sharded',
          shards: r.int(1, 4096),
          app_bits: appBits,
          app_id: r.int(0, 2 ** appBits - 1),
        });
      const spec = specFromCreate(body);
      const again = specFromCreate(specToJson(spec));
      assert.deepEqual(again, spec, `seed ${SEED} case ${i}`);
      assert.deepEqual(specToJson(again), specToJson(spec));
    }
  });
});
