// Inclusive runs of consecutive counter values, and a FIFO of them that hands out the
// lowest values first. Counters stay below 2^53, so plain numbers are exact.

export type Range = readonly [first: number, last: number];

export function rangeSize(r: Range): number {
  return r[1] - r[0] + 1;
}

export function totalSize(rs: readonly Range[]): number {
  let n = 0;
  for (const r of rs) n += rangeSize(r);
  return n;
}

/** Expands runs into single values (for batches; callers bound the count). */
export function expand(rs: readonly Range[]): number[] {
  const out: number[] = [];
  for (const [a, b] of rs) for (let v = a; v <= b; v++) out.push(v);
  return out;
}

export class RangeQueue {
  private readonly runs: [number, number][] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(r: Range): void {
    if (r[1] < r[0]) return;
    const tail = this.runs[this.runs.length - 1];
    if (tail !== undefined && r[0] <= tail[1]) throw new RangeError(`run ${r[0]}..${r[1]} does not follow ${tail[1]}`);
    if (tail !== undefined && tail[1] + 1 === r[0]) tail[1] = r[1];
    else this.runs.push([r[0], r[1]]);
    this.count += rangeSize(r);
  }

  /** Removes up to n values from the front, as runs. */
  take(n: number): Range[] {
    const out: Range[] = [];
    while (n > 0 && this.runs.length > 0) {
      const head = this.runs[0];
      const avail = head[1] - head[0] + 1;
      if (avail <= n) {
        out.push([head[0], head[1]]);
        this.runs.shift();
        n -= avail;
        this.count -= avail;
      } else {
        out.push([head[0], head[0] + n - 1]);
        head[0] += n;
        this.count -= n;
        n = 0;
      }
    }
    return out;
  }

  /** The next single value, or undefined when empty (take(1) without allocating). */
  takeOne(): number | undefined {
    const head = this.runs[0];
    if (head === undefined) return undefined;
    const v = head[0];
    if (v === head[1]) this.runs.shift();
    else head[0] = v + 1;
    this.count--;
    return v;
  }

  /** Drops everything (the values are spent: gaps are allowed, reissue never). */
  clear(): void {
    this.runs.length = 0;
    this.count = 0;
  }
}
