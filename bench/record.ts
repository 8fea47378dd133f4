// One benchmark run as JSON: bench/results/runs/<bench>-<date>.json. Every benchmark records
// its run here (the command line, the date, the machine, the cases with their figures and each
// case's ratio to the baseline measured in the same run); docs/BENCHMARKS.md and the charts
// are generated from these files (bench/report/benchmarks-doc.ts), never written by hand.
// BENCH_RUNS_DIR writes elsewhere (a trial run that should not join the history).

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const RUNS_DIR = new URL('./results/runs/', import.meta.url);

/** A column of the run's table: `digits` decimals, `scale` 'M' for figures printed in millions. */
export interface Column {
  readonly label: string;
  readonly digits?: number;
  readonly scale?: 'M';
}

export interface Case {
  /** The cells that name the case (the table's first `labelColumns` columns). */
  readonly labels: readonly string[];
  /** Figures by column label; text where a cell is not a number; a "-" cell is left out. */
  readonly figures: Readonly<Record<string, number | string>>;
  /** The case's ratio to the same-run baseline (`Run.ratio` says of what). */
  readonly ratio?: number;
}

export interface Machine {
  readonly cpus?: number;
  readonly cpuModel?: string;
  readonly node?: string;
  readonly loadavgBefore?: readonly number[];
  readonly loadavgAfter?: readonly number[];
}

export interface Run {
  readonly schema: 1;
  readonly bench: string;
  readonly date: string;
  /** The command as typed (npm script and its arguments). */
  readonly command?: string;
  /** The benchmark's file and arguments, as the process received them. */
  readonly argv?: readonly string[];
  readonly machine: Machine;
  /** The name of the baseline case (its labels joined by ", "). */
  readonly baseline?: string;
  /** What `Case.ratio` is: a column of the table, or "<column> ÷ baseline". */
  readonly ratio?: string;
  readonly labelColumns: number;
  readonly columns: readonly Column[];
  readonly cases: readonly Case[];
  /** Goals and verdicts, as the run printed them. */
  readonly notes?: readonly string[];
  /** Where a run converted from an older report came from. */
  readonly source?: string;
}

export const caseName = (c: Case): string => c.labels.join(', ');

/** A printed figure ("49,027", "0.938", "1,446.9M", "**3**") as a number and its form; undefined for "-" or blank. */
export function parseFigure(cell: string): { value: number | string; digits: number; scale?: 'M' } | undefined {
  const t = cell.replace(/\*\*/g, '').trim();
  if (t === '' || t === '-') return undefined;
  const m = /^(-?[\d,]+)(?:\.(\d+))?(M?)$/.exec(t);
  if (!m) return { value: t, digits: 0 };
  const digits = m[2]?.length ?? 0;
  const n = Number(`${m[1].replace(/,/g, '')}${m[2] ? `.${m[2]}` : ''}`);
  return m[3] ? { value: n * 1e6, digits, scale: 'M' } : { value: n, digits };
}

/**
 * The columns and cases of a table as printed: rows[0] is the header, the first `labelColumns` cells of a row name it.
 */
export function casesFromTable(
  rows: readonly (readonly string[])[],
  labelColumns = 1,
): { columns: Column[]; cases: Case[] } {
  const [head, ...body] = rows;
  const digits = head.map(() => 0);
  const scale: ('M' | undefined)[] = head.map(() => undefined);
  const cases = body.map((r) => {
    const figures: Record<string, number | string> = {};
    for (let i = labelColumns; i < head.length; i++) {
      const f = parseFigure(r[i] ?? '');
      if (!f) continue;
      figures[head[i]] = f.value;
      if (typeof f.value === 'number') digits[i] = Math.max(digits[i], f.digits);
      if (f.scale) scale[i] = f.scale;
    }
    return { labels: r.slice(0, labelColumns).map((c) => c.replace(/\*\*/g, '').trim()), figures };
  });
  const columns = head.map((label, i) => ({
    label,
    ...(i >= labelColumns ? { digits: digits[i] } : {}),
    ...(scale[i] ? { scale: scale[i] } : {}),
  }));
  return { columns, cases };
}

/**
 * The rows of the first Markdown table of a report whose first header cell is "case" (header first, no separator row).
 */
export function tableRows(markdown: string): string[][] {
  const rows: string[][] = [];
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      if (rows.length) break;
      continue;
    }
    const cells = line
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim());
    if (!rows.length && cells[0] !== 'case') continue;
    if (!cells.every((c) => /^:?-{3,}:?$/.test(c))) rows.push(cells);
  }
  return rows;
}

