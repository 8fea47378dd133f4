// UDP benchmark, run by `npm run bench:udp`: the setup id_server published, client processes
// each sending N sequential requests and waiting for each reply; id_server's setup has 4, the
// default here is 16 (with 4, on two cores with --pin, the echo server waited for its clients
// in some windows). The clients are C
// (bench/udp-client/, built with gcc by bench/udp/c-client.ts) so that they are not the limit:
// the run fails when the echo server is below 95% of its core in any window of its case (its
// clients kept it waiting). Two workloads:
//   idserver (default)  what id_server's own client does per call: a new UDP socket for every
//                       request (socket, sendto, recvfrom, close), action `create`, a `salt`,
//                       and each client its own app name (its own counter: nothing shared
//                       between clients)
//   reuse               one socket per client for all its requests, action `get`, one app name
//                       shared by all clients
// With --in-flight K each client process is K id_server clients in one (idserver workload): each
// with its own app name (its own counter) and one request at a time on a new socket, the process
// awaiting the replies in the order sent. The server sees the same datagrams from as many ports,
// but a process is woken once for several replies: on a machine whose echo server answers faster
// than one core of one-request clients can send, this keeps it busy (bench/udp/options.ts).
// In one run it measures:
//   echo    a bare Node dgram server that parses the JSON and echoes it with code, message and
//           data (the baseline)
//   incr    the same server doing one Redis INCR per request (the floor of a request that
//           needs a Redis round trip)
//   script  the same server doing one EVALSHA of a script that only returns 1, with a take's
//           keys and arguments (the floor of a round trip that runs a script, as a take does)
//   floor   the same server doing one EVALSHA of the floor of a safe take (bench/take-floor.ts:
//           the server's identity read and one cursor move, its value the reply's data): the
//           least an `order: global` request costs while every take checks its server
//   take    the same server doing one EVALSHA of idmint's own take (take-2.lua, steady state,
//           on a hash set up by bench/take-segment.ts), the first ID as the reply's data: what
//           order global costs with nothing of idmint's process around the take
//   node    idmint's UDP answer for a rule tag with order "node"
//   global  idmint's UDP answer for a rule tag with order "global"
//   segment idmint's UDP answer for a segment tag with order "node" (its plain IDs)
// idmint runs as a child process against a redis-server of the run's own (so that its CPU and
// commandstats are the run's alone) and the real MySQL with a database of its own, removed at
// the end. Every reply is checked (code 0, the request's seq
// echoed); the IDs of one counter (one app name) must be distinct over all rounds. Per case
// it also reports the serving process's CPU per request (/proc), Redis's CPU per request
// (INFO cpu) and Redis's time per script call (INFO commandstats), and the CPU of the server
// (its least busy window) and of the clients (their median window), in % of one core.
// The baseline servers are bench/udp/servers.ts. The parts of the run are in bench/udp/: options.ts
// (the command line), start-servers.ts (the servers as child processes), cases.ts, rounds.ts (the
// measuring), load-limit.ts (the check that the clients kept the echo server busy), report.ts.
//
// With --clients 1 it is the one-client case (one request in flight at a time, so order global
// never shares a take), recorded as its own benchmark, udp-one, with goals on latency.
//
// Flags: --requests N (per client, default 200000)  --clients N (default 16)  --in-flight K
//        (default 12; 1 with --clients 1)  --rounds N
//        (repeat the cases N times, interleaved; medians)  --warmup-rounds N (rounds of every
//        case run first, their figures printed and left out of the medians: default 1)
//        --workload idserver|reuse
//        --pin (taskset: the servers on CPU 1, the clients on CPU 0)
//        --redis-cpu 0|1|any (the CPU of the run's own redis-server: 1, beside the servers, by
//        default with --pin; any, left to the scheduler, without)
//        --cpu-prof DIR (idmint writes its .cpuprofile there, each baseline server in DIR/<role>)
//        --no-write
// Results: bench/results/udp-latest.md (udp-one-latest.md with --clients 1)
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { freePort } from '../tools/child.js';
import { cleanup, testNames } from '../tools/env.js';
import { pinProcess } from '../tools/cpu.js';
import { RedisServer } from '../tools/redis-server.js';
import { startRun } from './record.js';
import { buildClient } from './udp/c-client.js';
import { CASE_NAMES, createUdpTags, udpCases } from './udp/cases.js';
import { readUdpOptions, type UdpOptions } from './udp/options.js';
import { udpReport } from './udp/report.js';
import { runRounds, type Rounds } from './udp/rounds.js';
import { pinServer, placeRedis, startBaseline, startIdmint } from './udp/start-servers.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);

