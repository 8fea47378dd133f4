// The increasing check of tools/order.ts that the tests share: strict, over bigints, numbers and
// rule IDs (strings: a longer one is above, one length compares by its characters).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertIncreasing, increasing } from '../../tools/order.js';

describe('assertIncreasing', () => {
  it('passes strictly increasing bigints, numbers and rule IDs, and an empty or one-ID sequence', () => {
    assertIncreasing([1n, 2n, 10n]);
    assertIncreasing([1, 2, 10]);
    assertIncreasing(['9', '10', 'A2', 'A3', 'B0', 'AA00']);
    assertIncreasing([]);
    assertIncreasing([5n]);
  });

  it('fails on an equal ID, naming the position and both IDs', () => {
    assert.throws(() => assertIncreasing([1n, 2n, 2n, 3n], 'take 1'), {
      name: 'AssertionError',
      message: 'take 1: ID #2 2 is not above ID #1 2',
    });
  });

  it('fails on a lower ID', () => {
    assert.throws(() => assertIncreasing([3, 1]), { message: 'IDs: ID #1 1 is not above ID #0 3' });
  });

  it('orders rule IDs by length first, then by their characters', () => {
    assert.throws(() => assertIncreasing(['100', '99']), { message: 'IDs: ID #1 "99" is not above ID #0 "100"' });
    assert.throws(() => assertIncreasing(['A1', 'A1']), /ID #1 "A1" is not above ID #0 "A1"/);
    assert.throws(() => assertIncreasing(['B1', 'A2']), /ID #1 "A2" is not above ID #0 "B1"/);
  });
});

describe('increasing', () => {
  it('reports every place the sequence does not go up, and the pairs compared', () => {
    assert.deepEqual(increasing([1n, 3n, 2n, 4n, 4n]), {
      checked: 4,
      violations: [
        { index: 2, id: 2n, previous: 3n },
        { index: 4, id: 4n, previous: 4n },
      ],
    });
    assert.deepEqual(increasing([]), { checked: 0, violations: [] });
  });
});
