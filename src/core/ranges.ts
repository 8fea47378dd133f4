// Inclusive runs of consecutive counter values, and a FIFO of them that hands out the
// lowest values first. Counters stay below 2^53, so plain numbers are exact.

export type Range = readonly [first: number, last: number];

export function rangeSize(range: Range): number {
  return range[1] - range[0] + 1;
}

export function totalSize(rs: readonly Range[]): number {
  let total = 0;
  for (const range of rs) total += rangeSize(range);
  return total;
}

/** Expands runs into single values (for batches; callers bound the count). */
export function expand(rs: readonly Range[]): number[] {
  const out: number[] = [];
  for (const [first, last] of rs) for (let v = first; v <= last; v++) out.push(v);
  return out;
}

export class RangeQueue {
  private readonly runs: [number, number][] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(range: Range): void {
    if (range[1] < range[0]) return;
    const tail = this.runs[this.runs.length - 1];
    if (tail !== undefined && range[0] <= tail[1])
      throw new RangeError(`run ${range[0]}..${range[1]} does not follow ${tail[1]}`);
    if (tail !== undefined && tail[1] + 1 === range[0]) tail[1] = range[1];
    else this.runs.push([range[0], range[1]]);
    this.count += rangeSize(range);
  }

  /** Removes up to `wanted` values from the front, as runs. */
  take(wanted: number): Range[] {
    const out: Range[] = [];
    while (wanted > 0 && this.runs.length > 0) {
      const head = this.runs[0];
      const avail = head[1] - head[0] + 1;
      if (avail <= wanted) {
        out.push([head[0], head[1]]);
        this.runs.shift();
        wanted -= avail;
        this.count -= avail;
      } else {
        out.push([head[0], head[0] + wanted - 1]);
        head[0] += wanted;
        this.count -= wanted;
        wanted = 0;
      }
    }
    return out;
  }

  /** The next single value, or undefined when empty (take(1) without allocating). */
  takeOne(): number | undefined {
    const head = this.runs[0];
    if (head === undefined) return undefined;
    const value = head[0];
    if (value === head[1]) this.runs.shift();
    else head[0] = value + 1;
    this.count--;
    return value;
  }

  /** Drops everything (the values are spent: gaps are allowed, reissue never). */
  clear(): void {
    this.runs.length = 0;
    this.count = 0;
  }
}
