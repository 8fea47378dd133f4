// Tag definitions at creation: the defaults every field takes, the documented examples and
// boundary values, and every validation message of a create body.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_COUNTER } from '../../src/core/layout.js';
import { DEFAULTS, MODES, SERVED_MODES, specFromCreate, type TagSpec } from '../../src/core/tag-spec.js';
import { createProblems } from '../helpers/spec-problems.js';

const INT_FIELDS: [wire: string, min: number, max: number][] = [
  ['shards', 1, 4096],
  ['app_bits', 0, 16],
  ['app_id', 0, 65535],
  ['step', 1, 100_000_000],
  ['min_step', 1, 100_000_000],
  ['max_step', 1, 100_000_000],
  ['target_seconds', 1, 86_400],
  ['node_block', 1, 1_000_000],
];

describe('specFromCreate: defaults', () => {
  it('fills every field of a plain segment tag', () => {
    const s = specFromCreate({ tag: 'order' });
    const want: Partial<TagSpec> = {
      tag: 'order',
      mode: 'segment',
      order: 'global',
      layout: 'plain',
      shards: 1,
      appId: 0,
      appBits: 0,
      step: 1000,
      minStep: 100,
      maxStep: 1_000_000,
      targetSeconds: 60,
      prefetch: 0.2,
      maxIdLimit: String(MAX_COUNTER),
      nodeBlock: 1000,
      enabled: true,
      description: '',
      permute: null,
    };
    for (const [k, v] of Object.entries(want)) assert.deepEqual(s[k as keyof TagSpec], v, k);
    assert.equal(DEFAULTS.maxIdLimit, '9007199254740991');
  });

  it('a sharded tag defaults to 64 shards and 8 app bits', () => {
    const s = specFromCreate({ tag: 'user', layout: 'sharded', app_id: 3 });
    assert.equal(s.shards, 64);
    assert.equal(s.appBits, 8);
    assert.equal(s.appId, 3);
  });

  it('widens the default step bounds around a given step', () => {
    const small = specFromCreate({ tag: 'a', step: 50 });
    assert.deepEqual([small.step, small.minStep, small.maxStep], [50, 50, 1_000_000]);
    const big = specFromCreate({ tag: 'a', step: 5_000_000 });
    assert.deepEqual([big.step, big.minStep, big.maxStep], [5_000_000, 100, 5_000_000]);
  });

  it('accepts the documented examples and every boundary value', () => {
    specFromCreate({ tag: 'order', mode: 'segment' });
    specFromCreate({ tag: 'order', mode: 'segment', order: 'node' });
    specFromCreate({ tag: 'user', mode: 'segment', layout: 'sharded', app_id: 3, shards: 64 });
    specFromCreate({ tag: 'x'.repeat(64) });
    specFromCreate({ tag: 'A-z_0.9' });
    specFromCreate({ tag: 'b', layout: 'sharded', shards: 4096, app_bits: 16, app_id: 65535 });
    specFromCreate({ tag: 'b', layout: 'sharded', shards: 1, app_bits: 0, app_id: 0 });
    specFromCreate({ tag: 'c', step: 100_000_000, min_step: 100_000_000, max_step: 100_000_000 });
    specFromCreate({ tag: 'c', step: 1, min_step: 1, max_step: 1 });
    specFromCreate({ tag: 'd', target_seconds: 86_400, node_block: 1_000_000, prefetch: 0.999 });
    specFromCreate({ tag: 'd', target_seconds: 1, node_block: 1, prefetch: 0.001 });
    specFromCreate({ tag: 'e', description: 'é'.repeat(255), enabled: false });
    assert.equal(specFromCreate({ tag: 'f', max_id_limit: '9223372036854775807' }).maxIdLimit, '9223372036854775807');
    assert.equal(specFromCreate({ tag: 'f', max_id_limit: 25 }).maxIdLimit, '25');
    assert.equal(specFromCreate({ tag: 'f', max_id_limit: '1' }).maxIdLimit, '1');
  });
});

