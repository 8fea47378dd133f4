// UDP benchmark, run by `npm run bench:udp`: the setup id_server published, 4 client processes
// each sending N sequential requests and waiting for each reply. Two workloads:
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
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (code 0, the request's seq
// echoed); the IDs of one counter (one app name) must be distinct over all rounds. Per case
// it also reports the serving process's CPU per request (/proc), Redis's CPU per request
// (INFO cpu) and Redis's time per script call (INFO commandstats).
//
// With --clients 1 it is the one-client case (one request in flight at a time, so order global
// never shares a take), recorded as its own benchmark, udp-one, with goals on latency.
//
// Flags: --requests N (per client, default 200000)  --clients N (default 4)  --rounds N
//        (repeat the cases N times, interleaved; medians)  --workload idserver|reuse
//        --pin (taskset: the servers on CPU 1, the clients on CPU 0)
//        --cpu-prof DIR (idmint writes its .cpuprofile there, each baseline server in DIR/<role>)
//        --no-write
// Results: bench/results/udp-latest.md (udp-one-latest.md with --clients 1)
import { fork, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { scanKeys } from '../src/store/redis/connection.js';
import { Keys } from '../src/store/redis/keys.js';
import { scriptText } from '../src/store/redis/lua.js';
import { freePort, startTsx, type Child } from '../tools/child.js';
import { SeenIds } from '../tools/duplicates.js';
import { REDIS_URL, cleanup, testEnv, testNames } from '../tools/env.js';
import { createTag } from '../tools/node.js';
import { pinProcess, procCpuSeconds } from '../tools/cpu.js';
import { redisCounters, redisPerRequest } from '../tools/redis-stats.js';
import { markdownTable } from '../tools/table.js';
import { startRun } from './record.js';
import { readOptions } from '../tools/args.js';
import { TAKE_FLOOR_LUA } from './take-floor.js';
import { steadySegment, takeTokens } from './take-segment.js';
import { medianOrNaN as median } from './stats.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);
/** Set from the command line by main (child processes get what they need as arguments). */
const opts = { requests: 200_000, clients: 4, rounds: 1, write: true, workload: 'idserver' as Workload, pin: false, cpuProf: '' };
type Workload = 'idserver' | 'reuse';

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

interface ClientResult {
  readonly total: number;
  readonly fail: number;
  readonly min: number;
  readonly max: number;
  readonly avg: number;
  readonly ids: string[];
  readonly seconds: number;
  readonly app: string;
}

// ---- child roles -------------------------------------------------------------------------

async function echoServer(): Promise<void> {
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let reply: Buffer;
    try {
      const req = JSON.parse(msg.toString()) as Record<string, unknown>;
      reply = Buffer.from(JSON.stringify({ ...req, code: 0, message: 'success', data: '1' }));
    } catch {
      reply = Buffer.from('{"code":-2}');
    }
    sock.send(reply, r.port, r.address);
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

/** What a Redis baseline server does per request. */
type RedisCall = 'incr' | 'noop' | 'floor' | 'take';

/** The keys of the take server's segment hash: under the bench's Redis key. */
const takeKeys = (key: string) => new Keys(`${key}:take`);
const TAKE_TAG = 'udp';
/** The prefetch fraction the take server passes (irrelevant: its segment never ends in a run). */
const TAKE_PREFETCH = 0.9;

/** The Redis baseline servers' roles (the child's first argument) and what each does. */
const REDIS_ROLES: Readonly<Record<string, RedisCall>> = {
  'redis-echo': 'incr',
  'redis-script-echo': 'noop',
  'redis-floor-echo': 'floor',
  'redis-take-echo': 'take',
};

/**
 * The Redis baselines: the echo server, plus one Redis call per request (no coalescing) whose
 * value is the reply's data. incr: one raw INCR, what a Redis round trip per request costs on
 * this machine. noop: one EVALSHA of a script that only returns 1, with the keys and arguments
 * of a take: the floor of a round trip that runs a script. floor: one EVALSHA of the floor of
 * a safe take (the identity read and one HINCRBY), with the same keys and arguments. take: one
 * EVALSHA of take-2.lua for one ID of a hash in its steady state (an integer reply, the ID).
 */
async function redisEchoServer(key: string, kind: RedisCall): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const call = await callOf(redis, key, kind);
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(msg.toString()) as Record<string, unknown>;
    } catch {
      sock.send('{"code":-2}', r.port, r.address);
      return;
    }
    call().then(
      (n) => sock.send(JSON.stringify({ ...req, code: 0, message: 'success', data: String(n) }), r.port, r.address),
      () => sock.send(JSON.stringify({ ...req, code: -5, message: 'redis' }), r.port, r.address),
    );
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

/** The one Redis call a baseline server makes per request; it resolves with the reply's data. */
async function callOf(redis: Redis, key: string, kind: RedisCall): Promise<() => Promise<unknown>> {
  if (kind === 'incr') return () => redis.incr(key);
  if (kind === 'take') {
    const { seg, moved, ref } = await steadySegment(redis, takeKeys(key), TAKE_TAG, TAKE_PREFETCH);
    const sha = String(await redis.script('LOAD', scriptText('take-2')));
    const token = takeTokens('bench');
    // Anything but an integer (the steady state's reply) is a failed request.
    return () =>
      redis.evalsha(sha, 2, seg, moved, 1, token(), TAKE_PREFETCH, ref.epoch).then((first) => {
        if (typeof first !== 'number') throw new Error(`take answered ${JSON.stringify(first)}`);
        return first;
      });
  }
  const sha = String(await redis.script('LOAD', kind === 'noop' ? 'return 1' : TAKE_FLOOR_LUA));
  return () => redis.evalsha(sha, 2, `${key}:seg`, `${key}:moved`, 1, 'g', 0.2, 1);
}

/** One request and its reply (undefined after 2 s), on the given socket. */
function exchange(sock: ReturnType<typeof createSocket>, msg: Buffer, port: number): Promise<Buffer | undefined> {
  return new Promise<Buffer | undefined>((resolve) => {
    const timer = setTimeout(() => {
      sock.off('message', on);
      resolve(undefined);
    }, 2000);
    const on = (m: Buffer) => {
      clearTimeout(timer);
      sock.off('message', on);
      resolve(m);
    };
    sock.on('message', on);
    sock.send(msg, port, '127.0.0.1');
  });
}

/**
 * One client: n requests one at a time. idserver: a new socket per request, closed after its
 * reply (id_server's client), action create with a salt, app name app<index>; reuse: one
 * socket, action get, app name bench.
 */
async function client(port: number, rule: string, n: number, collect: boolean, workload: Workload, index: number): Promise<ClientResult> {
  const perRequest = workload === 'idserver';
  let shared: ReturnType<typeof createSocket> | undefined;
  if (!perRequest) {
    shared = createSocket('udp4');
    await new Promise<void>((r) => shared!.bind(0, '127.0.0.1', r));
  }
  const app = perRequest ? `app${index}` : 'bench';
  const ids: string[] = [];
  let fail = 0;
  let min = Infinity;
  let max = 0;
  let sum = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const body = perRequest
      ? { action: 'create', rule_name: rule, app_name: app, salt: `u${i % 1000}`, seq: String(i) }
      : { action: 'get', rule_name: rule, app_name: app, seq: String(i) };
    const msg = Buffer.from(JSON.stringify(body));
    const t0 = process.hrtime.bigint();
    let reply: Buffer | undefined;
    if (shared) reply = await exchange(shared, msg, port);
    else {
      const sock = createSocket('udp4');
      reply = await exchange(sock, msg, port);
      sock.close();
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (s < min) min = s;
    if (s > max) max = s;
    sum += s;
    if (!reply) {
      fail++;
      continue;
    }
    const r = JSON.parse(reply.toString()) as { code: number; data?: string; seq?: string };
    if (r.code !== 0 || r.seq !== String(i)) fail++;
    else if (collect) ids.push(String(r.data));
  }
  shared?.close();
  return { total: n, fail, min, max, avg: sum / n, ids, seconds: Number(process.hrtime.bigint() - started) / 1e9, app };
}

// ---- orchestration -----------------------------------------------------------------------

function startChild(role: string, extra: string[] = []): { proc: ChildProcess; ready: Promise<{ port: number }> } {
  // --cpu-prof: each baseline server writes its profiles in a folder named by its role.
  const prof = opts.cpuProf && role !== 'client' ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProf, role)}`] : [];
  const proc = fork(fileURLToPath(import.meta.url), [role, ...extra], {
    execArgv: ['--import', 'tsx', ...prof],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return { proc, ready: new Promise((resolve) => proc.once('message', (m) => resolve(m as { port: number }))) };
}

/** --pin: a server (every thread of it) on CPU 1; the clients stay on CPU 0 with this process. */
function pinServer(pid: number | undefined): void {
  if (opts.pin && pid !== undefined) pinProcess(pid, 1);
}

async function runClients(port: number, rule: string, collect: boolean): Promise<{ tps: number; avgMs: number; fail: number; ids: Map<string, string[]> }> {
  const kids = Array.from({ length: opts.clients }, (_, i) =>
    startChild('client', [String(port), rule, String(opts.requests), collect ? '1' : '0', opts.workload, String(i)]),
  );
  const results = await Promise.all(kids.map((k) => k.ready as unknown as Promise<ClientResult>));
  const seconds = Math.max(...results.map((r) => r.seconds));
  const total = results.reduce((s, r) => s + r.total, 0);
  for (const r of results) console.log(`  total:${r.total} fail:${r.fail} min:${r.min.toFixed(6)} max:${r.max.toFixed(6)} avg:${r.avg.toFixed(6)}`);
  return {
    tps: total / seconds,
    avgMs: (results.reduce((s, r) => s + r.avg, 0) / results.length) * 1000,
    fail: results.reduce((s, r) => s + r.fail, 0),
    ids: new Map(results.map((r) => [r.app, r.ids])),
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

const NODE_CASE = 'idmint, order node';
const SCRIPT_CASE = 'echo + one no-op Redis script (EVALSHA)';
const FLOOR_CASE = 'echo + the floor of a safe take (EVALSHA)';
const TAKE_CASE = "echo + idmint's take (EVALSHA of take-2.lua)";
const GLOBAL_CASE = 'idmint, order global';

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
}

/** One case in one round. */
interface Measured {
  readonly tps: number;
  readonly avgMs: number;
  readonly fail: number;
  readonly serverUs: number;
  readonly redisUs: number;
  readonly scriptUs: number;
}

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

  const names = testNames();
  const [udpPort, httpPort] = [await freePort(), await freePort()];
  const idmint = await startIdmint(names, udpPort, httpPort);
  let ok = true;
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
    const cases: { name: string; port: number; rule: string; idmint: boolean; pid: number | undefined }[] = [
      { name: 'echo (baseline)', port: echoPort, rule: 'o2o', idmint: false, pid: echo.proc.pid },
      { name: 'echo + one Redis INCR', port: redisPort, rule: 'o2o', idmint: false, pid: redisEcho.proc.pid },
      { name: SCRIPT_CASE, port: scriptPort, rule: 'o2o', idmint: false, pid: scriptEcho.proc.pid },
      { name: FLOOR_CASE, port: floorPort, rule: 'o2o', idmint: false, pid: floorEcho.proc.pid },
      { name: TAKE_CASE, port: takePort, rule: 'o2o', idmint: false, pid: takeEcho.proc.pid },
      { name: NODE_CASE, port: udpPort, rule: 'o2o_node', idmint: true, pid: idmint.pid },
      { name: GLOBAL_CASE, port: udpPort, rule: 'o2o_global', idmint: true, pid: idmint.pid },
    ];
    /** Per case and app name (one counter), every ID seen over all rounds. */
    const seen = new Map<string, SeenIds<string, string>>();
    for (let round = 1; round <= opts.rounds; round++) {
      for (const c of cases) {
        console.log(`${c.name}${opts.rounds > 1 ? ` (round ${round})` : ''}`);
        const cpu0 = procCpuSeconds(c.pid ?? 0);
        const redis0 = await redisCounters(stats);
        const r = await runClients(c.port, c.rule, c.idmint);
        const cpu1 = procCpuSeconds(c.pid ?? 0);
        const requests = opts.clients * opts.requests;
        const perRequest = redisPerRequest(redis0, await redisCounters(stats), requests);
        if (c.idmint) {
          // Every ID of one counter (case and app name), over all rounds, must be distinct.
          let dups = 0;
          for (const [app, ids] of r.ids) {
            const key = `${c.name}/${app}`;
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
        list.push({ tps: r.tps, avgMs: r.avgMs, fail: r.fail, serverUs: ((cpu1 - cpu0) * 1e6) / requests, ...perRequest });
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
  const base = measured.get('echo (baseline)')!;
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
      String(r.fail),
    ]),
  ];
  const lines = [markdownTable(table)];
  const node = row(NODE_CASE);
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
    ...globalGoals,
  ];
  const verdicts = goals.map(([g, pass]) => `- ${g}: ${pass ? 'PASS' : 'MISS'}`);
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
    recorder.finish({ rows: table, ratio: { column: 'TPS ÷ echo', baseline: 'echo (baseline)' }, notes: verdicts.map((v) => v.slice(2)) });
  }
  if (!ok) process.exitCode = 1;
}

const role = process.argv[2];
const redisCall = Object.hasOwn(REDIS_ROLES, role) ? REDIS_ROLES[role] : undefined;
// A baseline server stopped by the bench exits normally, so that --cpu-prof writes its profile;
// and it exits when the bench is gone (its channel to it closed, now or while this loaded),
// however the bench ended.
if (role === 'echo' || redisCall) {
  process.on('SIGTERM', () => process.exit(0));
  if (process.connected) process.once('disconnect', () => process.exit(0));
  else process.exit(0);
}
if (role === 'echo') void echoServer();
else if (redisCall) void redisEchoServer(process.argv[3], redisCall);
else if (role === 'client') {
  const [, , , port, rule, n, collect, workload, index] = process.argv;
  void client(Number(port), rule, Number(n), collect === '1', workload as Workload, Number(index)).then((r) => {
    // Disconnect only once the (large) message is written, or it may never arrive.
    process.send!(r, undefined, {}, () => process.disconnect());
  });
} else {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
