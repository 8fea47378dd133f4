// What the soak prints: a progress line per sample, a Markdown summary (figures of the run,
// ready to paste) and the verdict line.
import { fmt, markdownTable } from '../../tools/table.js';
import type { TagCheck } from './ids.js';
import { KINDS, type Sample } from './sampler.js';
import { median, slope, type Verdict } from './verdict.js';

const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, '0')}`;

export function progressLine(s: Sample): string {
  const rps = KINDS.reduce((n, k) => n + s.latency[k].n, 0) / s.windowS;
  const lat = KINDS.map((k) => `${k} ${fmt(s.latency[k].p99, 1)}`).join(', ');
  return (
    `soak ${clock(s.t)}  RSS ${fmt(s.rssMb, 1)} MB (${fmt(s.wholeMb, 1)} with V8's pages whole)  heap ${fmt(s.heapMb, 1)} MB after GC (used ${fmt(s.heapFloorMb, 1)}..${fmt(s.heapPeakMb, 1)}, ${s.majorGcs} major; ${fmt(s.heapCommittedMb, 1)} committed)  loop p99 ${fmt(s.loopP99Ms, 1)} ms  ` +
    `handles ${s.handles}  cpu ${fmt(s.cpu)}%  answers/s ${fmt(rps)}  failed ${s.failed}  p99 ms: ${lat}`
  );
}

interface Row {
  readonly name: string;
  readonly d: number;
  readonly value: (s: Sample) => number;
}

const ROWS: readonly Row[] = [
  { name: 'RSS (MB)', d: 1, value: (s) => s.rssMb },
  { name: "RSS with V8's heap pages counted whole (MB)", d: 1, value: (s) => s.wholeMb },
  { name: "V8's heap pages, resident (MB)", d: 1, value: (s) => s.v8ResidentMb },
  { name: "V8's heap pages, mapped (MB)", d: 1, value: (s) => s.v8MappedMb },
  { name: 'heap committed by V8, all spaces (MB)', d: 1, value: (s) => s.heapCommittedMb },
  { name: 'external memory, Buffers and ArrayBuffers (MB)', d: 1, value: (s) => s.externalMb },
  { name: 'heap after a full collection, old generation (MB)', d: 1, value: (s) => s.heapMb },
  { name: 'heap used, floor (MB)', d: 1, value: (s) => s.heapFloorMb },
  { name: 'heap used, peak (MB)', d: 1, value: (s) => s.heapPeakMb },
  { name: 'event-loop delay p99, worst second (ms)', d: 1, value: (s) => s.loopP99Ms },
  { name: 'open handles', d: 0, value: (s) => s.handles },
  { name: 'server CPU (% of a core)', d: 0, value: (s) => s.cpu },
  ...KINDS.map((k) => ({ name: `${k} p99 (ms)`, d: 2, value: (s: Sample) => s.latency[k].p99 })),
];

/** The figures of the samples after the warm-up, one row per series, as Markdown. */
export function seriesTable(samples: readonly Sample[], warmupS: number): string {
  const rows = [['series', 'after warm-up', 'plateau', 'min', 'max', 'slope per min']];
  for (const r of ROWS) {
    // As the verdict reads a series: samples without a value (no window, no full collection yet) left out.
    const known = samples.filter((s) => Number.isFinite(r.value(s)));
    const after = known.filter((s) => s.t >= warmupS);
    const vs = after.map(r.value);
    const pts = after.map((s) => ({ x: s.t / 60, y: r.value(s) }));
    const lastThird = known.slice(known.length - Math.max(1, Math.floor(known.length / 3)));
    rows.push([
      r.name,
      fmt(after.length ? r.value(after[0]) : NaN, r.d),
      fmt(median(lastThird.map(r.value)), r.d),
      fmt(vs.length ? Math.min(...vs) : NaN, r.d),
      fmt(vs.length ? Math.max(...vs) : NaN, r.d),
      fmt(slope(pts), 2),
    ]);
  }
  return markdownTable(rows);
}

export function idTable(checks: readonly TagCheck[]): string {
  const rows = [['tag', 'IDs', 'runs', 'duplicates']];
  for (const c of checks) rows.push([c.tag, fmt(Number(c.ids)), fmt(c.runs), String(c.duplicates)]);
  return markdownTable(rows);
}

export interface RunFacts {
  readonly minutes: number;
  readonly every: number;
  readonly samples: number;
  readonly answers: number;
  readonly adminCycles: number;
  readonly cpus: number;
  /** 1-minute load averages at the start and the end. */
  readonly loadStart: number;
  readonly loadEnd: number;
  /** % of all the machine's CPUs busy over the run, and % of one core the server used. */
  readonly machineBusy: number;
  readonly serverCpu: number;
}

export function summary(
  f: RunFacts,
  samples: readonly Sample[],
  warmupS: number,
  checks: readonly TagCheck[],
  v: Verdict,
): string {
  return [
    `Soak of ${f.minutes} min, a sample every ${f.every} s (${f.samples} samples; warm-up ${fmt(warmupS)} s: the first minute, then up to the second sample that saw a full collection; plateau = median of the last third), ` +
      `${fmt(f.answers)} answers, ${f.adminCycles} admin create/PATCH/delete cycles. ` +
      `Machine: ${f.cpus} CPUs, ${fmt(f.machineBusy)}% busy over the run (the server ${fmt(f.serverCpu)}% of one core), ` +
      `load average ${fmt(f.loadStart, 1)} at the start, ${fmt(f.loadEnd, 1)} at the end.`,
    '',
    seriesTable(samples, warmupS),
    '',
    idTable(checks),
    '',
    `Order: ${fmt(v.checks.orderChecked)} answers of sequential clients on order-global tags checked, ${v.checks.orderViolations} violations.`,
  ].join('\n');
}

export function verdictLine(v: Verdict, band: number, maxSlope: number): string {
  const slopeOf = (s: Verdict['rss']) => `slope ${s.slope >= 0 ? '+' : ''}${fmt(s.slope, 2)} MB/min`;
  const series = (name: string, s: Verdict['rss']) =>
    `${name} plateau ${fmt(s.plateau, 1)} MB (after warm-up within ${fmt(s.worst * 100, 1)}% of it, bound ${fmt(band * 100)}%; ${slopeOf(s)}, bound ${fmt(maxSlope, 2)})`;
  const c = v.checks;
  const rss = `RSS plateau ${fmt(v.rss.plateau, 1)} MB (${slopeOf(v.rss)}, shown, not judged)`;
  return (
    `soak verdict: ${v.outcome === 'pass' ? 'PASS' : v.outcome === 'fail' ? 'FAIL' : 'too short to judge'}: ${series("RSS with V8's pages whole", v.whole)}, ${series('heap after GC', v.heap)}, ${rss}, ` +
    `${c.duplicates} duplicates in ${fmt(Number(c.ids))} IDs, ${c.orderViolations} order violations in ${fmt(c.orderChecked)} ordered answers, ` +
    `${c.failed} failed requests${v.ok ? '' : ` [${v.reasons.join('; ')}]`}`
  );
}
