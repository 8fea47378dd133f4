// The scaling benchmark's report: one row per case and process count (the median over rounds),
// the terminal table and bench/results/scale-latest.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fmt, table } from '../../tools/table.js';
import { medianOrNaN as median } from '../stats.js';
import { COUNTED_CASES, GLOBAL_CASES, type CaseName, type Options } from './cases.js';
import type { RedisLimit } from './redis-limit.js';
import type { CaseResult } from './runner.js';

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));

const CASE_LABEL: Record<CaseName, string> = {
  bare: 'bare Fastify route',
  incr: 'bare route + one Redis INCR',
  shared: 'bare route + one Redis INCRBY per turn, shared',
  node: '`GET /v1/id`, order node',
  global: '`GET /v1/id`, order global',
  alt: '`GET /v1/id`, order global, with',
};
const labelOf = (opts: Options, name: CaseName): string =>
  name === 'alt'
    ? `${CASE_LABEL.alt} ${Object.entries(opts.altEnv)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`
    : CASE_LABEL[name];

/**
 * The median over rounds of a case's req/s divided by that of case `other` at `processes` in
 * the same round (rounds measure every case at every process count one after the other, so a
 * ratio is taken within minutes, whatever the machine did between rounds).
 */
export function roundRatio(
  rounds: readonly CaseResult[],
  c: CaseResult,
  other: CaseName,
  processes: number,
  figure: (r: CaseResult) => number = (r) => r.rps,
): number {
  return median(
    rounds
      .filter((r) => r.name === c.name && r.processes === c.processes)
      .map((r) => {
        const o = rounds.find((x) => x.name === other && x.processes === processes && x.round === r.round);
        return o ? figure(r) / figure(o) : undefined;
      }),
  );
}

/**
 * What the ratios compare: req/s when every connection sends as fast as it is answered; with
 * --rate (every case at the same offered load) requests per server CPU-second.
 */
const figureOf = (opts: Options) => (opts.rate > 0 ? (r: CaseResult) => r.perCpuS : (r: CaseResult) => r.rps);

function rows(
  opts: Options,
  results: CaseResult[],
  rounds: readonly CaseResult[],
  redis: RedisLimit | undefined,
): string[][] {
  const figure = figureOf(opts);
  const fewest = (c: CaseResult) => Math.min(...results.filter((x) => x.name === c.name).map((x) => x.processes));
  const has = (name: CaseName) => results.some((r) => r.name === name);
  const counted = (c: CaseResult) => COUNTED_CASES.includes(c.name);
  const out = [
    [
      'case',
      'processes',
      'req/s',
      'req/s range',
      '× fewest processes',
      '÷ bare',
      '÷ INCR route',
      '÷ shared INCRBY route',
      '÷ order global',
      'p50 ms',
      'p99 ms',
      'server CPU %',
      'server usec per request',
      'load gen CPU %',
      'Redis CPU %',
      'other CPU %',
      'Redis calls/s',
      'req per call',
      'takes/s (nodes)',
      'req per take (nodes)',
      'Redis usec/take',
      'no-op usec, paced',
      'take ÷ paced no-op',
      'no-op usec, back to back',
    ],
  ];
  for (const c of results) {
    out.push([
      labelOf(opts, c.name),
      String(c.processes),
      fmt(c.rps),
      c.roundsRps.length > 1 ? `${fmt(Math.min(...c.roundsRps))}–${fmt(Math.max(...c.roundsRps))}` : '-',
      fmt(roundRatio(rounds, c, c.name, fewest(c), figure), 2),
      has('bare') ? fmt(roundRatio(rounds, c, 'bare', c.processes, figure), 2) : '-',
      counted(c) && has('incr') ? fmt(roundRatio(rounds, c, 'incr', c.processes, figure), 2) : '-',
      counted(c) && has('shared') ? fmt(roundRatio(rounds, c, 'shared', c.processes, figure), 2) : '-',
      c.name === 'alt' ? fmt(roundRatio(rounds, c, 'global', c.processes, figure), 2) : '-',
      fmt(c.p50, 2),
      fmt(c.p99, 2),
      fmt(c.cpu.server),
      fmt(1e6 / c.perCpuS, 1),
      fmt(c.cpu.client),
      fmt(c.cpu.redis),
      `${fmt(c.cpu.other)}${c.disturbed ? ' (disturbed)' : ''}`,
      fmt(c.callsPerS),
      counted(c) ? fmt(c.rps / c.callsPerS, 1) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.takesPerS) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.reqPerTake, 1) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.usecPerTake, 2) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.usecNoopPaced, 2) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.usecPerTake / c.usecNoopPaced, 2) : '-',
      GLOBAL_CASES.includes(c.name) ? fmt(c.usecNoop, 2) : '-',
    ]);
  }
  if (redis) {
    out.push([
      `redis-benchmark EVALSHA take (1 ID per call, ${redis.clients} clients)`,
      '-',
      fmt(redis.rps),
      '-',
      '-',
      '-',
      '-',
      '-',
      '-',
      fmt(redis.p50, 3),
      fmt(redis.p99, 3),
      '-',
      '-',
      fmt(redis.cpu.client),
      fmt(redis.redisCpu),
      fmt(redis.cpu.other),
      fmt(redis.rps),
      '1.0',
      '-',
      '-',
      '-',
      '-',
      '-',
      '-',
    ]);
  }
  return out;
}

