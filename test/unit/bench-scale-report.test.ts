// bench:scale's ratios (bench/scale/report.ts): taken within a round, then the median over rounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { roundRatio } from '../../bench/scale/report.js';
import type { CaseResult } from '../../bench/scale/runner.js';
import type { CaseName } from '../../bench/scale/cases.js';

const run = (name: CaseName, processes: number, round: number, rps: number) =>
  ({ name, processes, round, rps }) as CaseResult;

describe('bench:scale roundRatio', () => {
  // The machine was twice as fast in round 2 and a third as fast in round 3: the medians of
  // req/s (x1 300, x4 300) would say 1.00, yet x4 was 0.8 of x1 in every round.
  const rounds = [
    run('global', 1, 1, 100),
    run('global', 4, 1, 80),
    run('global', 1, 2, 500),
    run('global', 4, 2, 400),
    run('global', 1, 3, 300 / 0.8),
    run('global', 4, 3, 300),
    run('shared', 4, 1, 100),
    run('shared', 4, 3, 250),
  ];

  it('divides within each round and takes the median', () => {
    assert.equal(roundRatio(rounds, rounds[1], 'global', 1), 0.8);
    assert.equal(roundRatio(rounds, rounds[0], 'global', 1), 1);
  });

  it('skips rounds where the other case was not measured', () => {
    // rounds 1 and 3 only: 80/100 and 300/250
    assert.equal(roundRatio(rounds, rounds[1], 'shared', 4), (0.8 + 1.2) / 2);
  });

  it('is NaN when no round has both', () => {
    assert.ok(Number.isNaN(roundRatio(rounds, rounds[1], 'incr', 4)));
  });
});
