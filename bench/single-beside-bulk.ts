// Single IDs beside a bulk stream, run by `npm run bench:bulk-single`: the design's two kinds
// of users share a process. Single-ID requests come at a fixed rate over HTTP (GET /v1/id/:tag,
// keep-alive connections) and over UDP (id_server's protocol), both at once, from a C generator
// that schedules as wrk2 does (bench/fixed-rate/fixed-rate.c: each request's latency counts
// from when it fell due, so a stall shows in every request it delayed: no coordinated
// omission). In one run, interleaved rounds, medians:
//   floor         the same generators against a bare Fastify route (bench/bare-server.ts) and
//                 a bare dgram echo server (bench/udp/servers.ts): the least the latency can be
//   alone         against idmint, a segment tag with order node, nothing else running
//   beside bulk   the same while one websocket client (bench/bulk/consumer.ts) takes binary
//                 blocks of another tag as fast as it can; its IDs per second are measured
//                 over the generators' window
//   floor beside bulk  the floor while the bulk consumer takes from a bare stream (bench/bulk/
//                 bare-stream.ts, a process of its own on the servers' core) at the rate it had
//                 from idmint in the round: what the stream's bytes cost the single requests
//                 through the kernel and the cores, with nothing of idmint's process
//   bulk alone    the bulk consumer with no single-ID requests
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (HTTP 200; UDP code 0 and the
// seq echoed), and the bulk consumer checks that each frame's IDs are above the last's; a
// failed request or check fails the run.
// For idmint's cases, its event loop's delay over the case (p99 and max, bench/bulk/loop-delay.ts):
// the part of a request's latency spent waiting for the loop; the rest is the kernel's and the
// generators'.
// Goals: p99 beside bulk ≤ 1.5 × p99 alone (HTTP and UDP); the bulk consumer ≥ 3M IDs/s beside them.
// Each round's p99 alone and beside bulk is listed under the table, so the spread of the
// baseline the ratios divide by is in the record.
// Flags: --rate N (requests per second per transport, default 2000)  --seconds N (per case,
//        default 10)  --connections N (per transport, default 8)  --rounds N (default 3)
//        --take N (IDs per bulk take, default 10M)  --block N (IDs per frame, default 50000)
//        --pin (the servers on CPU 1; generators, bulk consumer and this process on CPU 0, the
//        generators at real-time priority so the consumer beside them does not delay their sends)
//        --processes N (idmint as `serve --processes N`: N serving processes sharing the ports,
//        recorded apart as bulk-single-p<N>)  --no-write
// Results: bench/results/bulk-single-latest.md (bulk-single-p<N>-latest.md with --processes N)
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { freePort, startTsx, type Child } from '../tools/child.js';
import { startBare, startBareStream, startEcho } from './bulk/floor-servers.js';
import { pinProcess, procCpuSeconds, processTree, readProcs } from '../tools/cpu.js';
import { cleanup, testEnv, testNames } from '../tools/env.js';
import { createTag } from '../tools/node.js';
import { markdownTable } from '../tools/table.js';
import { BulkConsumer } from './bulk/consumer.js';
import { loopDelay, type LoopDelay } from './bulk/loop-delay.js';
import { buildC } from './c-build.js';
import { readBenchOptions } from './common-options.js';
import { startRun } from './record.js';
import { BENCH_SETTINGS } from './server.js';
import { medianOrNaN as median } from './stats.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);
const opts = {
  rate: 2000,
  seconds: 10,
  connections: 8,
  rounds: 3,
  take: 10_000_000,
  block: 50_000,
  pin: false,
  write: true,
  processes: 1,
};
/** Requests due in the first second of a case are sent but not counted (connections warm up). */
const WARMUP_S = 1;
const P99_GOAL = 1.5;
const BULK_GOAL = 3e6;

function parseArgs(): void {
  readBenchOptions(
    args,
    'npm run bench:bulk-single -- [--rate N] [--seconds N] [--connections N] [--rounds N] [--take N] [--block N] [--pin] [--processes N] [--no-write]',
    { seconds: [WARMUP_S + 1, 600], connections: [1, 256], rounds: [1], pin: true, write: true },
    opts,
    (a) => {
      switch (a.flag) {
        case '--rate':
          opts.rate = a.whole(1, 100_000);
          break;
        case '--take':
          opts.take = a.whole(1);
          break;
        case '--block':
          opts.block = a.whole(1);
          break;
        case '--processes':
          opts.processes = a.whole(1, 16);
          break;
        default:
          return false;
      }
      return true;
    },
  );
}

interface Latency {
  readonly sent: number;
  readonly ok: number;
  readonly fail: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** One fixed-rate generator to its end. */
function generate(binary: string, transport: 'http' | 'udp', port: number, target: string): Promise<Latency> {
  const argv = [
    binary,
    transport,
    String(port),
    target,
    String(opts.rate),
    String(opts.seconds),
    String(opts.connections),
    String(WARMUP_S),
  ];
  // Pinned, the generators share CPU 0 with the bulk consumer, which keeps it busy: at real-time
  // priority (chrt -f 1; they sleep in epoll_wait between requests) they send each request when
  // it falls due instead of when the scheduler next gives them the CPU, so their latencies are
  // the servers' and not the consumer's.
  const [cmd, ...rest] = opts.pin ? ['chrt', '-f', '1', 'taskset', '-c', '0', ...argv] : argv;
  const proc = spawn(cmd, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) =>
    proc.once('close', (code) => {
      const f = out.trim().split(' ');
      if (code !== 0 || f[0] !== '#' || f.length !== 9)
        return reject(new Error(`fixed-rate ${transport} ended with ${code}: ${out}`));
      const [sent, ok, fail, p50, p90, p99, p999, max] = f.slice(1).map(Number);
      resolve({ sent, ok, fail, p50, p90, p99, p999, max });
    }),
  );
}

const TRANSPORTS = ['HTTP', 'UDP'] as const;
type Transport = (typeof TRANSPORTS)[number];
type CaseName = 'floor' | 'alone' | 'beside bulk' | 'floor beside bulk';
const isFloor = (name: CaseName): boolean => name === 'floor' || name === 'floor beside bulk';
interface Measured {
  readonly latency: Record<Transport, Latency>;
  /** Bulk IDs per second over the generators' window (NaN without a bulk consumer). */
  readonly bulkRate: number;
  /** The serving process's CPU over the case, % of one core. */
  readonly serverPct: number;
  /** idmint's event loop delay over the case (NaN for the floor, or several serving processes). */
  readonly loop: LoopDelay;
}

/** The benchmark's name in bench/results: one serving process, or N. */
const benchName = (): string => (opts.processes > 1 ? `bulk-single-p${opts.processes}` : 'bulk-single');

/** idmint, as one serving process or `serve --processes N` (ready once every process is). */
async function startIdmint(env: Record<string, string | undefined>): Promise<Child> {
  const one = opts.processes === 1;
  const settled = { ...env, ...BENCH_SETTINGS };
  const idmint = one
    ? startTsx(['src/cli.ts', 'serve'], { name: 'idmint', env: settled, inherit: true })
    : startTsx(['src/cli.ts', 'serve', '--processes', String(opts.processes)], {
        name: 'idmint',
        env: { ...settled, LOG_LEVEL: 'info' },
      });
  try {
    if (one) await idmint.waitUntil(async () => (await fetch(`http://127.0.0.1:${env.PORT}/healthz`)).ok, 120_000, 200);
    else await idmint.waitForLine((l) => l.includes('"msg":"all serving processes ready"'), 60000);
  } catch (err) {
    await idmint.stop(10000);
    throw err;
  }
  return idmint;
}

/** A server's CPU seconds: every process of it (the serving processes of `--processes N` too). */
const treeCpuSeconds = (pid: number): number =>
  [...processTree(readProcs(), pid)].reduce((s, p) => s + procCpuSeconds(p), 0);

async function main(): Promise<void> {
  parseArgs();
  const recorder = startRun(benchName());
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(
    `single IDs beside bulk: ${opts.rate}/s per transport, ${opts.seconds} s per case, ${opts.rounds} round(s); load average ${load}`,
  );
  const binary = buildC('bench/fixed-rate/fixed-rate.c');
  const names = testNames();
  const [httpPort, udpPort, barePort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    ...process.env,
    ...testEnv(names, { PORT: String(httpPort), UDP_PORT: String(udpPort), LOG_LEVEL: 'warn' }),
  };
  const idmint = await startIdmint(env);
  const bare = startBare(barePort);
  const echo = startEcho();
  let ok = true;
  const measured = new Map<CaseName, Measured[]>();
  const bulkAlone: number[] = [];
  try {
    await bare.waitForLine((l) => l.startsWith('listening'), 120_000);
    const echoPort = await echo.port;
    if (opts.pin) for (const pid of [...processTree(readProcs(), idmint.pid), bare.pid, echo.pid]) pinProcess(pid, 1);
    const url = `http://127.0.0.1:${httpPort}`;
    await createTag(url, { tag: 'single', order: 'node' });
    await createTag(url, {
      tag: 'bulk',
      order: 'node',
      step: 50_000_000,
      min_step: 1_000_000,
      max_step: 100_000_000,
      target_seconds: 60,
    });
    const targets: Record<CaseName, { http: [number, string]; udp: [number, string]; pid: number }> = {
      floor: { http: [barePort, '/v1/id/single'], udp: [echoPort, 'single'], pid: bare.pid },
      alone: { http: [httpPort, '/v1/id/single'], udp: [udpPort, 'single'], pid: idmint.pid },
      'beside bulk': { http: [httpPort, '/v1/id/single'], udp: [udpPort, 'single'], pid: idmint.pid },
      'floor beside bulk': { http: [barePort, '/v1/id/single'], udp: [echoPort, 'single'], pid: bare.pid },
    };
    const stream = `ws://127.0.0.1:${httpPort}/v1/stream`;
    for (let round = 1; round <= opts.rounds; round++) {
      for (const name of Object.keys(targets) as CaseName[]) {
        const t = targets[name];
        // Beside the floor, a bare stream at the rate idmint's bulk consumer had in this round.
        const bareStream =
          name === 'floor beside bulk'
            ? await startBareStream(measured.get('beside bulk')!.at(-1)!.bulkRate)
            : undefined;
        if (bareStream && opts.pin) pinProcess(bareStream.child.pid, 1);
        const bulkUrl = name === 'beside bulk' ? stream : bareStream?.url;
        const bulk = bulkUrl === undefined ? undefined : await BulkConsumer.open(bulkUrl);
        await bulk?.start('bulk', opts.take, opts.block);
        const delayOf = !isFloor(name) && opts.processes === 1 ? () => loopDelay(url) : undefined;
        await delayOf?.();
        const [cpu0, ids0, at0] = [treeCpuSeconds(t.pid), bulk?.ids ?? 0, performance.now()];
        const [http, udp] = await Promise.all([generate(binary, 'http', ...t.http), generate(binary, 'udp', ...t.udp)]);
        const loop = (await delayOf?.()) ?? { p99: NaN, max: NaN };
        const wall = (performance.now() - at0) / 1000;
        const bulkRate = bulk ? (bulk.ids - ids0) / wall : NaN;
        const serverPct = ((treeCpuSeconds(t.pid) - cpu0) / wall) * 100;
        await bulk?.stop();
        await bareStream?.child.stop(5000);
        if (http.fail + udp.fail + (bulk?.failures ?? 0) > 0) {
          ok = false;
          console.log(
            `  FAILED: ${http.fail} HTTP and ${udp.fail} UDP requests failed, ${bulk?.failures ?? 0} bulk frames out of order or refused`,
          );
        }
        const m: Measured = { latency: { HTTP: http, UDP: udp }, bulkRate, serverPct, loop };
        console.log(
          `${name} (round ${round}): p99 HTTP ${http.p99} ms, UDP ${udp.p99} ms${bulk ? `; bulk ${(bulkRate / 1e6).toFixed(2)}M IDs/s` : ''}; server ${serverPct.toFixed(0)}% CPU; event loop delay p99 ${loop.p99.toFixed(2)} ms, max ${loop.max.toFixed(2)} ms`,
        );
        measured.set(name, [...(measured.get(name) ?? []), m]);
      }
      // The bulk consumer alone, as long as a case.
      const bulk = await BulkConsumer.open(stream);
      await bulk.start('bulk', opts.take, opts.block);
      const [ids0, at0] = [bulk.ids, performance.now()];
      await new Promise((r) => setTimeout(r, opts.seconds * 1000));
      bulkAlone.push((bulk.ids - ids0) / ((performance.now() - at0) / 1000));
      await bulk.stop();
      if (bulk.failures > 0) ok = false;
      console.log(`bulk alone (round ${round}): ${(bulkAlone[bulkAlone.length - 1] / 1e6).toFixed(2)}M IDs/s`);
    }
  } finally {
    echo.stop();
    await Promise.all([idmint.stop(), bare.stop()]);
    await cleanup(names);
  }
  report(measured, bulkAlone, load, ok, recorder);
}

function report(
  measured: Map<CaseName, Measured[]>,
  bulkAlone: number[],
  load: string,
  ok: boolean,
  recorder: ReturnType<typeof startRun>,
): void {
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
        isFloor(name) ? '-' : ms(median(list.map((m) => m.loop.p99))),
        isFloor(name) ? '-' : ms(median(list.map((m) => m.loop.max))),
        String(list.reduce((s, m) => s + m.latency[tr].ok, 0)),
        String(list.reduce((s, m) => s + m.latency[tr].fail, 0)),
      ]);
    }
  }
  const dashes = (count: number): string[] => Array<string>(count).fill('-');
  rows.push(['bulk consumer alone', ...dashes(6), (median(bulkAlone) / 1e6).toFixed(2), ...dashes(5)]);
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
      'event loop delay p99 (ms)',
      'event loop delay max (ms)',
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
    ...(['alone', 'beside bulk'] as const).map(
      (name) =>
        `- p99 of idmint ${name} by round (ms): ${TRANSPORTS.map(
          (tr) =>
            `${tr} ${measured
              .get(name)!
              .map((m) => ms(m.latency[tr].p99))
              .join(', ')}`,
        ).join('; ')}`,
    ),
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
      `- ${opts.rate} single-ID requests a second over HTTP (${opts.connections} keep-alive connections) and as many over UDP (${opts.connections} sockets), at once, fixed-rate and open-loop (latency from when each request fell due); ${opts.seconds} s per case, the first ${WARMUP_S} s not counted; ${opts.rounds} interleaved rounds, medians`,
      `- bulk consumer: one websocket, binary takes of ${opts.take.toLocaleString('en-US')} IDs in blocks of ${opts.block.toLocaleString('en-US')}, one after another`,
      opts.processes > 1
        ? `- idmint as \`serve --processes ${opts.processes}\`: ${opts.processes} serving processes sharing the ports`
        : '- idmint as one serving process',
      opts.pin
        ? '- pinned (taskset): the servers on CPU 1; the generators (at real-time priority, chrt -f 1), the bulk consumer and the bench on CPU 0'
        : '- not pinned',
      `- command: npm run bench:bulk-single${args.length ? ` -- ${args.join(' ')}` : ''}`,
      '',
      lines,
      '',
      ...verdicts,
      '',
    ].join('\n');
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}${benchName()}-latest.md`, md);
    recorder.finish({
      rows: table,
      ratio: { column: 'p99 ÷ idmint alone', baseline: 'idmint alone, HTTP' },
      notes: verdicts.map((v) => v.slice(2)),
    });
  }
  if (!ok) process.exitCode = 1;
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