/** One row for the rounds of a case: the median of every figure. */
export function medianOf(rs: CaseResult[], maxOther: number): CaseResult {
  if (rs.length === 1) return rs[0];
  const m = (f: (r: CaseResult) => number) => median(rs.map(f));
  const other = m((r) => r.cpu.other);
  return {
    ...rs[0],
    rps: m((r) => r.rps),
    perCpuS: m((r) => r.perCpuS),
    p50: m((r) => r.p50),
    p99: m((r) => r.p99),
    requests: rs.reduce((a, r) => a + r.requests, 0),
    cpu: {
      server: m((r) => r.cpu.server),
      client: m((r) => r.cpu.client),
      redis: m((r) => r.cpu.redis),
      other,
      busiest: [...new Set(rs.flatMap((r) => r.cpu.busiest))].slice(0, 4),
    },
    callsPerS: m((r) => r.callsPerS),
    takesPerS: m((r) => r.takesPerS),
    reqPerTake: m((r) => r.reqPerTake),
    usecPerTake: m((r) => r.usecPerTake),
    usecNoopPaced: m((r) => r.usecNoopPaced),
    usecNoop: m((r) => r.usecNoop),
    attempts: rs.reduce((a, r) => a + r.attempts, 0),
    disturbed: other > maxOther,
    checks: rs.map((r) => r.checks).join('; '),
    roundsRps: rs.map((r) => r.rps),
  };
}

export interface Report {
  readonly opts: Options;
  readonly ok: boolean;
  readonly results: CaseResult[];
  /** Every case of every round (results holds their medians). */
  readonly rounds: readonly CaseResult[];
  readonly limit: RedisLimit | undefined;
  readonly problems: string[];
  /** The load averages before the run. */
  readonly loadBefore: number[];
  /** The Redis of the run: the shared one at this URL, or a private server. */
  readonly redisUrl: string;
  readonly privateRedis: boolean;
}

export function printReport({ opts, ok, results, rounds, limit, problems }: Report): void {
  console.log('');
  console.log(table(rows(opts, results, rounds, limit), false, 2));
  console.log(
    '(CPU % is of one core over the measured window; "other" is every process but the servers, the load generator and Redis.)',
  );
  for (const c of results) console.log(`check ${c.name} x${c.processes}: ${c.checks}`);
  for (const p of problems) console.log(`FAIL: ${p}`);
  console.log(ok ? 'bench OK (answers correct, no errors)' : 'bench FAILED');
}

/** The results file of a run: scale-latest.md, or scale-rate-latest.md for a run at a fixed offered load (--rate). */
export const resultsFile = (opts: Options): string => (opts.rate > 0 ? 'scale-rate-latest.md' : 'scale-latest.md');

/** The main table of a run, as the results file shows it (header first; the first two columns name a case). */
export const resultsTable = ({ opts, results, rounds, limit }: Report): string[][] =>
  rows(opts, results, rounds, limit);

