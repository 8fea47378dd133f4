// The soak's verdict over its samples (no I/O). Memory is judged on two series: RSS with V8's
// heap pages counted whole (smaps.ts; what the process holds, where RSS alone also climbs as
// pages V8 already holds are touched again) and the heap left after full collections (objects
// kept). RSS itself is summed up the same way and shown, not judged. For each judged series:
// - warm-up: the first minute (the first third of a run shorter than three minutes), and then
//   up to the second sample whose window saw a full (major) collection: until one has run under
//   the load, the heap and RSS hold everything since the start, and V8 gives the pages it freed
//   back to the system only a few seconds after the collection;
// - plateau: the median of the last third of the samples;
// - band: every sample after the warm-up within `band` (10%) of the plateau;
// - trend: the slope of a least-squares line through the samples after the warm-up, in MB per
//   minute, at most `maxSlope` (growth; a falling line passes).
// Then: no duplicate, no order violation, no failed request, and IDs from every tag.
// A run that leaves fewer than two samples after its warm-up cannot judge the memory: it is
// "too short to judge" (its own exit code, SOAK_TOO_SHORT), unless a check already failed it.

export interface Point {
  /** Seconds since the load started. */
  readonly t: number;
  readonly v: number;
}

export interface SeriesVerdict {
  readonly plateau: number;
  /** The largest distance of a sample after the warm-up from the plateau, as a fraction of it. */
  readonly worst: number;
  /** MB per minute after the warm-up. */
  readonly slope: number;
  /** Samples after the warm-up. */
  readonly samples: number;
  readonly ok: boolean;
}

/** The shortest warm-up. */
export function warmupSeconds(runSeconds: number): number {
  return Math.min(60, runSeconds / 3);
}

/**
 * When the warm-up ends: at the second sample after the shortest warm-up whose window saw a
 * major collection (the shortest warm-up when there are not two).
 */
export function warmupEnd(
  samples: readonly { readonly t: number; readonly majorGcs: number }[],
  runSeconds: number,
): number {
  const min = warmupSeconds(runSeconds);
  return samples.filter((s) => s.t >= min && s.majorGcs > 0)[1]?.t ?? min;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Slope of the least-squares line through (x, y). */
export function slope(points: readonly { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

export function judgeSeries(points: readonly Point[], warmupS: number, band: number, maxSlope: number): SeriesVerdict {
  // A heap series has no value before the first major collection.
  const known = points.filter((p) => Number.isFinite(p.v));
  const plateau = median(known.slice(known.length - Math.max(1, Math.floor(known.length / 3))).map((p) => p.v));
  const after = known.filter((p) => p.t >= warmupS);
  const worst = after.reduce((w, p) => Math.max(w, Math.abs(p.v - plateau) / plateau), 0);
  const s = slope(after.map((p) => ({ x: p.t / 60, y: p.v })));
  return { plateau, worst, slope: s, samples: after.length, ok: after.length >= 2 && worst <= band && s <= maxSlope };
}

export interface Checks {
  readonly ids: bigint;
  readonly duplicates: bigint;
  readonly orderChecked: number;
  readonly orderViolations: number;
  readonly failed: number;
  /** Tags no client got an ID of. */
  readonly silentTags: readonly string[];
}

/** Exit codes of the soak: PASS 0, FAIL 1, too short to judge 3. */
export const SOAK_EXIT = { pass: 0, fail: 1, tooShort: 3 } as const;

export type Outcome = keyof typeof SOAK_EXIT;

export interface Verdict {
  readonly ok: boolean;
  /** pass, fail, or tooShort: nothing failed but the memory could not be judged. */
  readonly outcome: Outcome;
  /** RSS with V8's heap pages counted whole: judged. */
  readonly whole: SeriesVerdict;
  /** The heap after full collections: judged. */
  readonly heap: SeriesVerdict;
  /** RSS: shown, not judged (its `ok` says how it would have fared). */
  readonly rss: SeriesVerdict;
  readonly checks: Checks;
  /** What failed, in words; empty when ok. */
  readonly reasons: string[];
}

export function verdict(
  memory: { readonly whole: SeriesVerdict; readonly heap: SeriesVerdict; readonly rss: SeriesVerdict },
  checks: Checks,
  band: number,
  maxSlope: number,
): Verdict {
  const { whole, heap, rss } = memory;
  const reasons: string[] = [];
  const short: string[] = [];
  for (const [name, s] of [
    ["RSS with V8's pages whole", whole],
    ['heap', heap],
  ] as const) {
    if (s.samples < 2) short.push(`${name}: fewer than 2 samples after the warm-up`);
    else if (s.worst > band)
      reasons.push(`${name}: a sample ${(s.worst * 100).toFixed(1)}% from the plateau (bound ${band * 100}%)`);
    if (s.samples >= 2 && s.slope > maxSlope)
      reasons.push(`${name}: growing ${s.slope.toFixed(2)} MB/min (bound ${maxSlope})`);
  }
  if (checks.duplicates > 0n) reasons.push(`${checks.duplicates} duplicate IDs`);
  if (checks.orderViolations > 0) reasons.push(`${checks.orderViolations} order violations`);
  if (checks.orderChecked === 0) reasons.push('no answer was checked for order');
  if (checks.failed > 0) reasons.push(`${checks.failed} failed requests`);
  if (checks.silentTags.length > 0) reasons.push(`no ID of ${checks.silentTags.join(', ')}`);
  const outcome: Outcome = reasons.length > 0 ? 'fail' : short.length > 0 ? 'tooShort' : 'pass';
  return { ok: outcome === 'pass', outcome, whole, heap, rss, checks, reasons: [...reasons, ...short] };
}
