// The no-duplicate promise, checked over what clients saw, in the three shapes the volumes call
// for: a map of IDs to who got them (tests, rule IDs of the chaos campaign), a sort of millions
// of IDs (benchmarks), and overlapping ranges (the chaos campaign's IDs, recorded as runs).

/** IDs seen so far, each with the first one to get it. */
export class SeenIds<K, T> {
  private readonly seen = new Map<K, T>();
  /** IDs added, repeats included. */
  total = 0;

  /** Records that `who` got `id`; returns who had got it before, if anyone. */
  add(id: K, who: T): T | undefined {
    this.total++;
    const prev = this.seen.get(id);
    if (prev === undefined) this.seen.set(id, who);
    return prev;
  }
}

export interface Repeat<K, T> {
  readonly id: K;
  readonly first: T;
  readonly again: T;
}

/** Every ID of every item, with each repeat and who got the ID first. */
export function findDuplicates<K, T>(items: readonly T[], ids: (t: T) => Iterable<K>): { total: number; repeats: Repeat<K, T>[] } {
  const seen = new SeenIds<K, T>();
  const repeats: Repeat<K, T>[] = [];
  for (const item of items) {
    for (const id of ids(item)) {
      const first = seen.add(id, item);
      if (first !== undefined) repeats.push({ id, first, again: item });
    }
  }
  return { total: seen.total, repeats };
}

/** Number of repeated values in xs (sorted in place): for millions of IDs. */
export function countRepeats(xs: BigInt64Array | string[]): number {
  xs.sort();
  let dup = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] === xs[i - 1]) dup++;
  return dup;
}

export interface IdRange<T> {
  readonly lo: bigint;
  readonly hi: bigint;
  readonly who: T;
}

/** Where ranges of IDs overlap (list sorted in place): the repeated span and who held it first. */
export function overlappingRanges<T>(list: IdRange<T>[]): { lo: bigint; hi: bigint; first: T; again: T }[] {
  list.sort((a, b) => (a.lo < b.lo ? -1 : a.lo > b.lo ? 1 : 0));
  const out: { lo: bigint; hi: bigint; first: T; again: T }[] = [];
  let top: { hi: bigint; who: T } | undefined;
  for (const x of list) {
    if (top && x.lo <= top.hi) out.push({ lo: x.lo, hi: x.hi < top.hi ? x.hi : top.hi, first: top.who, again: x.who });
    if (!top || x.hi > top.hi) top = { hi: x.hi, who: x.who };
  }
  return out;
}
