// The per-source limits' settings: their defaults (as docs/CONFIG.md gives them), 0 turning a
// limit off, and a clear refusal at start-up of a value out of range.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

const SETTINGS = [
  ['SOURCE_MAX_FINITE_IDS_PER_SECOND', 'sourceMaxFiniteIdsPerSecond', 10_000],
  ['SOURCE_MAX_REFUSALS_PER_SECOND', 'sourceMaxRefusalsPerSecond', 1000],
  ['SOURCE_BURST_SECONDS', 'sourceBurstSeconds', 10],
] as const;

function refused(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    return e.problems;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('per-source limit settings', () => {
  it('have the defaults docs/CONFIG.md gives', () => {
    const c = loadConfig({});
    const doc = readFileSync(new URL('../../docs/CONFIG.md', import.meta.url), 'utf8');
    for (const [name, field, def] of SETTINGS) {
      assert.equal(c[field], def, name);
      assert.match(
        doc,
        new RegExp(`^\\| \`${name}\` \\| \`${def}\` \\|`, 'm'),
        `docs/CONFIG.md documents ${name} with its default`,
      );
    }
  });

  it('read 0 as off for the two limits, not for the burst', () => {
    const c = loadConfig({
      SOURCE_MAX_FINITE_IDS_PER_SECOND: '0',
      SOURCE_MAX_REFUSALS_PER_SECOND: '0',
      SOURCE_BURST_SECONDS: '1',
    });
    assert.equal(c.sourceMaxFiniteIdsPerSecond, 0);
    assert.equal(c.sourceMaxRefusalsPerSecond, 0);
    assert.equal(c.sourceBurstSeconds, 1);
    assert.deepEqual(refused({ SOURCE_BURST_SECONDS: '0' }), [
      'SOURCE_BURST_SECONDS must be between 1 and 3600, got 0',
    ]);
  });

  it('stop the start-up on a value that is not a whole number in range, naming the variable', () => {
    assert.deepEqual(refused({ SOURCE_MAX_FINITE_IDS_PER_SECOND: '1e4' }), [
      'SOURCE_MAX_FINITE_IDS_PER_SECOND must be a whole number, got "1e4"',
    ]);
    assert.deepEqual(refused({ SOURCE_MAX_REFUSALS_PER_SECOND: '-1' }), [
      'SOURCE_MAX_REFUSALS_PER_SECOND must be a whole number, got "-1"',
    ]);
    assert.deepEqual(refused({ SOURCE_MAX_REFUSALS_PER_SECOND: '2000000000' }), [
      'SOURCE_MAX_REFUSALS_PER_SECOND must be between 0 and 1000000000, got 2000000000',
    ]);
    assert.deepEqual(refused({ SOURCE_BURST_SECONDS: '3601' }), [
      'SOURCE_BURST_SECONDS must be between 1 and 3600, got 3601',
    ]);
  });
});