/** Starts the servers against the run's Redis at redisUrl, runs the rounds and stops the servers. */
async function measure(opts: UdpOptions, redisUrl: string): Promise<Rounds> {
  const stats = new Redis(redisUrl);
  const echo = startBaseline(opts, 'echo');
  const redisArgs = [`idmint:bench:udp:${process.pid}`, redisUrl];
  const redisEcho = startBaseline(opts, 'redis-echo', redisArgs);
  const scriptEcho = startBaseline(opts, 'redis-script-echo', redisArgs);
  const floorEcho = startBaseline(opts, 'redis-floor-echo', redisArgs);
  const takeEcho = startBaseline(opts, 'redis-take-echo', redisArgs);
  const baselines = [echo, redisEcho, scriptEcho, floorEcho, takeEcho];
  const [{ port: echoPort }, { port: redisPort }, { port: scriptPort }, { port: floorPort }, { port: takePort }] =
    await Promise.all(baselines.map((b) => b.ready));
  for (const b of baselines) pinServer(opts, b.proc.pid);

  const binary = buildClient();
  const names = testNames();
  const [udpPort, httpPort] = [await freePort(), await freePort()];
  const idmint = await startIdmint(opts, names, redisUrl, udpPort, httpPort);
  try {
    await createUdpTags(`http://127.0.0.1:${httpPort}`);
    const cases = udpCases({
      echo: { port: echoPort, pid: echo.proc.pid },
      incr: { port: redisPort, pid: redisEcho.proc.pid },
      script: { port: scriptPort, pid: scriptEcho.proc.pid },
      floor: { port: floorPort, pid: floorEcho.proc.pid },
      take: { port: takePort, pid: takeEcho.proc.pid },
      idmint: { port: udpPort, pid: idmint.pid },
    });
    return await runRounds(opts, binary, cases, stats);
  } finally {
    const stopped = idmint.stop();
    for (const b of baselines) b.proc.kill();
    await stopped;
    stats.disconnect();
    // The database is dropped; the keys go with the run's Redis.
    await cleanup(names, null);
  }
}

async function main(): Promise<void> {
  const opts = readUdpOptions(args);
  // One client: nothing is ever in flight beside a request; recorded apart from the 4-client runs.
  const kind = opts.clients === 1 ? 'udp-one' : 'udp';
  const recorder = startRun(kind);
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  if (opts.cpuProf) mkdirSync(opts.cpuProf, { recursive: true });
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(
    `UDP benchmark (${opts.workload}): ${opts.clients} clients x ${opts.requests} sequential requests per case, ${opts.rounds} round(s); load average ${load}`,
  );
  const redisServer = await RedisServer.start();
  let rounds: Rounds;
  try {
    placeRedis(opts, redisServer.pid);
    rounds = await measure(opts, redisServer.url);
  } finally {
    // The run's Redis goes with every key of the run.
    await redisServer.stop();
  }

  const report = udpReport(opts, args, rounds.measured, rounds.warmups, rounds.clientLimited, load);
  console.log(`\n${report.lines.join('\n')}\n\n${report.verdicts.join('\n')}`);
  if (opts.write) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}${kind}-latest.md`, report.md);
    recorder.finish({
      rows: report.table,
      ratio: { column: 'TPS ÷ echo', baseline: CASE_NAMES.echo },
      notes: report.verdicts.map((v) => v.slice(2)),
    });
  }
  if (!rounds.ok || report.failed) process.exitCode = 1;
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
