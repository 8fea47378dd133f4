// The no-duplicate promise, checked over what clients saw, in the three shapes the volumes call
// for: a map of IDs to who got them (tests, rule IDs of the chaos campaign), a sort of millions
// of IDs (benchmarks), and overlapping ranges (the chaos campaign's IDs, recorded as runs, and
// a soak run's, millions of runs in typed arrays).

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
export function findDuplicates<K, T>(
  items: readonly T[],
  ids: (t: T) => Iterable<K>,
): { total: number; repeats: Repeat<K, T>[] } {
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

/** Numeric IDs in the order they came, in a typed array that doubles when full: millions of them. */
export class IdList {
  private ids: BigInt64Array;
  private n = 0;

  constructor(initial = 1 << 16) {
    this.ids = new BigInt64Array(initial);
  }

  push(id: bigint): void {
    if (this.n === this.ids.length) {
      const bigger = new BigInt64Array(this.ids.length * 2);
      bigger.set(this.ids);
      this.ids = bigger;
    }
    this.ids[this.n++] = id;
  }

  /** The IDs so far (a view: countRepeats sorts it in place). */
  get values(): BigInt64Array {
    return this.ids.subarray(0, this.n);
  }
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

/**
 * IDs covered by more than one of the runs lo[i]..hi[i] (inclusive), and the IDs of all runs:
 * for runs by the million (a long run's IDs, mostly consecutive). Both arrays are sorted in
 * place, each on its own: the runs overlap nowhere exactly when, with both sorted, each run's
 * end lies below the next start. A sweep over the starts and the ends (hi + 1) counts how many
 * runs cover each stretch; every ID covered c times is c - 1 repeats.
 */
export function repeatsInRuns(lo: BigInt64Array, hi: BigInt64Array): { ids: bigint; repeats: bigint } {
  if (lo.length !== hi.length) throw new Error(`runs: ${lo.length} starts but ${hi.length} ends`);
  let ids = 0n;
  for (let i = 0; i < lo.length; i++) {
    if (hi[i] < lo[i]) throw new Error(`run ${i} ends (${hi[i]}) below its start (${lo[i]})`);
    ids += hi[i] - lo[i] + 1n;
  }
  lo.sort();
  hi.sort();
  const n = lo.length;
  let i = 0;
  let j = 0;
  let cover = 0;
  let at = 0n;
  let repeats = 0n;
  while (j < n) {
    // The next start or end (hi + 1); at an equal point either goes first: nothing lies between.
    const start = i < n && lo[i] < hi[j] + 1n;
    const x = start ? lo[i] : hi[j] + 1n;
    if (cover > 1) repeats += (x - at) * BigInt(cover - 1);
    at = x;
    if (start) {
      cover++;
      i++;
    } else {
      cover--;
      j++;
    }
  }
  return { ids, repeats };
}
