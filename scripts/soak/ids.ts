// Every ID the soak's clients got, per tag, kept as runs of consecutive IDs in typed arrays
// (16 bytes a run, however long): millions of IDs in bounded memory. Each client keeps its own
// runs, so its consecutive answers join into one; the check at the end puts a tag's runs
// together and counts the IDs covered twice (tools/duplicates.ts repeatsInRuns).
import { repeatsInRuns } from '../../tools/duplicates.js';

/** One client's runs of one tag. */
export class RunLog {
  private lo = new BigInt64Array(1024);
  private hi = new BigInt64Array(1024);
  private n = 0;

  get runs(): number {
    return this.n;
  }

  /** IDs first..last (inclusive), joined to the last run when they follow it. */
  add(first: bigint, last = first): void {
    if (this.n > 0 && first === this.hi[this.n - 1] + 1n) {
      this.hi[this.n - 1] = last;
      return;
    }
    if (this.n === this.lo.length) {
      const lo = new BigInt64Array(this.n * 2);
      const hi = new BigInt64Array(this.n * 2);
      lo.set(this.lo);
      hi.set(this.hi);
      this.lo = lo;
      this.hi = hi;
    }
    this.lo[this.n] = first;
    this.hi[this.n] = last;
    this.n++;
  }

  /** Decimal IDs, each added. */
  addAll(ids: readonly string[]): void {
    for (const id of ids) this.add(BigInt(id));
  }

  /** Copies the runs into lo and hi from position at. */
  copyInto(lo: BigInt64Array, hi: BigInt64Array, at: number): void {
    lo.set(this.lo.subarray(0, this.n), at);
    hi.set(this.hi.subarray(0, this.n), at);
  }
}

export interface TagCheck {
  readonly tag: string;
  readonly ids: bigint;
  readonly runs: number;
  readonly duplicates: bigint;
}

/** The runs of every client, per tag. */
export class IdBook {
  private readonly logs = new Map<string, RunLog[]>();

  /** A new log of one client for a tag. */
  log(tag: string): RunLog {
    const log = new RunLog();
    const list = this.logs.get(tag) ?? [];
    list.push(log);
    this.logs.set(tag, list);
    return log;
  }

  runs(): number {
    let n = 0;
    for (const list of this.logs.values()) for (const log of list) n += log.runs;
    return n;
  }

  /** The no-duplicate check of each tag over every client's IDs. */
  check(): TagCheck[] {
    const out: TagCheck[] = [];
    for (const [tag, list] of this.logs) {
      const n = list.reduce((s, log) => s + log.runs, 0);
      const lo = new BigInt64Array(n);
      const hi = new BigInt64Array(n);
      let at = 0;
      for (const log of list) {
        log.copyInto(lo, hi, at);
        at += log.runs;
      }
      const { ids, repeats } = repeatsInRuns(lo, hi);
      out.push({ tag, ids, runs: n, duplicates: repeats });
    }
    return out;
  }
}
