// Adaptive segment sizing: step = clamp(rate × target_seconds, min_step, max_step), and the
// current step (clamped) when there is no usable rate history.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clamp, consumptionRate, nextStep, type StepInput } from '../../src/core/step.js';
import { rng, SEED } from '../../tools/prng.js';

const base: StepInput = {
  takenSince: 0,
  elapsedMs: 0,
  currentStep: 1000,
  minStep: 100,
  maxStep: 100_000,
  targetSeconds: 60,
};

describe('clamp', () => {
  it('keeps values inside the bounds and moves the others to the nearer bound', () => {
    assert.equal(clamp(5, 1, 10), 5);
    assert.equal(clamp(1, 1, 10), 1);
    assert.equal(clamp(10, 1, 10), 10);
    assert.equal(clamp(0, 1, 10), 1);
    assert.equal(clamp(-1e9, 1, 10), 1);
    assert.equal(clamp(11, 1, 10), 10);
    assert.equal(clamp(Infinity, 1, 10), 10);
    assert.equal(clamp(3, 3, 3), 3);
  });
});

describe('consumptionRate', () => {
  it('is IDs per second over the window', () => {
    assert.equal(consumptionRate(1000, 1000), 1000);
    assert.equal(consumptionRate(1000, 500), 2000);
    assert.equal(consumptionRate(30, 60_000), 0.5);
    assert.equal(consumptionRate(0, 1234), 0);
  });

  it('has no answer without a usable window', () => {
    assert.equal(consumptionRate(100, 0), undefined);
    assert.equal(consumptionRate(100, -5), undefined);
    assert.equal(consumptionRate(100, NaN), undefined);
    assert.equal(consumptionRate(-1, 1000), undefined);
    assert.equal(consumptionRate(NaN, 1000), undefined);
  });
});

describe('nextStep', () => {
  it('sizes a segment to last target_seconds at the observed rate', () => {
    // 5000 IDs in 2 s = 2500/s; 60 s of that is 150000, above max_step.
    assert.equal(nextStep({ ...base, takenSince: 5000, elapsedMs: 2000 }), 100_000);
    // 100 IDs in 10 s = 10/s; 60 s = 600.
    assert.equal(nextStep({ ...base, takenSince: 100, elapsedMs: 10_000 }), 600);
    // 1 ID in 3 s with a 10 s target: 3.33.. rounds up to 4, then clamped to min_step 1.
    assert.equal(nextStep({ ...base, minStep: 1, targetSeconds: 10, takenSince: 1, elapsedMs: 3000 }), 4);
  });

  it('rounds a fractional wish up, never below what the rate needs', () => {
    // 7 IDs in 2 s = 3.5/s; 3 s of that is 10.5, so 11.
    assert.equal(nextStep({ ...base, minStep: 1, targetSeconds: 3, takenSince: 7, elapsedMs: 2000 }), 11);
  });

  it('keeps the current step when there is no history, clamped to the bounds', () => {
    assert.equal(nextStep({ ...base, takenSince: 999_999, elapsedMs: 0 }), 1000);
    assert.equal(nextStep({ ...base, currentStep: 5, elapsedMs: 0 }), 100);
    assert.equal(nextStep({ ...base, currentStep: 5_000_000, elapsedMs: -1 }), 100_000);
    assert.equal(nextStep({ ...base, currentStep: 250.7, elapsedMs: 0 }), 250);
  });

  it('falls to min_step when nothing was consumed', () => {
    assert.equal(nextStep({ ...base, takenSince: 0, elapsedMs: 30_000 }), 100);
  });

  it('stays within [min_step, max_step], is a whole number and grows with the rate', () => {
    const r = rng(SEED);
    let checked = 0;
    let inside = 0;
    for (let i = 0; i < 5000; i++) {
      const minStep = r.int(1, 10_000);
      const maxStep = r.int(minStep, 1_000_000);
      const input: StepInput = {
        // Spread over orders of magnitude so every branch (below, inside, above) is common.
        takenSince: Math.floor(10 ** (r.next() * 7)) - 1,
        elapsedMs: r.pick([0, -1, Math.ceil(10 ** (r.next() * 5))]),
        currentStep: r.int(1, 2_000_000),
        minStep,
        maxStep,
        targetSeconds: r.int(1, 600),
      };
      const s = nextStep(input);
      const why = `seed ${SEED} case ${i}: ${JSON.stringify(input)} -> ${s}`;
      assert.ok(Number.isInteger(s), why);
      assert.ok(s >= minStep && s <= maxStep, why);
      const rate = consumptionRate(input.takenSince, input.elapsedMs);
      if (rate !== undefined) {
        const wanted = rate * input.targetSeconds;
        // Inside the bounds the step covers the wish, by less than one ID more.
        if (wanted > minStep && wanted < maxStep) {
          assert.ok(s >= wanted && s < wanted + 1, why);
          inside++;
        }
        const more = nextStep({ ...input, takenSince: input.takenSince * 2 + 1 });
        assert.ok(more >= s, `${why}; twice the rate gave ${more}`);
        checked++;
      }
    }
    assert.ok(checked > 1000, `only ${checked} cases had a rate`);
    assert.ok(inside > 100, `only ${inside} cases wanted a step inside the bounds`);
  });
});
