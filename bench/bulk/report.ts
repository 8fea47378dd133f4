// The report of bench:bulk-single (bench/single-beside-bulk.ts): the table of its cases (medians
// of the measured rounds; with how late the load generator itself woke for its requests, so a
// case whose latency grew on the generators' CPU shows it), the goals' verdicts, each round's
// p99 alone and beside bulk (the warm-up rounds' too, listed apart),
// bench/results/bulk-single-latest.md and the run's record.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { markdownTable } from '../../tools/table.js';
import type { startRun } from '../record.js';
import { medianOrNaN as median } from '../stats.js';
import type { GcPauses, LoopDelay } from './loop-delay.js';
import type { Consumer } from './options.js';

const RESULTS = fileURLToPath(new URL('../results/', import.meta.url));
const P99_GOAL = 1.5;
const BULK_GOAL = 3e6;

export interface Latency {
  readonly sent: number;
  readonly ok: number;
  readonly fail: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /**
   * How late the generator woke for a request past its due time, p99 (ms): its own CPU's
   * scheduling, which the latency counts too.
   */
  readonly wakeP99: number;
}

export const TRANSPORTS = ['HTTP', 'UDP'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export type CaseName = 'floor' | 'alone' | 'beside bulk' | 'floor beside bulk';
export const isFloor = (name: CaseName): boolean => name === 'floor' || name === 'floor beside bulk';
export interface Measured {
  readonly latency: Record<Transport, Latency>;
  /** Bulk IDs per second over the generators' window (NaN without a bulk consumer). */
  readonly bulkRate: number;
  /** The serving process's CPU over the case, % of one core. */
  readonly serverPct: number;
  /** Time the hypervisor took from the servers' CPU over the case, % of the wall time. */
  readonly stealPct: number;
  /** How long the server's serving thread was ready to run and waited for its CPU, ms per second (tools/threads.ts). */
  readonly servingWaitMs: number;
  /** The CPU of the server's other threads (V8's compiler and GC helpers, libuv's pool), % of one core. */
  readonly othersPct: number;
  /** idmint's event loop delay over the case (NaN for the floor, or several serving processes). */
  readonly loop: LoopDelay;
  /** idmint's garbage collection pauses over the case (NaN as the loop's delay). */
  readonly gc: GcPauses;
}

/** What each bulk consumer takes, as the record says it. */
const CONSUMER_SAID: Record<Consumer, string> = {
  ws: 'one websocket, binary takes',
  grpc: 'one gRPC channel, Take calls answered as runs of consecutive IDs (TakeBlock.ranges)',
  'grpc-ids': 'one gRPC channel, Take calls answered as a decimal string per ID (TakeBlock.ids)',
};

/** How the run was made, as its command line set it. */
export interface Setup {
  readonly rate: number;
  readonly connections: number;
  readonly seconds: number;
  readonly rounds: number;
  /** Rounds run first and left out of the medians. */
  readonly warmupRounds: number;
  readonly take: number;
  readonly block: number;
  readonly processes: number;
  /** The bulk consumer served by a process of its own (--bulk-apart). */
  readonly apart: boolean;
  /** Node flags idmint was started with beyond the ones it serves with (--node-flag). */
  readonly nodeFlags: readonly string[];
  /** BULK_SHARE_PERCENT idmint ran with: of each 5 ms window, what bulk takes may use beside single requests. */
  readonly bulkShare: number;
  /** The bulk consumer (--consumer). */
  readonly consumer: Consumer;
  readonly pin: boolean;
  /** Every CPU kept awake by a SCHED_IDLE spinner over the rounds (bench/keep-awake.ts). */
  readonly awake: boolean;
  /** Where the stores idmint uses were placed for the run (--pin; bench/bulk/place-stores.ts). */
  readonly stores: readonly string[];
  readonly write: boolean;
  /** The seconds at the start of each case that are not counted. */
  readonly warmupS: number;
  /** The benchmark's name in bench/results. */
  readonly bench: string;
  readonly args: readonly string[];
}

export interface Outcome {
  /** Each case's measured rounds, in order. */
  readonly measured: Map<CaseName, Measured[]>;
  /** Each case's warm-up rounds, in order (listed, not in the medians). */
  readonly warmups: Map<CaseName, Measured[]>;
  /** The bulk consumer alone, IDs a second, by measured round. */
  readonly bulkAlone: number[];
  /** The load average before the run. */
  readonly load: string;
  readonly ok: boolean;
}

/** p99 of idmint alone and beside bulk, by round (ms), of `rounds`, with each round's steal and GC pauses. */
function p99ByRound(rounds: Map<CaseName, Measured[]>, kind: string): string[] {
  return (['alone', 'beside bulk'] as const).map((name) => {
    const list = rounds.get(name) ?? [];
    return `- p99 of idmint ${name} by ${kind} (ms): ${TRANSPORTS.map(
      (tr) => `${tr} ${list.map((m) => m.latency[tr].p99.toFixed(2)).join(', ')}`,
    ).join(
      '; ',
    )}; steal on the servers' CPU (%) ${list.map((m) => m.stealPct.toFixed(1)).join(', ')}; GC paused the loop (ms/s) ${list.map((m) => m.gc.msPerS.toFixed(1)).join(', ')}`;
  });
}

export function report(opts: Setup, outcome: Outcome, recorder: ReturnType<typeof startRun>): void {
  const { measured, warmups, bulkAlone, load, ok } = outcome;
  const alone = measured.get('alone')!;
  const ms = (v: number) => v.toFixed(2);
  const rows: string[][] = [];
  const ratio = new Map<string, number>();
  for (const [name, list] of measured) {
    for (const tr of TRANSPORTS) {
      const l = (pick: (x: Latency) => number) => median(list.map((m) => pick(m.latency[tr])));
      const r = median(list.map((m, i) => m.latency[tr].p99 / alone[i].latency[tr].p99));
      ratio.set(`${name}/${tr}`, r);
      rows.push([
        `${isFloor(name) ? `${name}: ${tr === 'HTTP' ? 'bare Fastify route' : 'bare dgram echo'}` : `idmint ${name}`}, ${tr}`,
        ms(l((x) => x.p50)),
        ms(l((x) => x.p90)),
        ms(l((x) => x.p99)),
        ms(l((x) => x.p999)),
        ms(l((x) => x.max)),
        r.toFixed(2),
        name.endsWith('beside bulk') ? (median(list.map((m) => m.bulkRate)) / 1e6).toFixed(2) : '-',
        median(list.map((m) => m.serverPct)).toFixed(0),
        median(list.map((m) => m.stealPct)).toFixed(1),
        median(list.map((m) => m.servingWaitMs)).toFixed(1),
        median(list.map((m) => m.othersPct)).toFixed(1),
        ms(l((x) => x.wakeP99)),
        isFloor(name) ? '-' : ms(median(list.map((m) => m.loop.p99))),
        isFloor(name) ? '-' : ms(median(list.map((m) => m.loop.max))),
        isFloor(name) ? '-' : median(list.map((m) => m.gc.perS)).toFixed(1),
        isFloor(name) ? '-' : median(list.map((m) => m.gc.msPerS)).toFixed(1),
        String(list.reduce((s, m) => s + m.latency[tr].ok, 0)),
        String(list.reduce((s, m) => s + m.latency[tr].fail, 0)),
      ]);
    }
  }
  const dashes = (count: number): string[] => Array<string>(count).fill('-');
  rows.push(['bulk consumer alone', ...dashes(6), (median(bulkAlone) / 1e6).toFixed(2), ...dashes(11)]);
  const table = [
    [
      'case',
      'p50 (ms)',
      'p90 (ms)',
      'p99 (ms)',
      'p99.9 (ms)',
      'max (ms)',
      'p99 ÷ idmint alone',
      'bulk (M IDs/s)',
      'server CPU %',
      "steal on the servers' CPU %",
      'serving thread waited for the CPU (ms/s)',
      "server's other threads CPU %",
      'generator woke late p99 (ms)',
      'event loop delay p99 (ms)',
      'event loop delay max (ms)',
      'GC pauses (/s)',
      'GC paused the loop (ms/s)',
      'ok',
      'failed',
    ],
    ...rows,
  ];
  const bulkBeside = median(measured.get('beside bulk')!.map((m) => m.bulkRate));
  const verdicts = [
    ...TRANSPORTS.map((tr) => {
      const r = ratio.get(`beside bulk/${tr}`)!;
      return `- ${tr} p99 beside the bulk consumer ≤ ${P99_GOAL} × p99 alone: ${r.toFixed(2)}, ${r <= P99_GOAL ? 'PASS' : 'MISS'}`;
    }),
    `- the bulk consumer beside the single-ID requests ≥ ${BULK_GOAL / 1e6}M IDs/s: ${(bulkBeside / 1e6).toFixed(2)}M, ${bulkBeside >= BULK_GOAL ? 'PASS' : 'MISS'}`,
    `- the floor beside a bare bulk stream at idmint's bulk rate, its p99 ÷ the floor's own p99 (what such a stream costs single requests on this machine, whatever serves them): ${TRANSPORTS.map(
      (tr) => {
        const [beside, alone] = [measured.get('floor beside bulk')!, measured.get('floor')!];
        return `${tr} ${median(beside.map((m, i) => m.latency[tr].p99 / alone[i].latency[tr].p99)).toFixed(2)}`;
      },
    ).join(', ')}`,
    `- idmint's bulk share: bulk takes may use ${opts.bulkShare}% of each 5 ms window while single requests are served (BULK_SHARE_PERCENT)`,
    ...p99ByRound(measured, 'measured round'),
    ...(opts.warmupRounds > 0 ? p99ByRound(warmups, 'warm-up round, not in the medians') : []),
    `- load average before the run ${load}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  ];
  const lines = markdownTable(table);
  console.log(`\n${lines}\n\n${verdicts.join('\n')}`);
  if (opts.write) {
    const md = [
      '# Single IDs beside a bulk stream (latest run)',
      '',
      `- date: ${new Date().toISOString()}; node ${process.version}; ${cpus().length} CPUs; load average before the run ${load}`,
      `- ${opts.rate} single-ID requests a second over HTTP (${opts.connections} keep-alive connections) and as many over UDP (${opts.connections} sockets), at once, fixed-rate and open-loop (latency from when each request fell due); ${opts.seconds} s per case, the first ${opts.warmupS} s not counted; ${opts.rounds} interleaved rounds, medians, after ${opts.warmupRounds} warm-up round(s) of every case left out of them`,
      `- bulk consumer: ${CONSUMER_SAID[opts.consumer]} of ${opts.take.toLocaleString('en-US')} IDs in blocks of ${opts.block.toLocaleString('en-US')}, one after another`,
      opts.apart
        ? "- idmint as two processes of the same stores: one serves the single requests, the other the bulk consumer (and the floor's bare stream runs apart from the floor's servers too)"
        : opts.processes > 1
          ? `- idmint as \`serve --processes ${opts.processes}\`: ${opts.processes} serving processes sharing the ports`
          : '- idmint as one serving process',
      ...(opts.nodeFlags.length > 0
        ? [
            `- idmint started with the node flags ${opts.nodeFlags.join(' ')} (a flag it serves with, given another way, replaced)`,
          ]
        : []),
      !opts.pin
        ? '- not pinned'
        : opts.apart
          ? "- pinned (taskset): the single requests' servers on CPU 1; the bulk stream's servers, the generators (at real-time priority, chrt -f 1), the bulk consumer and the bench on CPU 0"
          : '- pinned (taskset): the servers on CPU 1; the generators (at real-time priority, chrt -f 1), the bulk consumer and the bench on CPU 0',
      ...(opts.stores.length > 0
        ? [
            `- the stores idmint uses, placed with the clients for the run and given back their CPUs at its end: ${opts.stores.join('; ')}`,
          ]
        : []),
      opts.awake
        ? '- every CPU kept awake over the rounds by a spinner at the lowest priority (SCHED_IDLE, `chrt -i 0`), which gives way to any other process at once: no case pays the wait of a halted CPU woken by the host (bench/keep-awake.ts); the load average after the run counts the spinners'
        : '- no spinners (--let-idle): an idle CPU halts and is woken by the host, which the cases with little work on a CPU pay more often than those with much',
      `- command: npm run bench:bulk-single${opts.args.length ? ` -- ${opts.args.join(' ')}` : ''}`,
      '',
      lines,
      '',
      ...verdicts,
      '',
    ].join('\n');
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}${opts.bench}-latest.md`, md);
    recorder.finish({
      rows: table,
      ratio: { column: 'p99 ÷ idmint alone', baseline: 'idmint alone, HTTP' },
      notes: verdicts.map((v) => v.slice(2)),
    });
  }
  if (!ok) process.exitCode = 1;
}
