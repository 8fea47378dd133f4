// key_retention_seconds, how long a request's idempotency key is remembered: a day by default
// on every mode, 60 s to 30 days, changeable by update, shown in the wire form.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { specFromCreate, specFromUpdate, specToJson } from '../../src/core/tag-spec.js';
import { createProblems, specProblems } from '../helpers/spec-problems.js';

describe('key_retention_seconds', () => {
  it('defaults to a day, on every mode', () => {
    assert.equal(specFromCreate({ tag: 'a' }).keyRetentionSeconds, 86_400);
    assert.equal(specFromCreate({ tag: 'a', mode: 'snowflake' }).keyRetentionSeconds, 86_400);
    assert.equal(
      specFromCreate({ tag: 'a', mode: 'rule', template: '{counter:4}', max_counter: 9999 }).keyRetentionSeconds,
      86_400,
    );
  });

  it('accepts 60 s to 30 days, at creation and by update, and shows it', () => {
    for (const v of [60, 3600, 2_592_000]) {
      const s = specFromCreate({ tag: 'a', key_retention_seconds: v });
      assert.equal(s.keyRetentionSeconds, v);
      assert.equal(specToJson(s).key_retention_seconds, v);
      assert.equal(specFromUpdate(specFromCreate({ tag: 'a' }), { key_retention_seconds: v }).keyRetentionSeconds, v);
    }
    const sf = specFromCreate({ tag: 'a', mode: 'snowflake', key_retention_seconds: 120 });
    assert.equal(specToJson(sf).key_retention_seconds, 120);
    assert.equal(specFromUpdate(sf, { key_retention_seconds: 600 }).keyRetentionSeconds, 600);
  });

  it('refuses values out of bounds', () => {
    const msg = 'key_retention_seconds must be an integer from 60 to 2592000';
    for (const v of [59, 0, 2_592_001, 1.5, '3600', null]) {
      assert.deepEqual(createProblems({ tag: 'a', key_retention_seconds: v }), [msg], String(v));
      assert.deepEqual(
        specProblems(() => specFromUpdate(specFromCreate({ tag: 'a' }), { key_retention_seconds: v })),
        [msg],
      );
    }
  });
});
