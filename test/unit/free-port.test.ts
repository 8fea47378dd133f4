// The ports the test tools' freePort draws from: outside the kernel's ephemeral range, below it
// where there is room, else above it, else none (the kernel's choice).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { portPool } from '../../tools/child.js';

describe('portPool', () => {
  it('draws just below the range where there is room (Linux default 32768-60999)', () => {
    assert.deepEqual(portPool(32768, 60999), [20768, 32767]);
  });

  it('never goes under 10000 below the range', () => {
    assert.deepEqual(portPool(15000, 60999), [10000, 14999]);
  });

  it('draws above the range when it starts at or near 10000', () => {
    assert.deepEqual(portPool(10000, 40000), [40001, 52000]);
    assert.deepEqual(portPool(1025, 60999), [61000, 65535]);
  });

  it('has no pool when the range leaves fewer than 1000 ports on either side', () => {
    assert.equal(portPool(1025, 65000), undefined);
  });

  it('never draws a port of the range', () => {
    for (const [low, high] of [
      [32768, 60999],
      [10500, 20000],
      [1025, 30000],
      [49152, 65535],
    ] as const) {
      const pool = portPool(low, high);
      assert.ok(pool, `a pool for ${low}-${high}`);
      assert.ok(pool[1] < low || pool[0] > high, `${pool} is outside ${low}-${high}`);
      assert.ok(pool[0] >= 1024 && pool[1] <= 65535);
    }
  });
});