/**
 * How each case's ratio is found: `column`, a column that already holds the ratio to the
 * baseline (a median of per-round ratios); or `of`, a figure divided by the baseline's.
 * `cases` limits the ratio to the cases it accepts.
 */
export type RatioSpec =
  | { readonly column: string; readonly baseline: string }
  | { readonly of: string; readonly baseline: string; readonly cases?: (name: string) => boolean };

export function withRatios(cases: readonly Case[], spec: RatioSpec): Case[] {
  if ('column' in spec)
    return cases.map((c) =>
      typeof c.figures[spec.column] === 'number' ? { ...c, ratio: c.figures[spec.column] as number } : c,
    );
  const base = cases.find((c) => caseName(c) === spec.baseline)?.figures[spec.of];
  return cases.map((c) => {
    const v = c.figures[spec.of];
    if (typeof base !== 'number' || base === 0 || typeof v !== 'number' || (spec.cases && !spec.cases(caseName(c))))
      return c;
    return { ...c, ratio: Math.round((v / base) * 1e4) / 1e4 };
  });
}

export const ratioLabel = (spec: RatioSpec): string => ('column' in spec ? spec.column : `${spec.of} ÷ baseline`);

/** The file name of a run: <bench>-<date with ":" and "." as "-">.json. */
export const runFileName = (bench: string, date: string): string => `${bench}-${date.replace(/[:.]/g, '-')}.json`;

export function machineNow(): Machine {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim(),
    node: process.version,
    loadavgBefore: loadavg().map((v) => Math.round(v * 100) / 100),
  };
}

export interface Recorder {
  /** Writes the run; answers the file written. */
  finish(table: {
    readonly rows: readonly (readonly string[])[];
    readonly labelColumns?: number;
    readonly ratio: RatioSpec;
    readonly notes?: readonly string[];
    /** The run's name when one benchmark records runs of different kinds (scale, scale-rate). */
    readonly bench?: string;
  }): string;
}

const LOCAL_PATH = /(?<![\w.:/-])\/[\w.-]+(?:\/[\w.-]+)+/g;

/**
 * A recorded text with the paths of this machine left out: a path inside the repository
 * becomes relative to it, any other path that exists here (a checkout or a file compared
 * against) becomes "<local path>". Route paths and the like (nothing on disk) stay.
 */
export function withoutLocalPaths(text: string, root: string = process.cwd()): string {
  return text.replace(LOCAL_PATH, (p) => {
    if (p === root || p.startsWith(`${root}/`)) return relative(root, p) || '.';
    return existsSync(p) ? '<local path>' : p;
  });
}

/**
 * Starts recording a run of `bench`: the date, the command line and the load average are taken
 * now, the load average again at finish. The figures are the table the benchmark prints.
 */
export function startRun(bench: string): Recorder {
  const date = new Date().toISOString();
  const machine = machineNow();
  const argv = [relative(process.cwd(), process.argv[1] ?? ''), ...process.argv.slice(2)];
  const script = process.env.npm_lifecycle_event;
  const args = process.argv.slice(2).join(' ');
  const command = script ? `npm run ${script}${args ? ` -- ${args}` : ''}` : `node --import tsx ${argv.join(' ')}`;
  return {
    finish({ rows, labelColumns = 1, ratio, notes, bench: name = bench }) {
      const { columns, cases } = casesFromTable(rows, labelColumns);
      const run: Run = {
        schema: 1,
        bench: name,
        date,
        command,
        argv,
        machine: { ...machine, loadavgAfter: loadavg().map((v) => Math.round(v * 100) / 100) },
        baseline: ratio.baseline,
        ratio: ratioLabel(ratio),
        labelColumns,
        columns,
        cases: withRatios(cases, ratio),
        ...(notes?.length ? { notes } : {}),
      };
      const dir = process.env.BENCH_RUNS_DIR ? pathToFileURL(`${resolve(process.env.BENCH_RUNS_DIR)}/`) : RUNS_DIR;
      mkdirSync(dir, { recursive: true });
      const file = new URL(runFileName(name, date), dir);
      writeFileSync(file, `${withoutLocalPaths(JSON.stringify(run, null, 2))}\n`);
      const path = relative(process.cwd(), file.pathname);
      console.log(`recorded: ${path}`);
      return path;
    },
  };
}
