// What docs/BENCHMARKS.md shows of recorded runs (bench/record.ts): a run's table, its facts,
// the list of runs of a benchmark, single figures for prose, and the chart of each case's
// ratio to its same-run baseline across runs, as hand-written SVG. Pure: no file access.

import { fmt, markdownTable } from '../../tools/table.js';
import { type Case, type Column, caseName, type Run } from '../record.js';

export function formatFigure(v: number | string | undefined, col: Column | undefined): string {
  if (v === undefined) return '-';
  if (typeof v === 'string') return v;
  return col?.scale === 'M' ? `${fmt(v / 1e6, col.digits ?? 1)}M` : fmt(v, col?.digits ?? 0);
}

const ratioShown = (run: Run): boolean => run.ratio !== undefined && !run.columns.some((c) => c.label === run.ratio);

/** The run's table as it printed it, with the ratio as a last column when it is not one already. */
export function runTable(run: Run): string {
  const figureColumns = run.columns.slice(run.labelColumns);
  const head = [...run.columns.map((c) => c.label), ...(ratioShown(run) ? [run.ratio as string] : [])];
  const rows = run.cases.map((c) => [
    ...c.labels,
    ...figureColumns.map((col) => formatFigure(c.figures[col.label], col)),
    ...(ratioShown(run) ? [c.ratio === undefined ? '-' : fmt(c.ratio, 2)] : []),
  ]);
  return markdownTable([head, ...rows], run.labelColumns);
}

const loads = (l: readonly number[] | undefined): string | undefined => l?.map((v) => fmt(v, 2)).join(' ');

/** One line per fact of the run: command, date, machine, load. */
export function runFacts(run: Run): string {
  const m = run.machine;
  const machine = [
    m.cpus !== undefined ? `${m.cpus} CPUs${m.cpuModel ? ` (${m.cpuModel})` : ''}` : undefined,
    m.node ? `node ${m.node}` : undefined,
  ].filter(Boolean);
  const before = loads(m.loadavgBefore);
  const after = loads(m.loadavgAfter);
  return [
    run.command ? `- command: \`${run.command}\`` : '- command: not recorded',
    `- date: ${run.date}`,
    ...(machine.length ? [`- machine: ${machine.join(', ')}`] : []),
    ...(before || after
      ? [
          `- load average${before ? ` before the run: ${before}` : ''}${before && after ? ';' : ''}${after ? ` after the run: ${after}` : ''}`,
        ]
      : []),
    ...(run.baseline ? [`- baseline: ${run.baseline}; ratio: ${run.ratio}`] : []),
    ...(run.source ? [`- converted from ${run.source}`] : []),
  ].join('\n');
}

export const runNotes = (run: Run): string => (run.notes ?? []).map((n) => `- ${n}`).join('\n');

/** Every recorded run of a benchmark, oldest first: date, command, load before. */
export function runsTable(runs: readonly Run[]): string {
  return markdownTable(
    [
      ['run', 'date', 'command', 'load before'],
      ...runs.map((r, i) => [
        String(i + 1),
        r.date,
        r.command ? `\`${r.command}\`` : '-',
        loads(r.machine.loadavgBefore) ?? '-',
      ]),
    ],
    3,
  );
}

function findCase(run: Run, name: string): Case {
  const c = run.cases.find((x) => caseName(x) === name);
  if (!c)
    throw new Error(
      `${run.bench}: no case "${name}" in the run of ${run.date} (cases: ${run.cases.map(caseName).join('; ')})`,
    );
  return c;
}

/** One figure of a run, formatted as its table prints it; column "ratio" is the case's ratio to the baseline. */
export function figure(run: Run, name: string, column: string): string {
  const c = findCase(run, name);
  if (column === 'ratio') {
    if (c.ratio === undefined) throw new Error(`${run.bench}: case "${name}" has no ratio`);
    return fmt(c.ratio, 2);
  }
  const col = run.columns.find((x) => x.label === column);
  if (!col || c.figures[column] === undefined)
    throw new Error(`${run.bench}: case "${name}" has no figure "${column}"`);
  return formatFigure(c.figures[column], col);
}

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];
const DASHES = ['', '6 3', '2 3'];
const num = (v: number): string => String(Math.round(v * 10) / 10);

/**
 * A line chart of each case's ratio to its same-run baseline, one polyline per case that has a
 * ratio in any run, runs in date order on the x axis; a dashed line marks 1.0.
 */
export function ratioChart(runs: readonly Run[], title: string): string {
  const names: string[] = [];
  for (const r of runs)
    for (const c of r.cases) if (c.ratio !== undefined && !names.includes(caseName(c))) names.push(caseName(c));
  const values = runs.flatMap((r) => r.cases.flatMap((c) => (c.ratio === undefined ? [] : [c.ratio])));
  // Ticks at a round step (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, ...), about five of them.
  const span = Math.max(1, ...values) - Math.min(1, ...values) || 0.2;
  const step =
    [0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100].find((st) => span / st <= 6) ??
    10 ** Math.ceil(Math.log10(span / 5));
  const lo = Math.max(0, Math.floor(Math.min(1, ...values) / step) * step);
  const hi = Math.ceil(Math.max(1, ...values) / step) * step;
  const ticks = Math.round((hi - lo) / step);
  const W = 760;
  const left = 56;
  const right = 24;
  const top = 32;
  const plotH = 260;
  const legendTop = top + plotH + 44;
  const H = legendTop + names.length * 18 + 8;
  const x = (i: number): number =>
    runs.length === 1 ? left + (W - left - right) / 2 : left + (i * (W - left - right)) / (runs.length - 1);
  const y = (v: number): number => top + ((hi - v) / (hi - lo || 1)) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}</title>`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${left}" y="20" font-size="14">${esc(title)}</text>`,
  ];
  for (let t = 0; t <= ticks; t++) {
    const v = lo + t * step;
    out.push(`<line x1="${left}" y1="${num(y(v))}" x2="${W - right}" y2="${num(y(v))}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${left - 6}" y="${num(y(v) + 4)}" text-anchor="end">${v.toFixed(2)}</text>`);
  }
  out.push(
    `<line x1="${left}" y1="${num(y(1))}" x2="${W - right}" y2="${num(y(1))}" stroke="#000000" stroke-dasharray="4 4"/>`,
  );
  runs.forEach((_, i) => {
    out.push(`<text x="${num(x(i))}" y="${top + plotH + 16}" text-anchor="middle">${i + 1}</text>`);
  });
  out.push(
    `<text x="${left + (W - left - right) / 2}" y="${top + plotH + 32}" text-anchor="middle">run (oldest first; dates in the list of runs)</text>`,
  );
  names.forEach((name, k) => {
    const color = COLORS[k % COLORS.length];
    const dash = DASHES[Math.floor(k / COLORS.length) % DASHES.length];
    const points = runs.flatMap((r, i) => {
      const c = r.cases.find((cc) => caseName(cc) === name);
      return c?.ratio === undefined ? [] : [[x(i), y(c.ratio)] as const];
    });
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${points.map(([px, py]) => `${num(px)},${num(py)}`).join(' ')}"><title>${esc(name)}</title></polyline>`,
    );
    for (const [px, py] of points) out.push(`<circle cx="${num(px)}" cy="${num(py)}" r="3" fill="${color}"/>`);
    const ly = legendTop + k * 18;
    out.push(
      `<line x1="${left}" y1="${ly - 4}" x2="${left + 24}" y2="${ly - 4}" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
    );
    out.push(`<text x="${left + 32}" y="${ly}">${esc(name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
