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
//                 blocks of another tag as fast as it can, or with --consumer grpc one gRPC
//                 client (bench/bulk/grpc-consumer.ts) takes them with Take as runs of
//                 consecutive IDs (--consumer grpc-ids: a decimal string per ID); its IDs per
//                 second are measured over the generators' window
//   floor beside bulk  the floor while the bulk consumer takes from a bare stream of its
//                 transport (bench/bulk/bare-stream.ts or bare-grpc-stream.ts, a process of its
//                 own on the servers' core) at the rate it had from idmint in the round: what the
//                 stream's bytes cost the single requests through the kernel and the cores, with
//                 nothing of idmint's process
//   bulk alone    the bulk consumer with no single-ID requests
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (HTTP 200; UDP code 0 and the
// seq echoed), and the bulk consumer checks that each frame's IDs are above the last's; a
// failed request or check fails the run.
// For every case, how late the generators woke for their requests past the time each fell due
// (p99): their own CPU's scheduling, which a request's latency counts too; when it stays a small
// part of the p99 in a case, the latency measured there is the server's and not the generator's.
// For idmint's cases, its event loop's delay over the case (p99 and max, bench/bulk/loop-delay.ts):
// the part of a request's latency spent waiting for the loop; the rest is the kernel's and the
// generators'. And its garbage collection pauses over the case (how many a second, and how long
// they held the loop, ms a second): a request that comes during one waits for its end.
// Goals: p99 beside bulk ≤ 1.5 × p99 alone (HTTP and UDP); the bulk consumer ≥ 3M IDs/s beside them.
// Each round's p99 alone and beside bulk is listed under the table, so the spread of the
// baseline the ratios divide by is in the record.
// Flags: --rate N (requests per second per transport, default 2000)  --seconds N (per case,
//        default 10)  --connections N (per transport, default 8)  --rounds N (default 3)
//        --warmup-rounds N (rounds of every case run first, printed and left out of the medians: default 2)
//        --take N (IDs per bulk take, default 10M)  --block N (IDs per frame, default 50000)
//        --pin (the servers on CPU 1; generators, bulk consumer and this process on CPU 0, the
//        generators at real-time priority so the consumer beside them does not delay their sends;
//        the Redis and MySQL servers idmint uses, when local, on CPU 0 for the run: bench/bulk/
//        place-stores.ts)
//        --processes N (idmint as `serve --processes N`: N serving processes sharing the ports,
//        recorded apart as bulk-single-p<N>)
//        --bulk-apart (the bulk consumer takes from a second idmint process of the same stores,
//        and the floor's bare stream runs apart too; pinned, both on CPU 0 beside the consumer,
//        the single requests' servers alone on CPU 1: the two kinds of users on cores of their
//        own, recorded as bulk-single-apart)  --let-idle (no spinners: see below)
//        --node-flag=FLAG (idmint started with this node flag too, repeatable; a flag it serves
//        with given another way, e.g. --node-flag=--no-single-threaded-gc, replaces it: recorded
//        as bulk-single-node-flags)  --bulk-share N (idmint started with BULK_SHARE_PERCENT=N, 1 to
//        100: what bulk takes may spend of each 5 ms window beside single requests, which trades
//        the single requests' p99 for the bulk consumer's rate; recorded as bulk-single-share<N>
//        when not the default, as a share given by BULK_SHARE_PERCENT is: runs at several shares
//        sit beside the default's)  --consumer ws|grpc|grpc-ids (the bulk consumer, ws by
//        default; a gRPC one is recorded with its name after the bench's, bulk-single-grpc)  --no-write
// Every CPU is kept awake over the rounds by a spinner at SCHED_IDLE (bench/keep-awake.ts): on a
// virtual machine whose idle CPUs halt, a request reaching an idle CPU waits milliseconds for the
// host, which a case that keeps the CPU busy (beside bulk) never pays; the spinners take that
// wait out of every case, so the ratio compares the servers and not how idle the CPU was.
// Results: bench/results/bulk-single-latest.md (bulk-single-p<N>-latest.md with --processes N,
// bulk-single-apart-latest.md with --bulk-apart, bulk-single-share<N>-latest.md with --bulk-share N,
// bulk-single-grpc-latest.md with --consumer grpc, bulk-single-grpc-ids-latest.md with grpc-ids)
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { freePort, startTsx, type Child } from '../tools/child.js';
import { startBare, startBareStream, startEcho } from './bulk/floor-servers.js';
import { pinProcess, procCpuSeconds, processTree, readProcs, stealSeconds } from '../tools/cpu.js';
import { cleanup, testEnv, testNames } from '../tools/env.js';
import { servingThreads, threadTimes, type ThreadTimes } from '../tools/threads.js';
import { createTag } from '../tools/node.js';
import { BulkConsumer, type BulkTaker } from './bulk/consumer.js';
import { GrpcBulkConsumer } from './bulk/grpc-consumer.js';
import { pausesBetween, scrapeLoop } from './bulk/loop-delay.js';
import { keepCpusAwake, type Spinners } from './keep-awake.js';
import { placeStores, type PlacedStores } from './bulk/place-stores.js';
import { isFloor, report, type CaseName, type Latency, type Measured } from './bulk/report.js';
import { buildC } from './c-build.js';
import { readBulkSingleOptions, transportOf, WARMUP_S } from './bulk/options.js';
import { startRun } from './record.js';
import { BENCH_SETTINGS } from './server.js';

const args = process.argv.slice(2);
const opts = readBulkSingleOptions(args);
const transport = transportOf(opts.consumer);

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
      if (code !== 0 || f[0] !== '#' || f.length !== 10)
        return reject(new Error(`fixed-rate ${transport} ended with ${code}: ${out}`));
      const [sent, ok, fail, p50, p90, p99, p999, max, wakeP99] = f.slice(1).map(Number);
      resolve({ sent, ok, fail, p50, p90, p99, p999, max, wakeP99 });
    }),
  );
}

