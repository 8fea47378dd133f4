// UDP benchmark, run by `npm run bench:udp`: the setup id_server published, client processes
// each sending N sequential requests and waiting for each reply; id_server's setup has 4, the
// default here is 8 (with 4, on two cores with --pin, the echo server waited for its clients
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
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (code 0, the request's seq
// echoed); the IDs of one counter (one app name) must be distinct over all rounds. Per case
// it also reports the serving process's CPU per request (/proc), Redis's CPU per request
// (INFO cpu) and Redis's time per script call (INFO commandstats), and the CPU of the server
// (its least busy window) and of the clients (their median window), in % of one core.
// The baseline servers are bench/udp/servers.ts.
//
// With --clients 1 it is the one-client case (one request in flight at a time, so order global
// never shares a take), recorded as its own benchmark, udp-one, with goals on latency.
//
// Flags: --requests N (per client, default 200000)  --clients N (default 8)  --rounds N
//        (repeat the cases N times, interleaved; medians)  --workload idserver|reuse
//        --pin (taskset: the servers on CPU 1, the clients on CPU 0)
//        --cpu-prof DIR (idmint writes its .cpuprofile there, each baseline server in DIR/<role>)
//        --no-write
// Results: bench/results/udp-latest.md (udp-one-latest.md with --clients 1)
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { scanKeys } from '../src/store/redis/connection.js';
import { freePort, startTsx, type Child } from '../tools/child.js';
import { SeenIds } from '../tools/duplicates.js';
import { REDIS_URL, cleanup, testEnv, testNames } from '../tools/env.js';
import { createTag } from '../tools/node.js';
import { pinProcess, procCpuSeconds } from '../tools/cpu.js';
import { redisCounters, redisPerRequest } from '../tools/redis-stats.js';
import { markdownTable } from '../tools/table.js';
import { startRun } from './record.js';
import { readOptions } from '../tools/args.js';
import { medianOrNaN as median } from './stats.js';
import { WINDOW_MS, buildClient, runClients as runLoad, type Workload } from './udp/c-client.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);
/** Set from the command line by main (child processes get what they need as arguments). */
const opts = { requests: 200_000, clients: 8, rounds: 1, write: true, workload: 'idserver' as Workload, pin: false, cpuProf: '' };

function parseArgs(argv: readonly string[]): void {
  readOptions(argv, 'npm run bench:udp -- [--requests N] [--clients N] [--rounds N] [--workload idserver|reuse] [--pin] [--cpu-prof DIR] [--no-write]', (a) => {
    switch (a.flag) {
      case '--workload': {
        const w = a.text();
        if (w !== 'idserver' && w !== 'reuse') throw new Error(`--workload is idserver or reuse, not ${w}`);
        opts.workload = w;
        break;
      }
      case '--pin':
        opts.pin = true;
        break;
      case '--cpu-prof':
        opts.cpuProf = a.text();
        break;
      case '--requests':
        opts.requests = a.whole(1);
        break;
      case '--clients':
        opts.clients = a.whole(1, 64);
        break;
      case '--rounds':
        opts.rounds = a.whole(1);
        break;
      case '--no-write':
        opts.write = false;
        break;
      default:
        return false;
    }
    return true;
  });
}

// ---- orchestration -----------------------------------------------------------------------

function startChild(role: string, extra: string[] = []): { proc: ChildProcess; ready: Promise<{ port: number }> } {
  // --cpu-prof: each baseline server writes its profiles in a folder named by its role.
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProf, role)}`] : [];
  const proc = fork(fileURLToPath(new URL('./udp/servers.ts', import.meta.url)), [role, ...extra], {
    execArgv: ['--import', 'tsx', ...prof],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return { proc, ready: new Promise((resolve) => proc.once('message', (m) => resolve(m as { port: number }))) };
}

/** --pin: a server (every thread of it) on CPU 1; the clients stay on CPU 0 with this process. */
function pinServer(pid: number | undefined): void {
  if (opts.pin && pid !== undefined) pinProcess(pid, 1);
}

/** The C clients against one server; the server's and the clients' CPU in each window. */
async function runClients(
  binary: string,
  port: number,
  rule: string,
  collect: boolean,
  serverPid: number,
): Promise<{ tps: number; avgMs: number; fail: number; ids: Map<string, string[]>; serverPct: number[]; demandPct: number[]; clientPct: number[] }> {
  const run = await runLoad(binary, {
    port,
    rule,
    requests: opts.requests,
    clients: opts.clients,
    workload: opts.workload,
    collect,
    cpu: opts.pin ? 0 : undefined,
    serverPid,
  });
  const results = run.clients;
  const seconds = Math.max(...results.map((r) => r.seconds));
  const total = results.reduce((s, r) => s + r.total, 0);
  for (const r of results) console.log(`  total:${r.total} fail:${r.fail} min:${r.min.toFixed(6)} max:${r.max.toFixed(6)} avg:${r.avg.toFixed(6)}`);
  const pcts = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(
    `  CPU % per ${WINDOW_MS} ms window: server ${pcts(run.serverPct)}; its main thread running or runnable ${pcts(run.demandPct)}; clients ${pcts(run.clientPct)}`,
  );
  return {
    tps: total / seconds,
    avgMs: (results.reduce((s, r) => s + r.avg, 0) / results.length) * 1000,
    fail: results.reduce((s, r) => s + r.fail, 0),
    ids: new Map(results.map((r) => [r.app, r.ids])),
    serverPct: run.serverPct,
    demandPct: run.demandPct,
    clientPct: run.clientPct,
  };
}

async function startIdmint(names: ReturnType<typeof testNames>, udpPort: number, httpPort: number): Promise<Child> {
  const env = { ...process.env, ...testEnv(names, { PORT: String(httpPort), UDP_PORT: String(udpPort), LOG_LEVEL: 'warn' }) };
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProf}`] : [];
  const idmint = startTsx(['src/cli.ts', 'serve'], { name: 'idmint', env, nodeFlags, inherit: true });
  await idmint.waitUntil(async () => (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).ok, 30000, 200);
  pinServer(idmint.pid);
  return idmint;
}

