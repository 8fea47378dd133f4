// The real-time order promise, checked over what clients saw: an answer to a request sent after
// another answer had arrived holds only larger IDs. One check for the tests, the fault tests
// and the chaos campaign; each says, through `view`, when a request was sent and answered and
// which of its IDs count as its lowest and highest. And the plain check of one sequence: each ID
// above the one before it (`increasing`, `assertIncreasing`).
import { AssertionError } from 'node:assert';

export interface Timed {
  /** When the request was sent and when its answer arrived, on one clock. */
  readonly sent: number;
  readonly answered: number;
  /** The answer's lowest and highest ID. */
  readonly min: bigint;
  readonly max: bigint;
}

export interface OrderViolation<T> {
  /** The answer holding an ID not above `earlierMax`. */
  readonly item: T;
  readonly itemMin: bigint;
  /** The answer with the highest ID among those that had arrived before `item` was sent. */
  readonly earlier: T;
  readonly earlierMax: bigint;
}

export interface OrderResult<T> {
  /** Answers that had an earlier answer to compare with (so a caller can see the check had teeth). */
  readonly checked: number;
  /** In the order of `items`. */
  readonly violations: OrderViolation<T>[];
}

/**
 * For every answer B: every answer A that arrived strictly before B's request was sent holds
 * only IDs below B's. Answers sorted by arrival with a running maximum; a binary search finds
 * the last arrival before B was sent.
 */
export function realTimeOrder<T>(items: readonly T[], view: (t: T) => Timed): OrderResult<T> {
  const all = items.map((item) => ({ item, t: view(item) }));
  const byAnswer = [...all].sort((a, b) => a.t.answered - b.t.answered);
  const prefMax: bigint[] = new Array(byAnswer.length);
  const prefWho: T[] = new Array(byAnswer.length);
  for (let i = 0; i < byAnswer.length; i++) {
    if (i === 0 || byAnswer[i].t.max > prefMax[i - 1]) {
      prefMax[i] = byAnswer[i].t.max;
      prefWho[i] = byAnswer[i].item;
    } else {
      prefMax[i] = prefMax[i - 1];
      prefWho[i] = prefWho[i - 1];
    }
  }
  let checked = 0;
  const violations: OrderViolation<T>[] = [];
  for (const { item, t } of all) {
    let lo = 0;
    let hi = byAnswer.length - 1;
    let j = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (byAnswer[mid].t.answered < t.sent) {
        j = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (j < 0) continue;
    checked++;
    if (t.min <= prefMax[j]) violations.push({ item, itemMin: t.min, earlier: prefWho[j], earlierMax: prefMax[j] });
  }
  return { checked, violations };
}

/**
 * What can be an ID in the increasing check: a number or bigint by value; a string (a rule's
 * ID) by length first, then character by character, so that digits of any length count by
 * their value and IDs of one template (one length) count by their text.
 */
export type OrderedId = bigint | number | string;

/** b comes after a in the order of OrderedId. */
export function idAbove<T extends OrderedId>(b: T, a: T): boolean {
  if (typeof a === 'string' && typeof b === 'string') return b.length > a.length || (b.length === a.length && b > a);
  return b > a;
}

export interface IncreaseViolation<T> {
  /** Position in the sequence of the ID that is not above the one before it. */
  readonly index: number;
  readonly id: T;
  readonly previous: T;
}

/** Every place where a sequence does not strictly increase; checked: the pairs compared. */
export function increasing<T extends OrderedId>(
  ids: readonly T[],
): { checked: number; violations: IncreaseViolation<T>[] } {
  const violations: IncreaseViolation<T>[] = [];
  for (let i = 1; i < ids.length; i++)
    if (!idAbove(ids[i], ids[i - 1])) violations.push({ index: i, id: ids[i], previous: ids[i - 1] });
  return { checked: Math.max(0, ids.length - 1), violations };
}

const shown = (id: OrderedId) => (typeof id === 'string' ? JSON.stringify(id) : String(id));

/** Fails at the first ID that is not above the one before it, naming its position and both IDs. */
export function assertIncreasing<T extends OrderedId>(ids: readonly T[], what = 'IDs'): void {
  for (let i = 1; i < ids.length; i++)
    if (!idAbove(ids[i], ids[i - 1]))
      throw new AssertionError({
        message: `${what}: ID #${i} ${shown(ids[i])} is not above ID #${i - 1} ${shown(ids[i - 1])}`,
      });
}
