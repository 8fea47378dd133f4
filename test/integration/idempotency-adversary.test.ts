// suite: cluster
// An adversary for idempotency keys, as code: a client that sends each keyed request, and
// retries it from another process at the worst moment (after the first attempt took its IDs,
// before its answer was kept), sometimes with a different count under the same key. fast-check
// searches sequences of such requests on a fresh order-global tag per case, each request sent
// the claim's way (claim, take, record) or taken in its key's one call (idem-takes-4.lua, which
// falls back to the claim where a segment ends), as a real keyed request of the tag would be;
// after each case the
// next unkeyed ID proves how many IDs were consumed: exactly the counts of the keys answered,
// whatever the retries and refusals, and every key has had one answer. The seed is printed;
// IDEMPOTENCY_SEED replays one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { IdmintError } from '../../src/errors.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const RUNS = Number(process.env.IDEMPOTENCY_RUNS ?? '') || 30;
const SEED = process.env.IDEMPOTENCY_SEED ? Number(process.env.IDEMPOTENCY_SEED) : Math.floor(Math.random() * 2 ** 31);

/** One request of a case: its key (of three), its count, the process it goes to, and its adversary's retry. */
interface Step {
  readonly key: number;
  readonly count: number;
  readonly side: number;
  /** Retry it from the other process while its take is done and its answer not yet kept. */
  readonly retryMidway: boolean;
  /** Then retry it once more afterwards (a plain replay). */
  readonly replay: boolean;
  /** Sent (and retried) to be taken in its key's one call where the counter allows. */
  readonly inKey: boolean;
}

const step: fc.Arbitrary<Step> = fc.record({
  key: fc.integer({ min: 0, max: 2 }),
  count: fc.integer({ min: 1, max: 4 }),
  side: fc.integer({ min: 0, max: 1 }),
  retryMidway: fc.boolean(),
  replay: fc.boolean(),
  inKey: fc.boolean(),
});

describe('idempotency keys against an adversary that retries at the worst moment', () => {
  const names = testNames();
  const nodes: LocalNode[] = [];
  let keys: IdempotencyKeys[] = [];
  let cases = 0;

  before(async () => {
    nodes.push(await startLocalNode(names), await startLocalNode(names));
    keys = nodes.map(
      (n) => new IdempotencyKeys(new IdempotencyRecords(n.rt.segments, n.rt.keys), { maxKeys: 100_000 }),
    );
  });
  after(async () => {
    await Promise.allSettled(nodes.map((n) => n.close()));
    await cleanup(names);
  });

  /**
   * A keyed request of `count` IDs through process `side`; midway: run while its take is done, before its answer is
   * kept.
   */
  async function send(
    tag: string,
    side: number,
    key: string,
    count: number,
    inKey: boolean,
    midway?: () => void,
  ): Promise<string[] | IdmintError> {
    const n = nodes[side];
    const stored = await n.rt.ids.prepare({ tag, as: 'ids', count: 1 });
    const direct = inKey ? { shard: 0, scope: '', stride: 1, offset: 0, taken: () => {} } : undefined;
    try {
      return await keys[side].issue(
        stored,
        key,
        fingerprintOf({ count, shape: 'ids' }),
        count,
        async () => {
          const ids = await n.rt.ids.issue({ tag, as: 'ids', count });
          midway?.();
          return ids;
        },
        direct,
      );
    } catch (err) {
      if (err instanceof IdmintError) return err;
      throw err;
    }
  }

  it('consumes exactly the IDs of the answered keys, and gives each key one answer', {
    timeout: 170_000,
  }, async (t) => {
    t.diagnostic(`seed ${SEED} (IDEMPOTENCY_SEED=${SEED} replays it)`);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        const tag = `adv${++cases}`;
        await createTag(nodes[0].url, { tag, step: 100, min_step: 100 });
        const answers = new Map<string, { count: number; ids: string[] }>();
        const check = (key: string, count: number, got: string[] | IdmintError, what: string) => {
          const kept = answers.get(key);
          if (got instanceof IdmintError) {
            // A refusal is right only for a different request under a key that has an answer.
            assert.equal(got.code, 'IDEMPOTENCY_KEY_MISMATCH', `${what}: ${got.message}`);
            assert.ok(
              kept !== undefined && kept.count !== count,
              `${what}: refused as a mismatch, but it is the key's own request`,
            );
            return;
          }
          if (kept === undefined) answers.set(key, { count, ids: got });
          else assert.deepEqual(got, kept.ids, `${what}: one key, one answer`);
        };
        for (const [i, s] of steps.entries()) {
          const key = `k${s.key}`;
          const other = 1 - s.side;
          let retry: Promise<string[] | IdmintError> | undefined;
          const got = await send(
            tag,
            s.side,
            key,
            s.count,
            s.inKey,
            s.retryMidway ? () => void (retry = send(tag, other, key, s.count, s.inKey)) : undefined,
          );
          check(key, s.count, got, `step ${i}`);
          if (retry !== undefined) check(key, s.count, await retry, `step ${i}, its retry midway`);
          if (s.replay) check(key, s.count, await send(tag, other, key, s.count, !s.inKey), `step ${i}, its replay`);
        }
        const consumed = [...answers.values()].reduce((sum, a) => sum + a.count, 0);
        const next = await nodes[0].rt.ids.issue({ tag, as: 'ids', count: 1 });
        assert.equal(
          next[0],
          String(consumed + 1),
          `the next unkeyed ID shows ${Number(next[0]) - 1} IDs consumed; the answered keys hold ${consumed}`,
        );
      }),
      { numRuns: RUNS, seed: SEED, includeErrorInReport: true },
    );
  });
});
