// The HTTP benchmark's report: one row per case (the median over rounds), the ratios to the
// bare route measured in the same round, the speed targets, the terminal tables and the
// results files (bench/results/http-latest.json and .md).
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fmt, table } from '../../tools/table.js';
import { median } from '../stats.js';
import type { CaseName, Options } from './cases.js';
import type { CaseResult } from './runner.js';

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));

export interface Target {
  name: string;
  want: string;
  value: number;
  pass: boolean;
}

/** One row per case: the median over rounds of each figure. */
export function combineRounds(runs: CaseResult[], cases: CaseName[]): CaseResult[] {
  const results: CaseResult[] = [];
  for (const name of cases) {
    const rs = runs.filter((r) => r.name === name);
    if (rs.length === 0) continue;
    if (rs.length === 1) {
      results.push(rs[0]);
      continue;
    }
    const med = (f: (r: CaseResult) => number | undefined) => median(rs.map(f));
    results.push({
      ...rs[0],
      round: 0,
      durationS: rs.reduce((a, r) => a + r.durationS, 0),
      ok: rs.reduce((a, r) => a + r.ok, 0),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
      timeouts: rs.reduce((a, r) => a + r.timeouts, 0),
      violations: rs.reduce((a, r) => a + r.violations, 0),
      rps: med((r) => r.rps)!,
      p50: med((r) => r.p50)!,
      p90: med((r) => r.p90)!,
      p99: med((r) => r.p99)!,
      max: Math.max(...rs.map((r) => r.max)),
      cpu: {
        server: med((r) => r.cpu.server)!,
        client: med((r) => r.cpu.client)!,
        redis: med((r) => r.cpu.redis)!,
        other: med((r) => r.cpu.other)!,
      },
      redisEvalCalls: rs.reduce((a, r) => a + r.redisEvalCalls, 0),
      requestsPerEval: med((r) => r.requestsPerEval),
      redisEvalUsecPerCall: med((r) => r.redisEvalUsecPerCall),
      checks: rs.flatMap((r) => r.checks.map((c) => `round ${r.round}: ${c}`)),
      examples: rs.flatMap((r) => r.examples),
    });
  }
  return results;
}

/** The baseline measured in the same round as r. */
function baselineOf(runs: CaseResult[], r: CaseResult): CaseResult | undefined {
  return runs.find((b) => b.name === 'baseline' && b.round === r.round);
}

/**
 * Sets each result's ratios to the baseline and returns the speed targets. Each round measures
 * the baseline and every case back to back, so a ratio is taken within a round and the median
 * over rounds is shown: a slow spell of the machine then moves both sides of one ratio instead
 * of one side of the median.
 */
export function ratiosAndTargets(results: CaseResult[], runs: CaseResult[]): Target[] {
  const base = results.find((c) => c.name === 'baseline');
  if (base)
    for (const c of results) {
      const pairs = runs
        .filter((r) => r.name === c.name)
        .map((r) => [r, baselineOf(runs, r)] as const)
        .filter((p): p is readonly [CaseResult, CaseResult] => p[1] !== undefined);
      c.ratioRps = median(pairs.map(([r, b]) => r.rps / b.rps));
      c.ratioP99 = median(pairs.map(([r, b]) => r.p99 / b.p99));
    }
  const targets: Target[] = [];
  const byName = (n: CaseName) => results.find((c) => c.name === n);
  if (base) {
    const node = byName('node');
    const glob = byName('global');
    if (node) {
      targets.push({
        name: 'node req/s ≥ 0.95 × bare',
        want: '≥ 0.95',
        value: node.ratioRps!,
        pass: node.ratioRps! >= 0.95,
      });
      targets.push({
        name: 'node p99 ≤ 1.2 × bare p99',
        want: '≤ 1.2',
        value: node.ratioP99!,
        pass: node.ratioP99! <= 1.2,
      });
    }
    if (glob) {
      targets.push({
        name: 'global req/s ≥ 0.85 × bare',
        want: '≥ 0.85',
        value: glob.ratioRps!,
        pass: glob.ratioRps! >= 0.85,
      });
      targets.push({
        name: 'global p99 ≤ 1.2 × bare p99',
        want: '≤ 1.2',
        value: glob.ratioP99!,
        pass: glob.ratioP99! <= 1.2,
      });
    }
    const sf = byName('snowflake');
    if (sf)
      targets.push({
        name: 'snowflake req/s ≥ 0.95 × bare',
        want: '≥ 0.95',
        value: sf.ratioRps!,
        pass: sf.ratioRps! >= 0.95,
      });
  }
  return targets;
}

export function mainRows(cases: CaseResult[]): string[][] {
  return [
    ['case', 'req/s', 'p50 ms', 'p99 ms', 'req/s ÷ base', 'p99 ÷ base', 'non-2xx+errors'],
    ...cases.map((c) => [
      c.name,
      fmt(c.rps),
      fmt(c.p50, 3),
      fmt(c.p99, 3),
      fmt(c.ratioRps, 3),
      fmt(c.ratioP99, 3),
      String(c.non2xx + c.errors + c.timeouts),
    ]),
  ];
}

