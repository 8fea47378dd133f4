// Client-side latency per kind of request, per sample window: each window's durations are kept
// until the sample reads their count and percentiles, then dropped.

export interface Window {
  /** Requests answered in the window. */
  readonly n: number;
  /** ms. */
  readonly p50: number;
  readonly p99: number;
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export class Latencies {
  private readonly windows = new Map<string, number[]>();

  /** A request of this kind took ms. */
  add(kind: string, ms: number): void {
    const w = this.windows.get(kind);
    if (w) w.push(ms);
    else this.windows.set(kind, [ms]);
  }

  /** Each kind's window since the last call (kinds without requests: n 0). */
  take(kinds: readonly string[]): Record<string, Window> {
    const out: Record<string, Window> = {};
    for (const kind of kinds) {
      const xs = Float64Array.from(this.windows.get(kind) ?? []).sort();
      out[kind] = { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99) };
    }
    this.windows.clear();
    return out;
  }
}