/** The CPU the bulk stream's server is pinned to: the servers' core, or the clients' when apart. */
const bulkCpu = (): number => (opts.apart ? 0 : 1);

/** idmint, as one serving process or `serve --processes N` (ready once every process is). */
async function startIdmint(env: Record<string, string | undefined>): Promise<Child> {
  const one = opts.processes === 1;
  const settled = { ...env, ...BENCH_SETTINGS, BULK_SHARE_PERCENT: String(opts.bulkShare) };
  const idmint = one
    ? startTsx(['src/cli.ts', 'serve'], { name: 'idmint', env: settled, inherit: true, nodeFlags: opts.nodeFlags })
    : startTsx(['src/cli.ts', 'serve', '--processes', String(opts.processes)], {
        name: 'idmint',
        nodeFlags: opts.nodeFlags,
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

/** A bulk consumer of the run's transport, of the stream at `address` (a ws:// URL, or 127.0.0.1:port for gRPC). */
const openConsumer = (address: string): Promise<BulkTaker> =>
  transport === 'ws'
    ? BulkConsumer.open(address)
    : GrpcBulkConsumer.open(address, opts.consumer === 'grpc' ? 'ranges' : 'ids');

/** Steal on the servers' CPU (pinned), or on all CPUs as % of one (not pinned). */
const serversSteal = (): number => stealSeconds(opts.pin ? 1 : undefined);

/**
 * A server read once (every process of it, the serving processes of `--processes N` too): its CPU
 * seconds, and its processes' threads (pid → tid → times) for servingThreads().
 */
function readServer(pid: number): { cpuS: number; threads: Map<number, Map<number, ThreadTimes>> } {
  const tree = [...processTree(readProcs(), pid)];
  return {
    cpuS: tree.reduce((s, p) => s + procCpuSeconds(p), 0),
    threads: new Map(tree.map((p) => [p, threadTimes(p)])),
  };
}

async function main(): Promise<void> {
  const recorder = startRun(opts.bench);
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
  const [httpPort, udpPort, grpcPort, barePort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const env = {
    ...process.env,
    ...testEnv(names, {
      PORT: String(httpPort),
      UDP_PORT: String(udpPort),
      GRPC_PORT: String(transport === 'ws' ? 0 : grpcPort),
      LOG_LEVEL: 'warn',
    }),
  };
  const idmint = await startIdmint(env);
  // Apart: a second process of the same stores serves the bulk consumer.
  const [bulkPort, bulkGrpcPort] = opts.apart ? [await freePort(), await freePort()] : [httpPort, grpcPort];
  const bulkIdmint = opts.apart
    ? await startIdmint({
        ...env,
        PORT: String(bulkPort),
        UDP_PORT: String(await freePort()),
        GRPC_PORT: String(transport === 'ws' ? 0 : bulkGrpcPort),
      }).catch(async (err) => {
        await idmint.stop();
        throw err;
      })
    : undefined;
  const bare = startBare(barePort);
  const echo = startEcho();
  let ok = true;
  let spinners: Spinners | undefined;
  let stores: PlacedStores | undefined;
  const [measured, warmups] = [new Map<CaseName, Measured[]>(), new Map<CaseName, Measured[]>()];
  const bulkAlone: number[] = [];
  try {
    await bare.waitForLine((l) => l.startsWith('listening'), 120_000);
    const echoPort = await echo.port;
    if (opts.pin) for (const pid of [...processTree(readProcs(), idmint.pid), bare.pid, echo.pid]) pinProcess(pid, 1);
    if (opts.pin && bulkIdmint) for (const pid of processTree(readProcs(), bulkIdmint.pid)) pinProcess(pid, bulkCpu());
    if (opts.pin) stores = placeStores(env, 0);
    if (opts.awake) spinners = await keepCpusAwake();
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
    const stream = transport === 'ws' ? `ws://127.0.0.1:${bulkPort}/v1/stream` : `127.0.0.1:${bulkGrpcPort}`;
    // The warm-up rounds first (the first cases a process serves find V8 and the caches cold):
    // printed and listed, never in the medians. Two by default: with --trace-opt --trace-deopt,
    // idmint's first round after one warm-up round still deoptimised its HTTP path ('wrong map',
    // the socket and parser objects' shapes having changed with the bulk case's websocket) and
    // optimised some hundred functions again, its compiler's threads taking the serving thread's
    // core; from the second on it optimised a few functions a case and deoptimised none.
    for (let at = 1; at <= opts.warmupRounds + opts.rounds; at++) {
      const warm = at <= opts.warmupRounds;
      const round = warm ? `warm-up ${at}` : String(at - opts.warmupRounds);
      const rounds = warm ? warmups : measured;
      for (const name of Object.keys(targets) as CaseName[]) {
        const t = targets[name];
        // Beside the floor, a bare stream at the rate idmint's bulk consumer had in this round.
        const bareStream =
          name === 'floor beside bulk'
            ? await startBareStream(rounds.get('beside bulk')!.at(-1)!.bulkRate, transport)
            : undefined;
        if (bareStream && opts.pin) pinProcess(bareStream.child.pid, bulkCpu());
        const bulkUrl = name === 'beside bulk' ? stream : bareStream?.url;
        const bulk = bulkUrl === undefined ? undefined : await openConsumer(bulkUrl);
        await bulk?.start('bulk', opts.take, opts.block);
        const scrape = !isFloor(name) && opts.processes === 1 ? () => scrapeLoop(url) : undefined;
        const loop0 = await scrape?.();
        const [server0, steal0, ids0, at0] = [readServer(t.pid), serversSteal(), bulk?.ids ?? 0, performance.now()];
        const [http, udp] = await Promise.all([generate(binary, 'http', ...t.http), generate(binary, 'udp', ...t.udp)]);
        const loop1 = await scrape?.();
        const wall = (performance.now() - at0) / 1000;
        const loop = loop1?.delay ?? { p99: NaN, max: NaN };
        const gc = loop0 && loop1 ? pausesBetween(loop0.gc, loop1.gc, wall) : { perS: NaN, msPerS: NaN };
        const bulkRate = bulk ? (bulk.ids - ids0) / wall : NaN;
        const server = readServer(t.pid);
        const serverPct = ((server.cpuS - server0.cpuS) / wall) * 100;
        const stealPct = ((serversSteal() - steal0) / wall) * 100;
        const met = servingThreads(server0.threads, server.threads);
        const [servingWaitMs, othersPct] = [(met.servingWaitS / wall) * 1000, (met.othersRunS / wall) * 100];
        await bulk?.stop();
        await bareStream?.child.stop(5000);
        if (http.fail + udp.fail + (bulk?.failures ?? 0) > 0) {
          ok = false;
          console.log(
            `  FAILED: ${http.fail} HTTP and ${udp.fail} UDP requests failed, ${bulk?.failures ?? 0} bulk frames out of order or refused`,
          );
        }
        const m: Measured = {
          latency: { HTTP: http, UDP: udp },
          bulkRate,
          serverPct,
          stealPct,
          servingWaitMs,
          othersPct,
          loop,
          gc,
        };
        console.log(
          `${name} (round ${round}): p99 HTTP ${http.p99} ms, UDP ${udp.p99} ms; generators woke late p99 ${http.wakeP99} and ${udp.wakeP99} ms${bulk ? `; bulk ${(bulkRate / 1e6).toFixed(2)}M IDs/s` : ''}; server ${serverPct.toFixed(0)}% CPU, its serving thread waited ${servingWaitMs.toFixed(1)} ms/s for the CPU, its other threads ${othersPct.toFixed(1)}%; steal ${stealPct.toFixed(1)}%; event loop delay p99 ${loop.p99.toFixed(2)} ms, max ${loop.max.toFixed(2)} ms; GC paused it ${gc.perS.toFixed(1)} times a second, ${gc.msPerS.toFixed(1)} ms/s`,
        );
        rounds.set(name, [...(rounds.get(name) ?? []), m]);
      }
      // The bulk consumer alone, as long as a case.
      const bulk = await openConsumer(stream);
      await bulk.start('bulk', opts.take, opts.block);
      const [ids0, at0] = [bulk.ids, performance.now()];
      await new Promise((r) => setTimeout(r, opts.seconds * 1000));
      const alone = (bulk.ids - ids0) / ((performance.now() - at0) / 1000);
      if (!warm) bulkAlone.push(alone);
      await bulk.stop();
      if (bulk.failures > 0) ok = false;
      console.log(`bulk alone (round ${round}): ${(alone / 1e6).toFixed(2)}M IDs/s`);
    }
  } finally {
    spinners?.stop();
    stores?.restore();
    echo.stop();
    await Promise.all([idmint.stop(), bulkIdmint?.stop(), bare.stop()]);
    await cleanup(names);
  }
  const setup = {
    ...opts,
    warmupS: WARMUP_S,
    args,
    stores: stores?.said ?? [],
  };
  report(setup, { measured, warmups, bulkAlone, load, ok }, recorder);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
