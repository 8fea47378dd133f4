// The report of `npm run bench:udp`: the medians over rounds of each case, its ratios to the
// baselines (each the median of the per-round ratios), the table, the goals' verdicts and the
// markdown of bench/results/udp-latest.md.
import { cpus, loadavg } from 'node:os';
import { markdownTable } from '../../tools/table.js';
import { medianOrNaN as median } from '../stats.js';
import { CASE_NAMES } from './cases.js';
import { loadLimitVerdict } from './load-limit.js';
import type { UdpOptions } from './options.js';
import type { Measured } from './rounds.js';

/** A case's figures: each of Measured the median over rounds (fail their sum), and its ratios to the baselines. */
interface Row extends Measured {
  readonly name: string;
  readonly ratioTps: number;
  readonly ratioLatency: number;
  readonly incrTps: number;
  readonly incrLatency: number;
  readonly takeLatency: number;
  readonly scriptTps: number;
  readonly floorTps: number;
  readonly takeTps: number;
}

/**
 * Medians over rounds; each ratio is the median of the per-round ratios to that round's
 * baseline (echo, and echo + INCR).
 */
function summarize(measured: ReadonlyMap<string, Measured[]>): Row[] {
  const base = measured.get(CASE_NAMES.echo)!;
  const incr = measured.get(CASE_NAMES.incr)!;
  const script = measured.get(CASE_NAMES.script)!;
  const floor = measured.get(CASE_NAMES.floor)!;
  const take = measured.get(CASE_NAMES.take)!;
  return [...measured].map(([name, ms]) => ({
    name,
    tps: median(ms.map((m) => m.tps)),
    avgMs: median(ms.map((m) => m.avgMs)),
    fail: ms.reduce((s, m) => s + m.fail, 0),
    ratioTps: median(ms.map((m, i) => m.tps / base[i].tps)),
    ratioLatency: median(ms.map((m, i) => m.avgMs / base[i].avgMs)),
    incrTps: median(ms.map((m, i) => m.tps / incr[i].tps)),
    incrLatency: median(ms.map((m, i) => m.avgMs / incr[i].avgMs)),
    takeLatency: median(ms.map((m, i) => m.avgMs / take[i].avgMs)),
    scriptTps: median(ms.map((m, i) => m.tps / script[i].tps)),
    floorTps: median(ms.map((m, i) => m.tps / floor[i].tps)),
    takeTps: median(ms.map((m, i) => m.tps / take[i].tps)),
    serverUs: median(ms.map((m) => m.serverUs)),
    redisUs: median(ms.map((m) => m.redisUs)),
    scriptUs: median(ms.map((m) => m.scriptUs)),
    serverLowPct: median(ms.map((m) => m.serverLowPct)),
    demandLowPct: median(ms.map((m) => m.demandLowPct)),
    clientPct: median(ms.map((m) => m.clientPct)),
  }));
}

/** The table: a header, then a row per case (also the recorded run's rows). */
function tableOf(rows: readonly Row[]): string[][] {
  return [
    [
      'case',
      'TPS',
      'avg latency (ms)',
      'TPS ÷ echo',
      'latency ÷ echo',
      'TPS ÷ INCR',
      'latency ÷ INCR',
      'TPS ÷ no-op script',
      'TPS ÷ safe-take floor',
      'TPS ÷ take server',
      'latency ÷ take server',
      'server CPU µs/req',
      'Redis CPU µs/req',
      'Redis µs per script call',
      'server CPU % (least busy window)',
      'server running or runnable % (least busy window)',
      'clients CPU % (median window)',
      'failed',
    ],
    ...rows.map((r) => [
      r.name,
      Math.round(r.tps).toLocaleString('en-US'),
      r.avgMs.toFixed(3),
      r.ratioTps.toFixed(2),
      r.ratioLatency.toFixed(2),
      r.incrTps.toFixed(2),
      r.incrLatency.toFixed(2),
      r.scriptTps.toFixed(2),
      r.floorTps.toFixed(2),
      r.takeTps.toFixed(2),
      r.takeLatency.toFixed(2),
      r.serverUs.toFixed(1),
      r.redisUs.toFixed(1),
      Number.isNaN(r.scriptUs) ? '-' : r.scriptUs.toFixed(1),
      Number.isNaN(r.serverLowPct) ? '-' : r.serverLowPct.toFixed(0),
      Number.isNaN(r.demandLowPct) ? '-' : r.demandLowPct.toFixed(0),
      Number.isNaN(r.clientPct) ? '-' : r.clientPct.toFixed(0),
      String(r.fail),
    ]),
  ];
}