const ECHO_CASE = 'echo (baseline)';
const NODE_CASE = 'idmint, order node';
const SCRIPT_CASE = 'echo + one no-op Redis script (EVALSHA)';
const FLOOR_CASE = 'echo + the floor of a safe take (EVALSHA)';
const TAKE_CASE = "echo + idmint's take (EVALSHA of take-2.lua)";
const GLOBAL_CASE = 'idmint, order global';
const SEGMENT_CASE = 'idmint, segment tag, order node';

interface Row {
  readonly name: string;
  readonly tps: number;
  readonly avgMs: number;
  readonly fail: number;
  readonly ratioTps: number;
  readonly ratioLatency: number;
  readonly incrTps: number;
  readonly incrLatency: number;
  readonly takeLatency: number;
  readonly scriptTps: number;
  readonly floorTps: number;
  readonly takeTps: number;
  /** CPU of the serving process per request, µs. */
  readonly serverUs: number;
  /** CPU of Redis per request, µs (the whole server: INFO cpu). */
  readonly redisUs: number;
  /** Redis usec per EVALSHA (INFO commandstats), µs; NaN where the case runs no script per request. */
  readonly scriptUs: number;
  /** The serving process's CPU in its least busy window, % of a core (median over rounds). */
  readonly serverLowPct: number;
  /** The serving process's main thread running or runnable in its least busy window, % (median over rounds). */
  readonly demandLowPct: number;
  /** The client processes' CPU together in the median window, % of a core (median over rounds). */
  readonly clientPct: number;
}

/** One case in one round. */
interface Measured {
  readonly tps: number;
  readonly avgMs: number;
  readonly fail: number;
  readonly serverUs: number;
  readonly redisUs: number;
  readonly scriptUs: number;
  readonly serverLowPct: number;
  readonly demandLowPct: number;
  readonly clientPct: number;
}

/**
 * The echo server must be the limit: its main thread running, or runnable while another process
 * of the machine held its CPU, this much of every window; else it waited for its clients.
 */
const ECHO_BUSY_PCT = 95;

