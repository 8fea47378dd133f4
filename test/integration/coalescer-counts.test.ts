// suite: single — a coalescer on the single-server Redis, driven directly
// A coalescer refuses a count that is not a whole number of IDs itself, whatever let it through
// the door: Infinity (count=1e309), NaN, a fraction, a count past 2^53, zero or below. Such a
// count once reached an order-global tag's coalescer, was answered ID_SPACE_EXHAUSTED and left
// every later request of the tag waiting. Here each bad count is refused with INVALID_ARGUMENT,
// takes nothing, and the requests around it are served with IDs that keep rising.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Range } from '../../src/core/ranges.js';
import { IdmintError } from '../../src/errors.js';
import type { Coalescer } from '../../src/service/coalescer.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { cleanup, testNames } from '../../tools/env.js';
import { openServedCoalescer } from '../helpers/served-coalescer.js';

const BAD_COUNTS = [Number.POSITIVE_INFINITY, Number.NaN, 2.5, 2 ** 53, 0, -3];

describe('a coalescer given a count that is not a whole number of IDs', () => {
  const names = testNames();
  let redis: RedisClient;
  let coalescer: Coalescer;

  before(async () => {
    ({ coalescer, redis } = await openServedCoalescer(names, 'counts'));
  });
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('refuses it with INVALID_ARGUMENT, takes nothing, and serves the requests around it', async () => {
    let last = 0;
    const served = (runs: readonly Range[], want: number) => {
      const ids = runs.flatMap(([first, end]) => Array.from({ length: end - first + 1 }, (_, k) => first + k));
      assert.equal(ids.length, want);
      for (const id of ids) {
        assert.ok(id > last, `IDs rise: ${id} after ${last}`);
        last = id;
      }
    };
    for (const bad of BAD_COUNTS) {
      // The bad count arrives in the same turn as good ones, before and after it.
      const before = coalescer.take(2);
      const refused = coalescer.take(bad);
      const mapped = coalescer.takeMapped<unknown>(bad, { map: () => 'taken', recover: (err) => err });
      const after = coalescer.take(3);
      await assert.rejects(refused, (err: unknown) => err instanceof IdmintError && err.code === 'INVALID_ARGUMENT');
      const recovered = await mapped;
      assert.ok(
        recovered instanceof IdmintError && recovered.code === 'INVALID_ARGUMENT',
        `takeMapped of ${bad}: ${String(recovered)}`,
      );
      served(await before, 2);
      served(await after, 3);
    }
    // Nothing was taken for the refused counts: the IDs handed out are exactly the good requests'.
    assert.equal(last, BAD_COUNTS.length * 5);
  });
});
