// The goals of order global in `npm run bench:idempotency` (docs/GUARANTEES.md#idempotency-keys:
// a new key at 0.8x or more of the unkeyed throughput, a replay at 0.9x or more) judged against
// the floor measured in the same run (floor-server.ts): each goal PASS, or MISS with what bounds
// it. The floor does only the Redis calls idmint makes, so where the floor's own ratio is below
// the goal no implementation around the same calls reaches it on this machine; where the floor's
// ratio reaches the goal and idmint's does not, the rest is idmint's own work around the calls.
import { fmt } from '../../tools/table.js';
import { medianOrNaN } from '../stats.js';

/** One goal of order global at the throughput client count, with the run's median ratios. */
export interface GoalMeasure {
  /** The case's label, e.g. "keyed, new key". */
  readonly label: string;
  /** What the floor's case is, in words, e.g. "a new key". */
  readonly what: string;
  readonly goal: number;
  readonly clients: number;
  /** idmint's case over idmint's unkeyed request (throughput). */
  readonly idmint: number;
  /** The floor's case over the floor's unkeyed request (throughput). */
  readonly floor: number;
  /** The floor's case over idmint's unkeyed request: the most idmint's case could reach over its own unkeyed one. */
  readonly floorOverIdmint: number;
}

/** The median over rounds of a case's throughput over another's in the same round. */
export function medianRatio(cases: readonly { rps: number }[], refs: readonly { rps: number }[]): number {
  return medianOrNaN(cases.map((m, round) => m.rps / refs[round].rps));
}

/** PASS, or MISS bounded by the floor, or MISS with the floor above the goal. */
export type Verdict = 'PASS' | 'MISS (the floor is below the goal)' | 'MISS (the floor reaches the goal)';

export function verdictOf(m: Pick<GoalMeasure, 'goal' | 'idmint' | 'floor'>): Verdict {
  if (m.idmint >= m.goal) return 'PASS';
  return m.floor < m.goal ? 'MISS (the floor is below the goal)' : 'MISS (the floor reaches the goal)';
}

const IDMINT_OWN = "what is missing is idmint's own work around the calls";

/** The run's note for one goal. */
export function goalNote(m: GoalMeasure): string {
  const verdict = verdictOf(m);
  const ratio = `${fmt(m.idmint, 2)}x the unkeyed throughput at ${m.clients} clients (goal ${m.goal}x)`;
  const head = `order global, ${m.label}: ${verdict.slice(0, 4)}, ${ratio}`;
  const floor = `the floor itself runs ${m.what} at ${fmt(m.floor, 2)}x of its unkeyed take`;
  const beside = `${fmt(m.floorOverIdmint, 2)}x idmint's unkeyed throughput`;
  switch (verdict) {
    case 'PASS':
      return `${head}; ${floor} (${beside})`;
    case 'MISS (the floor is below the goal)':
      return `${head}; ${floor} (${beside}): no implementation around the same Redis calls reaches ${m.goal}x here`;
    default:
      return `${head}; ${floor} (${beside}), at or above the goal: ${IDMINT_OWN}`;
  }
}
