// The Leaf snowflake import against a model of Leaf's snowflake mode (leaf-model.ts): nodes with ZooKeeper worker IDs,
// random sequence starts, clock steps (a node's clock up to half a day ahead of idmint's at the import) and restarts,
// Leaf's default twepoch or its own; the tag planLeafSnowflake creates must give no ID, at any time from the import on,
// any worker and any sequence, that Leaf handed out. The test is skipped while src/core/import-plan-snowflake.ts does
// not exist.
//
// IMPORT_FUZZ_FOCUS=old-advice checks instead what MIGRATING.md advised before that planner:
// an idmint snowflake tag of the default layout, or with a later epoch.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Current, ImportPlan } from '../../src/core/import-plan.js';
import { DEFAULT_EPOCH_MS, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { specFromCreate } from '../../src/core/tag-spec.js';
import { FOCUS, params } from './fuzz-params.js';
import { snowflakeCollisions } from './idmint-reach.js';
import { LEAF_TWEPOCH, runLeafSnowflake, type LeafSnowflakeEvent, type LeafSnowflakeScenario } from './leaf-model.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

const none: Current = { live: new Map(), deleted: new Set() };

type PlanLeafSnowflake = (
  o: { tag: string; twepochMs?: number; layout?: { timeBits: number; workerBits: number; seqBits: number } },
  current: Current,
  nowMs: number,
) => ImportPlan;

const planner: PlanLeafSnowflake | undefined = await import('../../src/core/import-plan-snowflake.js' as string)
  .then((m: { planLeafSnowflake?: PlanLeafSnowflake }) => m.planLeafSnowflake)
  .catch(() => undefined);

// Leaf ran up to a day before this test: idmint refuses an epoch in the future.
const LATEST = Date.now() - 86_400_000;

interface Case {
  readonly s: LeafSnowflakeScenario;
  /** Whether the operator passes --twepoch (always when Leaf's is not the default) and --layout. */
  readonly giveTwepoch: boolean;
  readonly giveLayout: boolean;
}

const eventArb: fc.Arbitrary<LeafSnowflakeEvent> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      dt: fc.oneof(fc.nat(3), fc.nat(5000), fc.nat(86_400_000)),
      kind: fc.constant('get' as const),
      node: fc.nat(3),
      n: fc.integer({ min: 1, max: 40 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      dt: fc.nat(5000),
      kind: fc.constant('clock' as const),
      node: fc.nat(3),
      delta: fc.oneof(
        fc.integer({ min: -10_000, max: 10_000 }),
        fc.integer({ min: -6 * 3_600_000, max: 6 * 3_600_000 }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ dt: fc.nat(60_000), kind: fc.constant('restart' as const), node: fc.nat(3) }) },
);

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    twepoch: fc.oneof(
      { weight: 3, arbitrary: fc.constant(LEAF_TWEPOCH) },
      { weight: 1, arbitrary: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2023, 0, 1) }) },
    ),
    workers: fc.uniqueArray(fc.oneof(fc.nat(3), fc.nat(1023)), { minLength: 1, maxLength: 4 }),
    startMs: fc.integer({ min: Date.UTC(2024, 0, 1), max: LATEST - 7 * 86_400_000 }),
    events: fc.array(eventArb, { minLength: 1, maxLength: 12 }),
    draws: fc.array(fc.nat(99), { minLength: 1, maxLength: 8 }),
    importDelay: fc.oneof(fc.nat(5), fc.nat(600_000)),
    giveTwepoch: fc.boolean(),
    giveLayout: fc.boolean(),
  })
  .map(({ giveTwepoch, giveLayout, ...s }) => ({
    s,
    giveTwepoch: giveTwepoch || s.twepoch !== LEAF_TWEPOCH,
    giveLayout,
  }));

function check(layoutOf: (c: Case, importMs: number) => SnowflakeLayout | undefined): fc.IPropertyWithHooks<[Case]> {
  return fc.property(caseArb, (c) => {
    const out = runLeafSnowflake(c.s);
    fc.pre(out.importMs <= LATEST);
    const layout = layoutOf(c, out.importMs);
    if (!layout) return;
    const hit = snowflakeCollisions(layout, out.importMs, out.issued);
    assert.deepEqual(
      hit.slice(0, 3).map((id) => `${id}`),
      [],
      `idmint's layout ${JSON.stringify(layout)} from ${new Date(out.importMs).toISOString()} gives IDs Leaf handed out (Leaf's largest ${out.issued.reduce((a, b) => (a > b ? a : b), 0n)})`,
    );
  });
}

describe('Leaf snowflake import against a model of Leaf', () => {
  it('no ID of the planned snowflake tag equals one Leaf handed out', {
    skip: planner === undefined ? 'src/core/import-plan-snowflake.ts not there yet' : false,
  }, (t) => {
    let refused = 0;
    fc.assert(
      check((c, importMs) => {
        try {
          const plan = planner!(
            {
              tag: 'leaf_snowflake',
              ...(c.giveTwepoch ? { twepochMs: c.s.twepoch } : {}),
              ...(c.giveLayout ? { layout: { timeBits: 41, workerBits: 10, seqBits: 12 } } : {}),
            },
            none,
            importMs,
          );
          assert.equal(plan.tags.length, 1);
          assert.equal(plan.tags[0].mode, 'snowflake');
          return specOfMode(plan.tags[0].spec, 'snowflake', 'the Leaf model').snowflake;
        } catch (e) {
          if (!(e instanceof SpecProblems)) throw e;
          refused++;
          return undefined;
        }
      }),
      params(),
    );
    t.diagnostic(`${refused} refused by the planner`);
  });

  it('what MIGRATING.md advised before: a snowflake tag of the default layout, or a later epoch', {
    skip: FOCUS !== 'old-advice' ? 'run with IMPORT_FUZZ_FOCUS=old-advice' : false,
  }, () => {
    fc.assert(
      check((c, importMs) => {
        // "a later epoch": later than Leaf's twepoch, at most idmint's default and the import.
        const later = Math.min(Math.max(c.s.twepoch + 1, DEFAULT_EPOCH_MS), importMs);
        return specOfMode(
          specFromCreate({ tag: 'leaf_snowflake', mode: 'snowflake', ...(c.giveLayout ? { epoch: later } : {}) }),
          'snowflake',
          'old advice',
        ).snowflake;
      }),
      params(),
    );
  });
});
