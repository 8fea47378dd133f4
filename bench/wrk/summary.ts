// What bench:wrk (bench/wrk.ts) makes of its measurements: wrk's summary line, read back from
// the JSON its Lua `done` hook prints, and the table of a run: per case the medians over rounds
// and the median of the per-round ratios to the bare route measured in the same round. Pure.
import { median } from '../stats.js';
import { fmt } from '../../tools/table.js';

/** Lua for `wrk -s`: only a `done` hook, so wrk keeps its static request and never parses bodies. */
export const WRK_DONE_SCRIPT = `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"wrk":1,"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
`;

export interface WrkSummary {
  /** Answers completed (any status). */
  readonly requests: number;
  readonly durationUs: number;
  readonly bytes: number;
  /** Socket errors by kind, and answers that were not 2xx or 3xx (`status`). */
  readonly connect: number;
  readonly read: number;
  readonly write: number;
  readonly status: number;
  readonly timeout: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
}

/** The summary in wrk's output (the line WRK_DONE_SCRIPT prints); undefined when there is none. */
export function parseWrkSummary(lines: readonly string[]): WrkSummary | undefined {
  const line = lines.find((l) => l.startsWith('{"wrk":1,'));
  if (!line) return undefined;
  const { wrk: _v, ...s } = JSON.parse(line) as WrkSummary & { wrk: number };
  return s;
}

/** Socket errors, timeouts and non-2xx/3xx answers of a summary. */
export const wrkFailures = (s: WrkSummary): number => s.connect + s.read + s.write + s.status + s.timeout;

/** The failures of a summary by kind, e.g. "timeout 50, status 2"; '' when there are none. */
export const failureKinds = (s: WrkSummary): string =>
  (['connect', 'read', 'write', 'status', 'timeout'] as const)
    .filter((k) => s[k] > 0)
    .map((k) => `${k === 'status' ? 'non-2xx' : k} ${s[k]}`)
    .join(', ');

/** One case measured in one round. */
export interface Measured {
  readonly name: string;
  readonly round: number;
  readonly rps: number;
  readonly p99Ms: number;
  /** % of one core over the steady window: the server's process tree, wrk, Redis, the rest of the machine. */
  readonly serverCpu: number;
  readonly wrkCpu: number;
  readonly redisCpu: number;
  readonly otherCpu: number;
}

export interface CaseRow {
  readonly name: string;
  readonly rounds: number;
  readonly rps: number;
  readonly minRps: number;
  readonly maxRps: number;
  readonly p99Ms: number;
  /** Median over rounds of the case's req/s ÷ the bare route's in the same round. */
  readonly ratio: number;
  readonly ratios: readonly number[];
  readonly serverCpu: number;
  /** Server CPU µs per request: its CPU share over the rate, median over rounds. */
  readonly serverUsPerReq: number;
  readonly wrkCpu: number;
  readonly maxWrkCpu: number;
  readonly redisCpu: number;
  readonly otherCpu: number;
}

const med = (xs: readonly number[]): number => median(xs) ?? NaN;

/** Per case (in the order given), the medians over its rounds and its ratios to `baseline` within each round. */
export function combineRounds(runs: readonly Measured[], names: readonly string[], baseline: string): CaseRow[] {
  return names.flatMap((name) => {
    const mine = runs.filter((r) => r.name === name);
    if (!mine.length) return [];
    const ratios = mine.flatMap((r) => {
      const base = runs.find((b) => b.name === baseline && b.round === r.round);
      return base && base.rps > 0 ? [r.rps / base.rps] : [];
    });
    const rps = mine.map((r) => r.rps);
    return [
      {
        name,
        rounds: mine.length,
        rps: med(rps),
        minRps: Math.min(...rps),
        maxRps: Math.max(...rps),
        p99Ms: med(mine.map((r) => r.p99Ms)),
        ratio: med(ratios),
        ratios,
        serverCpu: med(mine.map((r) => r.serverCpu)),
        serverUsPerReq: med(mine.map(usPerReq)),
        wrkCpu: med(mine.map((r) => r.wrkCpu)),
        maxWrkCpu: Math.max(...mine.map((r) => r.wrkCpu)),
        redisCpu: med(mine.map((r) => r.redisCpu)),
        otherCpu: med(mine.map((r) => r.otherCpu)),
      },
    ];
  });
}

export const RATIO_COLUMN = 'req/s ÷ bare';

/** The run's table as printed and recorded (header first). */
export function tableRows(rows: readonly CaseRow[]): string[][] {
  return [
    [
      'case',
      'req/s',
      'req/s range',
      'p99 ms',
      RATIO_COLUMN,
      'server CPU %',
      'server µs/req',
      'wrk CPU %',
      'Redis CPU %',
      'other CPU %',
    ],
    ...rows.map((r) => [
      r.name,
      fmt(r.rps),
      `${fmt(r.minRps)}–${fmt(r.maxRps)}`,
      fmt(r.p99Ms, 2),
      fmt(r.ratio, 3),
      fmt(r.serverCpu, 0),
      fmt(r.serverUsPerReq, 2),
      fmt(r.wrkCpu, 0),
      fmt(r.redisCpu, 0),
      fmt(r.otherCpu, 0),
    ]),
  ];
}

const usPerReq = (r: Measured): number => (r.rps > 0 ? (r.serverCpu / 100 / r.rps) * 1e6 : NaN);

/**
 * What `other` costs the server per request more than `base` (negative: less): per round, its
 * server CPU µs/req minus base's of the same round; the median over rounds. Answers a line for the notes.
 */
export function cpuSaved(runs: readonly Measured[], base: string, other: string): string {
  const diffs = runs.flatMap((r) => {
    const b = r.name === other ? runs.find((x) => x.name === base && x.round === r.round) : undefined;
    return b ? [usPerReq(r) - usPerReq(b)] : [];
  });
  if (!diffs.length) return `${other} − ${base}: no round measured both`;
  return `${other} − ${base}: ${fmt(med(diffs), 2)} server µs/req (median over rounds; per round ${diffs.map((d) => fmt(d, 2)).join(' ')})`;
}

/**
 * Whether wrk was the limit: it was not when it never used a whole core (95%) in a window: its
 * one thread always waited for answers. The bare route at `more` (twice the connections) is
 * told beside it: at the server's limit more connections give the same rate or a little more
 * (more requests per wake-up of its event loop), never much less. Answers a line for the notes.
 */
export function clientVerdict(rows: readonly CaseRow[], more: string | undefined): { ok: boolean; line: string } {
  const maxWrk = Math.max(...rows.map((r) => r.maxWrkCpu));
  const wide = more ? rows.find((r) => r.name === more) : undefined;
  const ok = maxWrk < 95;
  const parts = [`wrk used at most ${fmt(maxWrk)}% of its core in any window${ok ? '' : ' (saturated)'}`];
  if (wide) parts.push(`${wide.name} ran at ${fmt(wide.ratio, 3)}x the bare route`);
  return { ok, line: `load generator ${ok ? 'not the limit' : 'MAY BE THE LIMIT'}: ${parts.join('; ')}` };
}