/** The goals' verdicts, the load generator's and the floors' lines; failed: the load generator was the limit. */
function verdictsOf(
  opts: UdpOptions,
  rows: readonly Row[],
  clientLimited: readonly string[],
  load: string,
): { verdicts: string[]; failed: boolean } {
  const row = (name: string) => rows.find((r) => r.name === name)!;
  const node = row(CASE_NAMES.node);
  const seg = row(CASE_NAMES.segment);
  const glob = row(CASE_NAMES.global);
  // One client: order global's latency against the floors; several: its throughput.
  const globalGoals: (readonly [string, boolean])[] =
    opts.clients === 1
      ? [
          ['order global avg latency ≤ 1.2 × echo + INCR', glob.incrLatency <= 1.2],
          ["order global avg latency ≤ 1.1 × echo + idmint's take", glob.takeLatency <= 1.1],
        ]
      : [
          ['order global TPS ≥ 0.8 × echo + INCR', glob.incrTps >= 0.8],
          ["order global TPS ≥ 0.95 × echo + idmint's take", glob.takeTps >= 0.95],
        ];
  const goals = [
    ['order node TPS ≥ 0.95 × echo', node.ratioTps >= 0.95] as const,
    ['order node avg latency ≤ 1.1 × echo', node.ratioLatency <= 1.1] as const,
    ['segment tag (order node) TPS ≥ 0.95 × echo', seg.ratioTps >= 0.95] as const,
    ['segment tag (order node) avg latency ≤ 1.1 × echo', seg.ratioLatency <= 1.1] as const,
    ...globalGoals,
  ];
  const verdicts = goals.map(([g, pass]) => `- ${g}: ${pass ? 'PASS' : 'MISS'}`);
  let failed = false;
  // Several clients must keep the echo server busy; one client (one request in flight) never can.
  if (opts.clients > 1) {
    verdicts.unshift(loadLimitVerdict(clientLimited));
    if (clientLimited.length > 0) failed = true;
  }
  verdicts.push(
    `- the floor of a round trip that runs a script: echo + one no-op EVALSHA at ${row(CASE_NAMES.script).incrTps.toFixed(2)} × echo + INCR; order global at ${glob.scriptTps.toFixed(2)} × that floor`,
    `- the floor of a request served by a take that checks its server (the identity read and one cursor move): ${row(CASE_NAMES.floor).incrTps.toFixed(2)} × echo + INCR; order global at ${glob.floorTps.toFixed(2)} × that floor`,
    `- idmint's take with nothing of idmint's process around it: echo + one EVALSHA of take-2.lua at ${row(CASE_NAMES.take).floorTps.toFixed(2)} × the safe-take floor server; order global at ${glob.takeTps.toFixed(2)} × that server`,
    `- load average before the run ${load}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  return { verdicts, failed };
}

/** The cases whose figures by round are listed under the table: the echo server and idmint's. */
const BY_ROUND = [CASE_NAMES.echo, CASE_NAMES.node, CASE_NAMES.global, CASE_NAMES.segment];

/** A line per case of BY_ROUND: its TPS and its server's CPU per request in each of `rounds`, `kind` naming them. */
function byRound(rounds: ReadonlyMap<string, Measured[]>, kind: string): string[] {
  return BY_ROUND.map((name) => {
    const ms = rounds.get(name) ?? [];
    const tps = ms.map((m) => Math.round(m.tps).toLocaleString('en-US')).join(', ');
    const us = ms.map((m) => m.serverUs.toFixed(1)).join(', ');
    return `- ${name} by ${kind}: TPS ${tps}; server CPU µs/req ${us}`;
  });
}

export interface UdpReport {
  /** The table's header and rows, as recorded. */
  readonly table: string[][];
  /** The table as markdown, a line per item. */
  readonly lines: string[];
  /** The verdicts, each a markdown list item. */
  readonly verdicts: string[];
  /** The whole of bench/results/<kind>-latest.md. */
  readonly md: string;
  /** The load generator was the limit: the run fails. */
  readonly failed: boolean;
}

/** How each client sends: one request at a time, or several outstanding, each on its own socket. */
function inFlightText(inFlight: number): string {
  return inFlight === 1
    ? 'each sent when the reply to the one before came'
    : `${inFlight} outstanding per client, each on a socket of its own, replies awaited in the order sent`;
}

/** Where the run's redis-server ran (--redis-cpu). */
function redisPlace(opts: UdpOptions): string {
  if (opts.redisCpu === 'any') return 'not pinned (the scheduler places it)';
  return opts.redisCpu === 1 ? 'pinned to CPU 1 with the servers' : 'pinned to CPU 0 with the client processes';
}

/** The report of a run: args its command line, load the load average before it. */
export function udpReport(
  opts: UdpOptions,
  args: readonly string[],
  measured: ReadonlyMap<string, Measured[]>,
  warmups: ReadonlyMap<string, Measured[]>,
  clientLimited: readonly string[],
  load: string,
): UdpReport {
  const rows = summarize(measured);
  const table = tableOf(rows);
  const lines = [markdownTable(table)];
  const { verdicts, failed } = verdictsOf(opts, rows, clientLimited, load);
  // Before the load average's line, the last.
  verdicts.splice(
    verdicts.length - 1,
    0,
    ...byRound(measured, 'measured round'),
    ...(opts.warmupRounds > 0 ? byRound(warmups, 'warm-up round, not in the medians') : []),
  );
  const workload =
    opts.workload === 'idserver'
      ? `id_server's client: a new UDP socket per request (socket, send, receive, close), action create, a salt, each client its own app name`
      : 'one socket per client for all its requests, action get, one app name for all clients';
  const md = [
    '# idmint UDP benchmark (latest run)',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${cpus().length} CPUs; load average before the run ${load}`,
    `- workload ${opts.workload}: ${workload}`,
    `- ${opts.clients} client processes x ${opts.requests} requests per case, ${inFlightText(opts.inFlight)}${opts.rounds > 1 ? `, ${opts.rounds} interleaved rounds (medians; ratios are medians of the per-round ratios)` : ''}; before them every app name asked each idmint case twice, unmeasured (its counter's first segment), then ${opts.warmupRounds} warm-up round(s) of every case, left out of the medians`,
    opts.pin
      ? '- pinned (taskset): the servers on CPU 1, the client processes on CPU 0'
      : '- not pinned: servers and clients share both CPUs',
    `- Redis: a redis-server of this run alone, ${redisPlace(opts)}`,
    `- command: npm run bench:udp${args.length ? ` -- ${args.join(' ')}` : ''}`,
    '',
    ...lines,
    '',
    ...verdicts,
    '',
  ].join('\n');
  return { table, lines, verdicts, md, failed };
}
