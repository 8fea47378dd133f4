// Which log output LOG_FORMAT gives, by whether stdout is a terminal and pino-pretty is installed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { outputFormat } from '../../src/logger.js';

describe('outputFormat', () => {
  it('auto: pretty on a terminal, JSON on a pipe', () => {
    assert.equal(outputFormat('auto', true, true), 'pretty');
    assert.equal(outputFormat('auto', false, true), 'json');
  });

  it('json and pretty whatever stdout is', () => {
    for (const tty of [true, false]) {
      assert.equal(outputFormat('json', tty, true), 'json');
      assert.equal(outputFormat('pretty', tty, true), 'pretty');
    }
  });

  it('JSON whenever pino-pretty is not installed', () => {
    for (const tty of [true, false])
      for (const f of ['auto', 'json', 'pretty'] as const) assert.equal(outputFormat(f, tty, false), 'json');
  });
});