/** bench/results/<resultsFile>. */
export function writeReport({
  opts,
  ok,
  results,
  rounds,
  limit,
  problems,
  loadBefore,
  redisUrl,
  privateRedis,
}: Report): void {
  mkdirSync(RESULTS, { recursive: true });
  const cores = cpus().length;
  const disturbed = results.filter((c) => c.disturbed);
  const md = [
    opts.rate > 0
      ? `# idmint scaling benchmark (\`--processes\`) at ${opts.rate} req/s offered`
      : '# idmint scaling benchmark (`--processes`)',
    '',
    `- command: \`npm run bench:scale --${process.argv
      .slice(2)
      .map((a) => ` ${a}`)
      .join('')}\``,
    `- date: ${new Date().toISOString()}`,
    `- machine: ${cores} CPUs (${cpus()[0]?.model.trim() ?? '?'}), node ${process.version}; load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`,
    `- load: autocannon in the bench process (one thread), ${opts.connections} keep-alive connections over loopback, pipelining 1, ${opts.duration} s per case after a ${opts.warmup} s warm-up` +
      (opts.rounds > 1
        ? `; ${opts.rounds} rounds, each measuring every case at every process count in turn; req/s, CPU and latency are medians over the rounds (with the range of req/s), ratios are medians of the ratios within each round`
        : ''),
    ...(opts.rate > 0
      ? [
          `- offered load: ${opts.rate} requests per second over all connections in every measured window (below what the slowest case can serve), so every case does the same work; the ratios compare requests per server CPU-second (the inverse of "server usec per request"), not req/s`,
        ]
      : []),
    `- every process count's servers run side by side for the whole run; before the first round each case ran ${opts.settle} s per serving process (each process compiles its hot paths, the segment step adapts to the rate)`,
    opts.pin
      ? '- pinned (taskset): every server process on CPU 1, the load generator (this process) on CPU 0; Redis unpinned'
      : '- not pinned: servers, load generator and Redis share both CPUs',
    `- servers: idmint \`serve --processes N\` and the bare route (N > 1: N copies under node's cluster module) share the ${cores} CPUs with the load generator and Redis`,
    `- a case is run again (up to ${opts.retries} times) when other processes used more than ${opts.maxOther}% of a core; ${disturbed.length ? `still disturbed: ${disturbed.map((c) => `${c.name} x${c.processes}`).join(', ')}` : 'no case stayed disturbed'}`,
    `- Redis: ${privateRedis ? 'a redis-server of this run alone (--private-redis): its commandstats count only this run' : `the shared server at ${redisUrl}: commandstats are server-wide, other clients count too`}`,
    `- idmint settings from the environment: ${
      Object.entries(process.env)
        .filter(([k]) => k.startsWith('COALESCE_'))
        .map(([k, v]) => `${k}=${v}`)
        .join(' ') || 'none (defaults)'
    }`,
    ...(opts.cases.includes('alt')
      ? [
          `- case alt: order global on a second idmint of each process count, started with ${labelOf(opts, 'alt').slice(CASE_LABEL.alt.length + 1)}`,
        ]
      : []),
    `- result: ${ok ? 'OK (answers correct, no errors)' : 'FAILED'}`,
    '',
    table(rows(opts, results, rounds, limit), true, 2),
    '',
    'CPU % is of one core over the measured window. "server" is the idmint (or bare) process tree,',
    'primary included; "load gen" is autocannon, in the bench process (for the redis-benchmark row:',
    'redis-benchmark itself); "Redis CPU" and "Redis calls/s" are server-wide, so other clients of',
    'the same Redis count too; "other" is what every other process used (well above 0: a disturbed',
    'figure). Every ratio is the median over rounds of the ratio within a round. "× fewest processes"',
    'compares a case with itself at the smallest process count; "÷ INCR',
    'route" compares a case with the bare route doing one Redis INCR per request at the same',
    'process count (the floor of a request that needs a Redis round trip); "÷ shared INCRBY route"',
    'with the bare route where the requests of one event-loop turn share one INCRBY (the floor of a',
    'request that shares its round trip with the other requests of its process, as order global',
    'does); "÷ order global" compares the alt case with order global at the same process count;',
    '"Redis calls/s" counts script calls, INCR and INCRBY, less the paced no-op script below (the',
    'bench\'s own); "req per call" is how many requests one of them served (server-wide);',
    '"takes/s (nodes)" and "req per take (nodes)" come from the nodes\' own idmint_takes_total and',
    'idmint_ids_issued_total of the tag (exact, whatever else uses Redis). "Redis usec/take" is',
    'commandstats usec per EVALSHA during the case (the takes, and the few scripts of the refill',
    'queue); "no-op usec, paced" is commandstats usec per EVAL of `return 1` with the keys and',
    'arguments of a take, sent by the bench one at a time about once a millisecond during the case:',
    'it meets Redis as the takes do, woken for each call, and "take ÷ paced no-op" compares the',
    'two. "no-op usec, back to back" is the same script right after the case, 8 calls in flight',
    '(as in `npm run bench:take`): a Redis kept busy spends less on each call.',
    '',
    '## Other processes during each case',
    '',
    '| case | processes | runs (rounds and reruns) | other CPU % (median) | busiest other processes |',
    '| --- | ---: | ---: | ---: | --- |',
    ...results.map(
      (c) =>
        `| ${c.name} | ${c.processes} | ${c.attempts} | ${fmt(c.cpu.other)} | ${c.cpu.busiest.join(', ') || '-'} |`,
    ),
    ...(limit
      ? [`| redis-benchmark | - | 1 | ${fmt(limit.cpu.other)} | ${limit.cpu.busiest.join(', ') || '-'} |`]
      : []),
    '',
    ...results.map((c) => `- check ${c.name} x${c.processes}: ${c.checks}`),
    ...(limit
      ? [
          `- redis-benchmark (${limit.script}): \`redis-benchmark -n ${limit.calls} -c ${limit.clients} ${limit.command}\``,
        ]
      : []),
    ...(limit
      ? [
          `- check redis-benchmark: the segment key's \`taken\` counter advanced by ${fmt(limit.takenAdvance)} for ${fmt(limit.calls)} calls`,
        ]
      : []),
    ...problems.map((p) => `- FAIL: ${p}`),
    '',
  ].join('\n');
  writeFileSync(RESULTS + resultsFile(opts), md);
}
