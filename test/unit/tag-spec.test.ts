// Tag definitions: defaults, validation of create and update bodies (every message), the
// fields fixed at creation, and the wire form round trip.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_COUNTER } from '../../src/core/layout.js';
import {
  DEFAULTS,
  MODES,
  SERVED_MODES,
  specFromCreate,
  specFromUpdate,
  specToJson,
  type TagSpec,
} from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';
import { createProblems, specProblems } from '../helpers/spec-problems.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

const layoutOf = (s: TagSpec) => specOfMode(s, 'snowflake', 'the test').snowflake;

/** The problems a body is refused with (fails when it is accepted). */

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

describe('specFromCreate: snowflake tags', () => {
  it('takes the default preset', () => {
    const s = specFromCreate({ tag: 'evt', mode: 'snowflake' });
    assert.deepEqual(layoutOf(s), {
      epochMs: Date.UTC(2020, 0, 1),
      unit: 'ms',
      timeBits: 41,
      workerBits: 10,
      seqBits: 12,
      preset: 'snowflake',
    });
    // 28 bits of seconds from 2020 end in 2028: the preset needs force.
    const uid = specFromCreate({ tag: 'evt', mode: 'snowflake', preset: 'uid', force: true });
    assert.deepEqual(layoutOf(uid), {
      epochMs: Date.UTC(2020, 0, 1),
      unit: 's',
      timeBits: 28,
      workerBits: 22,
      seqBits: 13,
      preset: 'uid',
    });
    const fromIso = specFromCreate({ tag: 'evt', mode: 'snowflake', epoch: '2024-01-01T00:00:00Z' });
    assert.equal(layoutOf(fromIso).epochMs, Date.UTC(2024, 0, 1));
  });

  it('keeps segment fields and snowflake fields apart', () => {
    for (const k of [
      'order',
      'layout',
      'shards',
      'app_id',
      'app_bits',
      'step',
      'min_step',
      'max_step',
      'target_seconds',
      'prefetch',
      'max_id_limit',
      'node_block',
    ]) {
      const v = { order: 'global', layout: 'plain' }[k] ?? 1;
      assert.ok(
        createProblems({ tag: 'a', mode: 'snowflake', [k]: v }).includes(`${k} applies to segment tags only`),
        k,
      );
    }
    for (const [k, v] of [
      ['preset', 'uid'],
      ['epoch', 0],
      ['time_unit', 'ms'],
      ['time_bits', 41],
      ['worker_bits', 10],
      ['seq_bits', 12],
      ['force', true],
    ] as const) {
      assert.deepEqual(createProblems({ tag: 'a', [k]: v }), [`${k} applies to snowflake tags only`], k);
    }
  });

  it('checks the layout', () => {
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', preset: 'twitter' }), [
      'preset must be one of snowflake, uid, jssafe',
    ]);
    for (const epoch of ['yesterday', true, 1.5]) {
      assert.deepEqual(
        createProblems({ tag: 'a', mode: 'snowflake', epoch }),
        ['epoch must be an ISO 8601 date or milliseconds since 1970'],
        String(epoch),
      );
    }
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', epoch: Date.now() + 86_400_000 }), [
      'epoch must not lie in the future',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', time_bits: 19 }), [
      'time_bits must be an integer from 20 to 50',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', time_bits: 42 }), [
      'time_bits + worker_bits + seq_bits must not exceed 63',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', time_unit: 'us' }), [
      'time_unit must be "ms" or "s"',
    ]);
    assert.deepEqual(createProblems({ tag: 'a', mode: 'snowflake', force: 'yes' }), ['force must be true or false']);
  });

  it('refuses a layout that runs out within 10 years unless forced', () => {
    const p = createProblems({ tag: 'a', mode: 'snowflake', time_bits: 30 });
    assert.equal(p.length, 1);
    assert.match(p[0], /^this layout runs out at \d{4}-.*, in under 10 years; send "force": true to create it anyway$/);
    assert.equal(layoutOf(specFromCreate({ tag: 'a', mode: 'snowflake', time_bits: 30, force: true })).timeBits, 30);
  });

  it('refuses layout changes and segment fields on update', () => {
    const cur = specFromCreate({ tag: 'evt', mode: 'snowflake' });
    for (const k of ['preset', 'epoch', 'time_unit', 'time_bits', 'worker_bits', 'seq_bits', 'force']) {
      assert.deepEqual(
        specProblems(() => specFromUpdate(cur, { [k]: 1 })).filter((x) => x.startsWith(k)),
        [`${k} cannot be changed after creation`],
        k,
      );
    }
    assert.deepEqual(
      specProblems(() => specFromUpdate(cur, { step: 10 })),
      ['step applies to segment tags only'],
    );
    assert.deepEqual(specFromUpdate(cur, { enabled: false, description: 'x' }), {
      ...cur,
      enabled: false,
      description: 'x',
    });
  });
});

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
