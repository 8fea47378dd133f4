// Tag definition updates: the mutable fields changed and the rest kept, every field fixed at
// creation refused (even with the same value), and the same validation as create.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { specFromCreate, specFromUpdate } from '../../src/core/tag-spec.js';
import { specProblems } from '../helpers/spec-problems.js';

describe('specFromUpdate', () => {
  const current = specFromCreate({ tag: 'order', step: 200, min_step: 50, max_step: 10_000, max_id_limit: 1_000_000 });
  const updateProblems = (body: unknown) => specProblems(() => specFromUpdate(current, body));

  it('changes the mutable fields and keeps the rest', () => {
    const s = specFromUpdate(current, {
      enabled: false,
      max_id_limit: '2000000',
      description: 'x',
      step: 300,
      min_step: 60,
      max_step: 20_000,
      target_seconds: 5,
      prefetch: 0.5,
      node_block: 77,
    });
    assert.deepEqual(s, {
      ...current,
      enabled: false,
      maxIdLimit: '2000000',
      description: 'x',
      step: 300,
      minStep: 60,
      maxStep: 20_000,
      targetSeconds: 5,
      prefetch: 0.5,
      nodeBlock: 77,
    });
    assert.deepEqual(specFromUpdate(current, {}), current);
    assert.equal(current.enabled, true, 'the current spec is not modified');
  });

  it('refuses every field fixed at creation, even with the same value', () => {
    const fixed: Record<string, unknown> = {
      tag: 'order',
      mode: 'segment',
      order: 'global',
      layout: 'plain',
      shards: 1,
      app_id: 0,
      app_bits: 0,
    };
    for (const [k, v] of Object.entries(fixed)) {
      assert.deepEqual(updateProblems({ [k]: v }), [`${k} cannot be changed after creation`], k);
    }
    const p = updateProblems({ order: 'node', layout: 'sharded', enabled: true });
    assert.deepEqual(p, ['order cannot be changed after creation', 'layout cannot be changed after creation']);
  });

  it('validates like create', () => {
    for (const body of [null, [], 'x']) assert.deepEqual(updateProblems(body), ['body must be a JSON object']);
    assert.deepEqual(updateProblems({ colour: 'red' }), ['unknown field "colour"']);
    assert.deepEqual(updateProblems({ step: 0 }), ['step must be an integer from 1 to 100000000']);
    assert.deepEqual(updateProblems({ enabled: 'no' }), ['enabled must be true or false']);
    assert.deepEqual(updateProblems({ max_id_limit: null }), [
      'max_id_limit must be a positive integer (a decimal string above 2^53) no larger than 2^63-1',
    ]);
    assert.deepEqual(updateProblems({ min_step: 300 }), ['step must lie between min_step and max_step']);
    assert.deepEqual(updateProblems({ max_step: 40 }), [
      'min_step must not exceed max_step',
      'step must lie between min_step and max_step',
    ]);
  });
});
