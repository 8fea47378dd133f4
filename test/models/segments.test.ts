// The Leaf (segment mode) and Tinyid imports against models of Leaf and Tinyid (leaf-model.ts,
// tinyid-model.ts): random tags, servers and clients, steps, delta/remainder, crashes, a
// database away and steps changed by the operator; the rows the model leaves go through the
// real planSegments, and no counter above the plan's floor may give an ID the old system
// handed out. A refusal (SpecProblems) is a safe outcome and is counted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Current, OldSegmentTag } from '../../src/core/import-plan.js';
import { planSegments } from '../../src/core/import-plan-segments.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { params } from './fuzz-params.js';
import { segmentCollisions } from './idmint-reach.js';
import { runLeafSegment, type LeafSegmentEvent, type LeafSegmentScenario } from './leaf-model.js';
import { runTinyid, type TinyidEvent, type TinyidScenario } from './tinyid-model.js';

const none: Current = { live: new Map(), deleted: new Set() };
const hash = (t: string) => `sha256(${t})`;

const TAGS = ['order', 'user', 'pay.v2', 'leaf-segment-test'];

export const leafArb: fc.Arbitrary<LeafSegmentScenario> = fc.record({
  tags: fc.uniqueArray(
    fc.record({
      tag: fc.constantFrom(...TAGS),
      maxId: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 10 ** 12 })),
      step: fc.constantFrom(1, 2, 10, 100, 1000),
    }),
    { minLength: 1, maxLength: 3, selector: (t) => t.tag },
  ),
  servers: fc.integer({ min: 1, max: 3 }),
  startMs: fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2026, 0, 1) }),
  events: fc.array<LeafSegmentEvent>(
    fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({
          dt: fc.integer({ min: 0, max: 3_600_000 }),
          kind: fc.constant('get' as const),
          server: fc.nat(2),
          tag: fc.nat(2),
          n: fc.integer({ min: 1, max: 40 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          dt: fc.integer({ min: 0, max: 60_000 }),
          kind: fc.constantFrom('crash' as const, 'dbDown' as const, 'dbUp' as const, 'load' as const),
          server: fc.nat(2),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          dt: fc.nat(60_000),
          kind: fc.constant('setStep' as const),
          tag: fc.nat(2),
          step: fc.constantFrom(1, 3, 10, 500),
        }),
      },
    ),
    { minLength: 1, maxLength: 30 },
  ),
});

export const tinyidArb: fc.Arbitrary<TinyidScenario> = fc.record({
  types: fc.uniqueArray(
    fc
      .record({
        bizType: fc.constantFrom(...TAGS),
        maxId: fc.integer({ min: 0, max: 10 ** 12 }),
        step: fc.constantFrom(1, 2, 10, 100, 1000),
        delta: fc.integer({ min: 1, max: 4 }),
        r: fc.nat(3),
        token: fc.boolean(),
      })
      .map(({ r, ...t }) => ({ ...t, remainder: r % t.delta })),
    { minLength: 1, maxLength: 3, selector: (t) => t.bizType },
  ),
  generators: fc.integer({ min: 1, max: 4 }),
  events: fc.array<TinyidEvent>(
    fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({
          kind: fc.constant('next' as const),
          gen: fc.nat(3),
          type: fc.nat(2),
          n: fc.integer({ min: 1, max: 40 }),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ kind: fc.constantFrom('crash' as const, 'loadNext' as const), gen: fc.nat(3) }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('setStep' as const),
          type: fc.nat(2),
          step: fc.constantFrom(1, 3, 10, 500),
        }),
      },
    ),
    { minLength: 1, maxLength: 30 },
  ),
});

/** The old IDs a planned segment import could hand out again, by tag; undefined when refused. */
function collisions(
  system: 'leaf' | 'tinyid',
  old: OldSegmentTag[],
  issued: ReadonlyMap<string, readonly number[]>,
): string[] | undefined {
  let plan: ReturnType<typeof planSegments>;
  try {
    plan = planSegments(system, old, none, hash);
  } catch (e) {
    if (e instanceof SpecProblems) return undefined;
    throw e;
  }
  const out: string[] = [];
  for (const t of plan.tags) {
    const ids = (issued.get(t.tag) ?? []).map(BigInt);
    for (const id of segmentCollisions(t, ids))
      out.push(`${t.tag}: ${id} (counter floor ${t.counterFloor}, stride ${t.spec.stride}, offset ${t.spec.offset})`);
  }
  return out;
}

describe('Leaf (segment mode) import against a model of Leaf', () => {
  it('no ID idmint hands out after the import equals one Leaf handed out', (t) => {
    let refused = 0;
    fc.assert(
      fc.property(leafArb, (s) => {
        const out = runLeafSegment(s);
        const old: OldSegmentTag[] = out.rows.map((r) => ({
          tag: r.tag,
          maxId: String(r.maxId),
          step: r.step,
          description: '',
          stride: 1,
          offset: 0,
          tokens: [],
        }));
        const c = collisions('leaf', old, out.issued);
        if (c === undefined) refused++;
        assert.deepEqual(c?.slice(0, 5) ?? [], []);
      }),
      params(),
    );
    t.diagnostic(`${refused} refused by the planner`);
  });
});

describe('Tinyid import against a model of Tinyid', () => {
  it('no ID idmint hands out after the import equals one Tinyid handed out, delta and remainder kept', (t) => {
    let refused = 0;
    fc.assert(
      fc.property(tinyidArb, (s) => {
        const out = runTinyid(s);
        // As the importer's old-stores.ts reads tiny_id_info and tiny_id_token.
        const old: OldSegmentTag[] = out.info.map((r) => ({
          tag: r.bizType,
          maxId: String(r.maxId),
          step: r.step,
          description: 'imported from Tinyid',
          stride: r.delta || 1,
          offset: r.remainder,
          tokens: out.tokens
            .filter((k) => k.bizType === r.bizType)
            .map((k) => ({ name: `tinyid-${k.id}`, token: k.token, bizType: k.bizType })),
        }));
        const c = collisions('tinyid', old, out.issued);
        if (c === undefined) refused++;
        assert.deepEqual(c?.slice(0, 5) ?? [], []);
      }),
      params(),
    );
    t.diagnostic(`${refused} refused by the planner`);
  });
});