async function main(): Promise<void> {
  parseArgs(args);
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
  const echo = startChild('echo');
  const redisKey = `idmint:bench:udp:${process.pid}`;
  const redisEcho = startChild('redis-echo', [redisKey]);
  const scriptEcho = startChild('redis-script-echo', [redisKey]);
  const floorEcho = startChild('redis-floor-echo', [redisKey]);
  const takeEcho = startChild('redis-take-echo', [redisKey]);
  const baselines = [echo, redisEcho, scriptEcho, floorEcho, takeEcho];
  const [{ port: echoPort }, { port: redisPort }, { port: scriptPort }, { port: floorPort }, { port: takePort }] = await Promise.all(
    baselines.map((b) => b.ready),
  );
  for (const b of baselines) pinServer(b.proc.pid);

  const binary = buildClient();
  const names = testNames();
  const [udpPort, httpPort] = [await freePort(), await freePort()];
  const idmint = await startIdmint(names, udpPort, httpPort);
  let ok = true;
  /** Rounds in which the echo server waited for its clients: the run fails. */
  const clientLimited: string[] = [];
  // Per case, one measurement per round; each round runs every case once, in the same order,
  // so a slow spell of the machine hits a round rather than one case.
  const measured = new Map<string, Measured[]>();
  const stats = new Redis(REDIS_URL);
  try {
    for (const order of ['node', 'global'] as const) {
      const tag = `o2o_${order}`;
      // Six counter digits: the id_server template, wide enough for the IDs of a run.
      await createTag(`http://127.0.0.1:${httpPort}`, {
        tag,
        mode: 'rule',
        order,
        template: '{year%10}{MM}{dd}{counter:6}',
        min_counter: 0,
        max_counter: 999_999,
        reset_seconds: 86400,
        step: 10000,
        min_step: 1000,
        node_block: 1000,
      });
    }
    // A segment tag answers its plain IDs; the app name and salt apply to rule tags only.
    await createTag(`http://127.0.0.1:${httpPort}`, { tag: 'seg_node', order: 'node' });
    const cases: { name: string; port: number; rule: string; idmint: boolean; pid: number | undefined }[] = [
      { name: ECHO_CASE, port: echoPort, rule: 'o2o', idmint: false, pid: echo.proc.pid },
      { name: 'echo + one Redis INCR', port: redisPort, rule: 'o2o', idmint: false, pid: redisEcho.proc.pid },
      { name: SCRIPT_CASE, port: scriptPort, rule: 'o2o', idmint: false, pid: scriptEcho.proc.pid },
      { name: FLOOR_CASE, port: floorPort, rule: 'o2o', idmint: false, pid: floorEcho.proc.pid },
      { name: TAKE_CASE, port: takePort, rule: 'o2o', idmint: false, pid: takeEcho.proc.pid },
      { name: NODE_CASE, port: udpPort, rule: 'o2o_node', idmint: true, pid: idmint.pid },
      { name: GLOBAL_CASE, port: udpPort, rule: 'o2o_global', idmint: true, pid: idmint.pid },
      { name: SEGMENT_CASE, port: udpPort, rule: 'seg_node', idmint: true, pid: idmint.pid },
    ];
    /** Per counter (a rule's case and app name; a segment tag's case), every ID seen over all rounds. */
    const seen = new Map<string, SeenIds<string, string>>();
    for (let round = 1; round <= opts.rounds; round++) {
      for (const c of cases) {
        console.log(`${c.name}${opts.rounds > 1 ? ` (round ${round})` : ''}`);
        const cpu0 = procCpuSeconds(c.pid ?? 0);
        const redis0 = await redisCounters(stats);
        const r = await runClients(binary, c.port, c.rule, c.idmint, c.pid ?? 0);
        const cpu1 = procCpuSeconds(c.pid ?? 0);
        const requests = opts.clients * opts.requests;
        const perRequest = redisPerRequest(redis0, await redisCounters(stats), requests);
        if (c.idmint) {
          // Every ID of one counter, over all rounds, must be distinct.
          let dups = 0;
          for (const [app, ids] of r.ids) {
            const key = c.name === SEGMENT_CASE ? c.name : `${c.name}/${app}`;
            const all = seen.get(key) ?? new SeenIds<string, string>();
            seen.set(key, all);
            for (const id of ids) if (all.add(id, key) !== undefined) dups++;
          }
          if (dups > 0 || r.fail > 0) {
            ok = false;
            console.log(`  FAILED: ${dups} duplicate IDs, ${r.fail} failed requests`);
          }
        }
        const list = measured.get(c.name) ?? [];
        const lowest = (xs: number[]) => (xs.length > 0 ? Math.min(...xs) : NaN);
        const serverLowPct = lowest(r.serverPct);
        const demandLowPct = lowest(r.demandPct);
        if (c.name === ECHO_CASE && !(demandLowPct >= ECHO_BUSY_PCT)) {
          clientLimited.push(`round ${round}: ${r.demandPct.length} windows, the least busy at ${demandLowPct.toFixed(0)}%`);
          console.log(`  FAILED: the echo server waited for its clients (below ${ECHO_BUSY_PCT}% running or runnable in a window)`);
        }
        list.push({
          tps: r.tps,
          avgMs: r.avgMs,
          fail: r.fail,
          serverUs: ((cpu1 - cpu0) * 1e6) / requests,
          ...perRequest,
          serverLowPct,
          demandLowPct,
          clientPct: median(r.clientPct),
        });
        measured.set(c.name, list);
      }
    }
  } finally {
    const stopped = idmint.stop();
    for (const b of baselines) b.proc.kill();
    await stopped;
    await cleanup(names);
    // The INCR key and every key of the script servers, named after it.
    await stats.del(redisKey);
    await scanKeys(stats, `${redisKey}:*`, (keys) => stats.del(...keys));
    stats.disconnect();
  }

  // Medians over rounds; each ratio is the median of the per-round ratios to that round's
  // baseline (echo, and echo + INCR).
  const base = measured.get(ECHO_CASE)!;
  const incr = measured.get('echo + one Redis INCR')!;
  const script = measured.get(SCRIPT_CASE)!;
  const floor = measured.get(FLOOR_CASE)!;
  const take = measured.get(TAKE_CASE)!;
  const rows: Row[] = [...measured].map(([name, ms]) => ({
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
  const row = (name: string) => rows.find((r) => r.name === name)!;
  const table = [
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
  const lines = [markdownTable(table)];
  const node = row(NODE_CASE);
  const seg = row(SEGMENT_CASE);
  const glob = row(GLOBAL_CASE);
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
  // Several clients must keep the echo server busy; one client (one request in flight) never can.
  if (opts.clients > 1) {
    verdicts.unshift(
      clientLimited.length === 0
        ? `- the load generator is not the limit: the echo server's main thread running (or runnable, its CPU taken by another process) ≥ ${ECHO_BUSY_PCT}% of every ${WINDOW_MS} ms window of every round: PASS`
        : `- RUN FAILED, the load generator was the limit: the echo server's main thread idle, waiting for its clients, over ${100 - ECHO_BUSY_PCT}% of a ${WINDOW_MS} ms window (${clientLimited.join('; ')})`,
    );
    if (clientLimited.length > 0) ok = false;
  }
  verdicts.push(
    `- the floor of a round trip that runs a script: echo + one no-op EVALSHA at ${row(SCRIPT_CASE).incrTps.toFixed(2)} × echo + INCR; order global at ${glob.scriptTps.toFixed(2)} × that floor`,
    `- the floor of a request served by a take that checks its server (the identity read and one cursor move): ${row(FLOOR_CASE).incrTps.toFixed(2)} × echo + INCR; order global at ${glob.floorTps.toFixed(2)} × that floor`,
    `- idmint's take with nothing of idmint's process around it: echo + one EVALSHA of take-2.lua at ${row(TAKE_CASE).floorTps.toFixed(2)} × the safe-take floor server; order global at ${glob.takeTps.toFixed(2)} × that server`,
    `- load average before the run ${load}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
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
    `- ${opts.clients} client processes x ${opts.requests} sequential requests (send, wait for the reply) per case${opts.rounds > 1 ? `, ${opts.rounds} interleaved rounds (medians; ratios are medians of the per-round ratios)` : ''}`,
    opts.pin ? '- pinned (taskset): the servers on CPU 1, the client processes on CPU 0' : '- not pinned: servers and clients share both CPUs',
    `- command: npm run bench:udp${args.length ? ` -- ${args.join(' ')}` : ''}`,
    '',
    ...lines,
    '',
    ...verdicts,
    '',
  ].join('\n');
  console.log(`\n${lines.join('\n')}\n\n${verdicts.join('\n')}`);
  if (opts.write) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}${kind}-latest.md`, md);
    recorder.finish({ rows: table, ratio: { column: 'TPS ÷ echo', baseline: ECHO_CASE }, notes: verdicts.map((v) => v.slice(2)) });
  }
  if (!ok) process.exitCode = 1;
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