describe('specFromCreate: every validation message', () => {
  it('refuses a body that is not an object', () => {
    for (const body of [null, undefined, [], [{ tag: 'a' }], 'order', 5, true]) {
      assert.deepEqual(createProblems(body), ['body must be a JSON object'], JSON.stringify(body));
    }
  });

  it('requires the tag name, and checks its form', () => {
    assert.deepEqual(createProblems({}), ['tag is required']);
    assert.deepEqual(createProblems({ mode: 'segment' }), ['tag is required']);
    for (const tag of ['', 'a b', 'x'.repeat(65), 'ü', 'a/b', 'a:b', '{a}', 5, null, ['a']]) {
      assert.deepEqual(createProblems({ tag }), ['tag must match [A-Za-z0-9_.-]{1,64}'], JSON.stringify(tag));
    }
  });

  it('names unknown fields', () => {
    assert.deepEqual(createProblems({ tag: 'a', colour: 'red' }), ['unknown field "colour"']);
    assert.deepEqual(
      createProblems({ tag: 'a', appId: 3 }),
      ['unknown field "appId"'],
      'the wire names are snake_case',
    );
  });

  it('checks mode, order and layout', () => {
    assert.deepEqual(createProblems({ tag: 'a', mode: 'nope' }), ['mode must be one of segment, snowflake, rule']);
    for (const mode of MODES.filter((m) => !SERVED_MODES.includes(m))) {
      assert.deepEqual(createProblems({ tag: 'a', mode }), [
        `mode "${mode}" is not available in this version; available: ${SERVED_MODES.join(', ')}`,
      ]);
    }
    assert.ok(SERVED_MODES.includes('segment'));
    for (const order of ['Global', 'local', '', null, 1])
      assert.deepEqual(createProblems({ tag: 'a', order }), ['order must be "global" or "node"']);
    for (const layout of ['Plain', 'snowflake', null, 0])
      assert.deepEqual(createProblems({ tag: 'a', layout }), ['layout must be "plain" or "sharded"']);
  });

  it('checks every integer field for type and range', () => {
    let n = 0;
    for (const [wire, min, max] of INT_FIELDS) {
      const msg = `${wire} must be an integer from ${min} to ${max}`;
      for (const v of [min - 1, max + 1, 1.5, '5', null, true, [], Number.NaN, Infinity]) {
        const body = { tag: 'a', layout: 'sharded', [wire]: v };
        assert.deepEqual(createProblems(body), [msg], JSON.stringify(body));
        n++;
      }
    }
    assert.equal(n, INT_FIELDS.length * 9);
  });

  it('checks prefetch, max_id_limit, enabled and description', () => {
    for (const prefetch of [0, 1, -0.1, 1.5, '0.5', null]) {
      assert.deepEqual(
        createProblems({ tag: 'a', prefetch }),
        ['prefetch must be a number between 0 and 1 (exclusive)'],
        String(prefetch),
      );
    }
    const lim = 'max_id_limit must be a positive integer (a decimal string above 2^53) no larger than 2^63-1';
    for (const v of [
      0,
      '0',
      -5,
      '-5',
      '01',
      '1.5',
      1.5,
      '1e9',
      ' 25',
      'abc',
      '',
      null,
      true,
      2 ** 60,
      '9223372036854775808',
      '99999999999999999999',
    ]) {
      assert.deepEqual(createProblems({ tag: 'a', max_id_limit: v }), [lim], JSON.stringify(v));
    }
    for (const enabled of ['true', 1, 0, null])
      assert.deepEqual(createProblems({ tag: 'a', enabled }), ['enabled must be true or false']);
    for (const description of ['x'.repeat(256), 5, null, {}]) {
      assert.deepEqual(createProblems({ tag: 'a', description }), [
        'description must be a string of at most 255 characters',
      ]);
    }
  });

  it('checks the fields together', () => {
    assert.deepEqual(createProblems({ tag: 'a', min_step: 500, max_step: 400, step: 450 }), [
      'min_step must not exceed max_step',
      'step must lie between min_step and max_step',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', step: 50, min_step: 60 }), [
      'step must lie between min_step and max_step',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', step: 5000, max_step: 4000 }), [
      'step must lie between min_step and max_step',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', layout: 'sharded', app_bits: 2, app_id: 4 }), [
      'app_id must be below 2^app_bits (4)',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', layout: 'sharded', app_bits: 0, app_id: 1 }), [
      'app_id must be below 2^app_bits (1)',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', shards: 2 }), ['shards and app_id apply to layout "sharded" only']);
    assert.deepEqual(createProblems({ tag: 'a', layout: 'plain', app_id: 1 }), [
      'shards and app_id apply to layout "sharded" only',
    ]);
    // 64 shards x 8 app bits = 14 low bits: the first counter (1) needs an ID limit of 2^15 - 1.
    assert.deepEqual(createProblems({ tag: 'a', layout: 'sharded', max_id_limit: 2 ** 15 - 2 }), [
      'max_id_limit is too small for this layout to issue any ID',
    ]);
    specFromCreate({ tag: 'a', layout: 'sharded', max_id_limit: 2 ** 15 - 1 });
  });

  it('reports every field problem at once, before the whole-spec checks', () => {
    const p = createProblems({ tag: 'a b', colour: 'red', step: 0, order: 'x', min_step: 10, max_step: 5 });
    assert.deepEqual(p, [
      'unknown field "colour"',
      'tag must match [A-Za-z0-9_.-]{1,64}',
      'order must be "global" or "node"',
      'step must be an integer from 1 to 100000000',
    ]);
  });

  // A Leaf or Tinyid user who raises only min_step (or lowers only max_step) expects the
  // default step to follow, as the default bounds already follow a given step.
  it('derives the default step from given step bounds', () => {
    assert.equal(specFromCreate({ tag: 'a', min_step: 5000 }).step, 5000);
    assert.equal(specFromCreate({ tag: 'a', max_step: 500 }).step, 500);
  });
});
