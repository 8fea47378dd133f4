// The chaos campaign's fault schedule (scripts/chaos/faults.ts planFaults): the same seed gives
// the same plan, the kinds stay balanced, only the Sentinel topology fails its default Redis
// over, and there every run with any fault at all has at least one failover, however short.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAULT_KINDS, planFaults, SENTINEL_FAULT_KINDS, type PlannedFault } from '../../scripts/chaos/faults.js';

const SEEDS = Array.from({ length: 300 }, (_, i) => i + 1);
const RUNS: { durationS: number; everyS?: number }[] = [
  { durationS: 20 },
  { durationS: 30 },
  { durationS: 60 },
  { durationS: 90, everyS: 3.5 },
  { durationS: 120 },
];

function counts(plan: readonly PlannedFault[]): Map<string, number> {
  const c = new Map<string, number>();
  for (const f of plan) c.set(f.kind, (c.get(f.kind) ?? 0) + 1);
  return c;
}

describe('chaos fault plan', () => {
  it('is the same for the same seed, and in time order within the run', () => {
    for (const { durationS, everyS } of RUNS) {
      const a = planFaults(7, durationS, 3, everyS, 'sentinel');
      assert.deepEqual(planFaults(7, durationS, 3, everyS, 'sentinel'), a);
      assert.ok(a.length > 0);
      for (let i = 1; i < a.length; i++)
        assert.ok(a[i].at > a[i - 1].at, `${durationS} s: fault ${i} after fault ${i - 1}`);
      assert.ok(a.every((f) => f.at > 0 && f.at < durationS));
    }
  });

  it('never fails the default Redis over in the single topology', () => {
    for (const seed of SEEDS)
      for (const { durationS, everyS } of RUNS) {
        const plan = planFaults(seed, durationS, 3, everyS, 'single');
        assert.ok(
          plan.every((f) => (FAULT_KINDS as readonly string[]).includes(f.kind)),
          `seed ${seed}, ${durationS} s`,
        );
      }
  });

  it('fails the default Redis over at least once in every Sentinel run, with the kinds balanced', () => {
    for (const seed of SEEDS)
      for (const { durationS, everyS } of RUNS) {
        const plan = planFaults(seed, durationS, 3, everyS, 'sentinel');
        const c = counts(plan);
        assert.ok(
          (c.get('redis-failover') ?? 0) >= 1,
          `seed ${seed}, ${durationS} s: no redis-failover in ${plan.map((f) => f.kind).join(', ')}`,
        );
        // Rounds of every kind once: no kind twice before every other kind once.
        const n = SENTINEL_FAULT_KINDS.map((k) => c.get(k) ?? 0);
        assert.ok(
          Math.max(...n) - Math.min(...n) <= 1,
          `seed ${seed}, ${durationS} s: unbalanced ${JSON.stringify(Object.fromEntries(c))}`,
        );
        for (const f of plan.filter((x) => x.kind === 'redis-failover'))
          assert.ok(f.slot === 0 || f.slot === 1, 'SENTINEL FAILOVER or a SIGKILLed master');
      }
  });
});
