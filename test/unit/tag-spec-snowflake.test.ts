// Snowflake tag definitions: the default preset and an epoch, segment and snowflake fields kept
// apart, the layout's checks, short-lived layouts refused unless forced, and the layout fixed on
// update.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { specFromCreate, specFromUpdate, type TagSpec } from '../../src/core/tag-spec.js';
import { createProblems, specProblems } from '../helpers/spec-problems.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

const layoutOf = (s: TagSpec) => specOfMode(s, 'snowflake', 'the test').snowflake;

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
