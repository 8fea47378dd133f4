// The kinds of tag as one union: a definition read from its stored form (the row's columns and
// its options JSON) is the spec that was written, of its kind, with that kind's settings; and
// the options JSON written is byte for byte what was written before the union.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_KEY_RETENTION_SECONDS,
  parseOptions,
  specOfMode,
  storedOptions,
  tagFromStorage,
  workerWidths,
  type TagColumns,
  type TagSpec,
} from '../../src/core/tag-kinds.js';
import { specFromCreate, specToJson } from '../../src/core/tag-spec.js';

/** The row's columns of a spec: everything but its mode, its kind's settings and the options. */
function columnsOf(s: TagSpec): TagColumns {
  const {
    tag,
    order,
    layout,
    shards,
    appId,
    appBits,
    step,
    minStep,
    maxStep,
    targetSeconds,
    prefetch,
    maxIdLimit,
    nodeBlock,
    stride,
    offset,
    enabled,
    description,
  } = s;
  return {
    tag,
    order,
    layout,
    shards,
    appId,
    appBits,
    step,
    minStep,
    maxStep,
    targetSeconds,
    prefetch,
    maxIdLimit,
    nodeBlock,
    stride,
    offset,
    enabled,
    description,
  };
}

/** The options JSON as the tag store wrote it when the tag was flat (mode plus nullable settings). */
function flatOptionsJson(s: Record<string, unknown>): string {
  return JSON.stringify({
    snowflake: s.snowflake ?? undefined,
    rule: s.rule ?? undefined,
    permute: s.permute ?? undefined,
    keyRetentionSeconds: s.keyRetentionSeconds,
  });
}

const KEY = '00112233445566778899aabbccddeeff';
const specs: Record<string, TagSpec> = {
  segment: specFromCreate({ tag: 'orders', key_retention_seconds: 600 }),
  sharded: specFromCreate({
    tag: 'users',
    layout: 'sharded',
    shards: 16,
    app_id: 3,
    order: 'node',
    stride: 4,
    offset: 1,
  }),
  permuted: (() => {
    const s = specOfMode(specFromCreate({ tag: 'coupons', permute: { digits: 10 } }), 'segment', 'the test');
    // The tag store gives a permuted tag its key before it is written.
    return { ...s, permute: s.permute && { ...s.permute, key: KEY } };
  })(),
  rule: specFromCreate({
    tag: 'invoice',
    mode: 'rule',
    template: 'INV{yyyy}{MM}{dd}{counter:6}',
    max_counter: 999_999,
    reset_seconds: 86_400,
    time_zone: 'Europe/Berlin',
  }),
  snowflake: specFromCreate({ tag: 'events', mode: 'snowflake', preset: 'uid', force: true, description: 'audit' }),
};

describe('tag kinds: the stored form', () => {
  for (const [name, spec] of Object.entries(specs)) {
    it(`reads back a ${name} tag as the spec written, of its kind`, () => {
      const json = JSON.stringify(storedOptions(spec));
      const back = tagFromStorage(spec.mode, columnsOf(spec), parseOptions(json));
      assert.deepEqual(back, spec);
      assert.equal(back.mode, spec.mode);
    });

    it(`writes a ${name} tag's options exactly as the flat tag did`, () => {
      const flat = { ...spec, snowflake: null, rule: null, permute: null, ...spec };
      assert.equal(JSON.stringify(storedOptions(spec)), flatOptionsJson(flat));
    });
  }

  it("gives each kind its own settings and no other kind's", () => {
    const options = parseOptions(JSON.stringify(storedOptions(specs.rule)));
    assert.deepEqual(Object.keys(options), ['rule', 'keyRetentionSeconds']);
    assert.deepEqual(Object.keys(parseOptions(JSON.stringify(storedOptions(specs.snowflake)))), [
      'snowflake',
      'keyRetentionSeconds',
    ]);
    assert.deepEqual(Object.keys(parseOptions(JSON.stringify(storedOptions(specs.permuted)))), [
      'permute',
      'keyRetentionSeconds',
    ]);
    assert.deepEqual(Object.keys(parseOptions(JSON.stringify(storedOptions(specs.segment)))), ['keyRetentionSeconds']);
  });

  it('reads a row without options (older rows) with the defaults', () => {
    const back = tagFromStorage('segment', columnsOf(specs.segment), parseOptions(null));
    assert.equal(back.mode, 'segment');
    assert.equal(back.keyRetentionSeconds, DEFAULT_KEY_RETENTION_SECONDS);
    assert.equal(specOfMode(back, 'segment', 'the test').permute, null);
  });

  it('refuses a row whose kind lacks its settings, or whose mode this version does not know', () => {
    assert.throws(() => tagFromStorage('rule', columnsOf(specs.rule), {}), /stored as a rule tag without its rule/);
    assert.throws(
      () => tagFromStorage('snowflake', columnsOf(specs.snowflake), { rule: specOfMode(specs.rule, 'rule', 't').rule }),
      /without its layout/,
    );
    assert.throws(
      () => tagFromStorage('hilo', columnsOf(specs.segment), {}),
      /mode "hilo", which this version does not know/,
    );
  });

  it('serializes each kind to the admin API fields it had', () => {
    const sf = specToJson(specs.snowflake);
    assert.deepEqual(Object.keys(sf), [
      'tag',
      'mode',
      'preset',
      'epoch',
      'time_unit',
      'time_bits',
      'worker_bits',
      'seq_bits',
      'enabled',
      'description',
      'key_retention_seconds',
    ]);
    const rule = specToJson(specs.rule);
    for (const k of ['layout', 'shards', 'app_id', 'app_bits', 'max_id_limit', 'permute']) assert.ok(!(k in rule), k);
    assert.equal(rule.template, 'INV{yyyy}{MM}{dd}{counter:6}');
    const permuted = specToJson(specs.permuted);
    assert.deepEqual(permuted.permute, { digits: 10 });
    assert.ok(!JSON.stringify(permuted).includes(KEY), 'the key is never shown');
    assert.ok(!('permute' in specToJson(specs.segment)));
  });
});

describe('tag kinds: narrowing', () => {
  it('specOfMode gives the spec of the kind asked for, and refuses another', () => {
    assert.equal(specOfMode(specs.rule, 'rule', 'the test').rule.timeZone, 'Europe/Berlin');
    assert.throws(
      () => specOfMode(specs.segment, 'snowflake', 'an import'),
      /an import: tag "orders" is a segment tag, not a snowflake tag/,
    );
  });

  it('workerWidths names the widths of the snowflake tags only', () => {
    const wide = specFromCreate({ tag: 'b', mode: 'snowflake' });
    assert.deepEqual(
      [...workerWidths(Object.values(specs).concat(wide))].sort((a, b) => a - b),
      [10, 22],
    );
  });
});