/** Every round of a multi-round run, with its ratios to the same round's baseline. */
function roundRows(runs: CaseResult[]): string[][] {
  return [
    ['case', 'round', 'req/s', 'p99 ms', 'req/s ÷ base', 'p99 ÷ base'],
    ...runs.map((r) => {
      const b = baselineOf(runs, r);
      return [
        r.name,
        String(r.round),
        fmt(r.rps),
        fmt(r.p99, 3),
        b ? fmt(r.rps / b.rps, 3) : '-',
        b ? fmt(r.p99 / b.p99, 3) : '-',
      ];
    }),
  ];
}

function diagRows(cases: CaseResult[]): string[][] {
  return [
    [
      'case',
      'requests',
      'p90 ms',
      'max ms',
      'server CPU %',
      'server µs/req',
      'client CPU %',
      'Redis CPU %',
      'other CPU %',
      'Redis evals',
      'req per eval',
      'Redis µs/eval',
    ],
    ...cases.map((c) => [
      c.round > 0 ? `${c.name} #${c.round}` : c.name,
      fmt(c.ok),
      fmt(c.p90, 3),
      fmt(c.max, 1),
      fmt(c.cpu.server),
      fmt((c.cpu.server * 1e4) / c.rps, 1),
      fmt(c.cpu.client),
      fmt(c.cpu.redis),
      fmt(c.cpu.other),
      fmt(c.redisEvalCalls),
      fmt(c.requestsPerEval, 1),
      fmt(c.redisEvalUsecPerCall, 1),
    ]),
  ];
}

export interface Report {
  readonly opts: Options;
  readonly ok: boolean;
  readonly results: CaseResult[];
  readonly runs: CaseResult[];
  readonly targets: Target[];
  readonly problems: string[];
  readonly warnings: string[];
  /** The 1-minute load average before the run. */
  readonly loadBefore: number;
}

export function printReport({ opts, ok, results, runs, targets, problems, warnings }: Report): void {
  console.log('');
  console.log(table(mainRows(results), false));
  console.log('');
  console.log(table(diagRows(results), false));
  if (opts.rounds > 1) {
    console.log('');
    console.log(table(roundRows(runs), false));
  }
  console.log('(CPU % is of one core over the measured window; Redis counters are server-wide.)');
  console.log('');
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${fmt(t.value, 3)}`);
  for (const c of results) for (const ch of c.checks) console.log(`check ${c.name}: ${ch}`);
  for (const w of warnings) console.log(`note: ${w}`);
  for (const p of problems) console.log(`FAIL: ${p}`);
  console.log(ok ? 'bench OK (answers correct, no errors)' : 'bench FAILED');
}

/** bench/results/http-latest.json and .md. */
export function writeReport({ opts, ok, results, runs, targets, problems, warnings, loadBefore }: Report): void {
  mkdirSync(RESULTS, { recursive: true });
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? '',
    durationS: opts.duration,
    warmupS: opts.warmup,
    connections: opts.connections,
    rounds: opts.rounds,
    loadavg1mBefore: Number(loadBefore.toFixed(2)),
    client: 'autocannon (programmatic, in the bench process), pipelining 1, keep-alive, loopback',
    env: opts.env,
  };
  writeFileSync(
    `${RESULTS}http-latest.json`,
    JSON.stringify({ ...meta, ok, cases: results, targets, problems, warnings }, null, 2) + '\n',
  );
  const md = [
    '# idmint HTTP benchmark (latest run)',
    '',
    `- date: ${meta.date}`,
    `- node ${meta.node}, ${meta.cpus} CPUs (${meta.cpuModel})`,
    `- ${meta.connections} connections, ${meta.durationS} s per case after a ${meta.warmupS} s warm-up${meta.rounds > 1 ? `, ${meta.rounds} interleaved rounds (medians shown; a ratio is the median of the per-round ratios)` : ''}`,
    `- 1-minute load average before the run: ${meta.loadavg1mBefore}`,
    `- client: ${meta.client}`,
    ...(Object.keys(opts.env).length
      ? [
          `- idmint env: ${Object.entries(opts.env)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')}`,
        ]
      : []),
    `- result: ${ok ? 'OK (answers correct, no errors)' : 'FAILED'}`,
    '',
    table(mainRows(results), true),
    '',
    '| target | value | verdict |',
    '| --- | ---: | --- |',
    ...targets.map((t) => `| ${t.name} | ${fmt(t.value, 3)} | ${t.pass ? 'PASS' : 'MISS'} |`),
    '',
    'Diagnostics. CPU % is of one core over the measured window; "server µs/req" is the server',
    'process\'s CPU time per answered request; "other CPU %" is what the rest of the machine used',
    '(anything well above 0 disturbs the figures); Redis counters are server-wide, so other',
    'clients of the same Redis inflate "Redis evals".',
    '',
    table(diagRows(results), true),
    '',
    ...(opts.rounds > 1
      ? ['Every round (the baseline and each case measured back to back):', '', table(roundRows(runs), true), '']
      : []),
    ...results.flatMap((c) => c.checks.map((ch) => `- check ${c.name}: ${ch}`)),
    ...problems.map((p) => `- FAIL: ${p}`),
    '',
  ].join('\n');
  writeFileSync(`${RESULTS}http-latest.md`, md);
}
