// Scaling benchmark of `idmint serve --processes N`, run by `npm run bench:scale`.
//
// For each process count in --processes-list (default 1,2,4) it starts idmint with that many
// serving processes against the one Redis (and MySQL), and a bare Fastify route
// (bench/bare-server.ts; N > 1 runs N copies of it under node's cluster module, as idmint
// does), and measures with autocannon in this process, C keep-alive connections over
// loopback, a warm-up and then --duration seconds per case:
//   bare    the bare route, answering a constant {"id":"1"}
//   node    GET /v1/id/:tag of a segment tag with order "node"   (IDs from process memory)
//   global  GET /v1/id/:tag of a segment tag with order "global" (every request reaches Redis
//           through the coalescer)
// and, once, the Redis limit: redis-benchmark running idmint's own take script
// (src/store/redis/commands/take-<keys>.lua, SCRIPT LOAD + EVALSHA, one ID per call) against
// a segment key idmint installed with a segment of 10^8 IDs, so it never runs dry. The keys
// and arguments are those of a take idmint itself sent (seen with MONITOR), with n set to 1,
// so they follow the script's header whatever it asks for.
//
// Answers are checked: every idmint body is {"id":"<n>"}, IDs increase on each connection and
// are distinct within a case, global IDs lie above a batch fetched before the case; the Redis
// run must advance the key's `taken` counter by exactly the number of calls. A failed check
// fails the run (exit code 1).
//
// The machine is shared: for every case the CPU used by processes other than the servers, the
// load generator and Redis is recorded (and the busiest of them named); a case where it
// exceeds --max-other % of a core is run again, up to --retries times, and marked when it
// stays disturbed. --wait-quiet S waits up to S seconds for a quiet machine before each case.
//
// Flags: --duration S (5)  --warmup S (1)  --connections N (50)  --processes-list 1,2,4
//        --cases bare,node,global  --redis-requests N (300000, 0 skips redis-benchmark)
//        --max-other PCT (15)  --retries N (2)  --wait-quiet S (0)  --no-write
//        --rounds N (1): the cases of each process count N times, interleaved; the table shows
//        medians and the range of req/s
//        --pin: every server process on CPU 1, the load generator on CPU 0 (taskset)
//        --private-redis: idmint and redis-benchmark use a redis-server of this run alone, so
//        its commandstats (calls and usec per EVALSHA) count only this run
// For order global it also reports the nodes' own count of takes (idmint_takes_total) and IDs
// of the tag, so requests per take, and Redis usec per EVALSHA during the case beside a no-op
// script (`return 1` with the take's keys and arguments) measured right after it.
// Results: bench/results/scale-latest.md (full runs only).
import cluster from 'node:cluster';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { ADMIN_TOKEN, REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../test/helpers/env.js';
import { createTag, eachLine, fetchIds } from '../test/helpers/node.js';
import { logLines } from '../test/helpers/load.js';
import { freePort, RedisServer } from '../test/helpers/redis-server.js';
import { takenOf } from '../src/store/redis/segments.js';
import { pick, readOptions } from './args.js';
import { duplicatesIn, maxOf, runLoad, type Check } from './load.js';
import { medianOrNaN as median } from './stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const COMMANDS = fileURLToPath(new URL('../src/store/redis/commands/', import.meta.url));
/** The Redis idmint and the measurements use: the shared one, or (--private-redis) one of this run. */
let redisUrl = REDIS_URL;
/** --pin: servers on CPU 1, this process (the load generator) on CPU 0. */
let pinServers = false;

// ---------------------------------------------------------------------------------------------
// Options

type CaseName = 'bare' | 'node' | 'global';
const ALL_CASES: CaseName[] = ['bare', 'node', 'global'];

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  processesList: number[];
  cases: CaseName[];
  redisRequests: number;
  maxOther: number;
  retries: number;
  waitQuiet: number;
  rounds: number;
  write: boolean;
  privateRedis: boolean;
  pin: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { duration: 5, warmup: 1, connections: 50, processesList: [1, 2, 4], cases: [...ALL_CASES], redisRequests: 300_000, maxOther: 15, retries: 2, waitQuiet: 0, rounds: 1, write: true, privateRedis: false, pin: false };
  const usage = 'npm run bench:scale -- [--private-redis] [--pin] [--duration S] [--warmup S] [--connections N] [--processes-list 1,2,4] [--cases bare,node,global] [--redis-requests N] [--max-other PCT] [--retries N] [--wait-quiet S] [--rounds N] [--no-write]';
  readOptions(argv, usage, (a) => {
    switch (a.flag) {
      case '--duration': o.duration = a.number(1, 120); break;
      case '--warmup': o.warmup = a.number(0, 60); break;
      case '--connections': o.connections = a.whole(1, 1000); break;
      case '--processes-list': {
        const list = a.list().map(Number);
        if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 1 || n > 16)) throw new Error(`--processes-list needs whole numbers from 1 to 16, e.g. 1,2,4`);
        o.processesList = list;
        break;
      }
      case '--cases': o.cases = pick(a.flag, a.list(), ALL_CASES); break;
      case '--redis-requests': o.redisRequests = a.whole(0, 10_000_000); break;
      case '--max-other': o.maxOther = a.number(0); break;
      case '--retries': o.retries = a.whole(0, 10); break;
      case '--wait-quiet': o.waitQuiet = a.number(0, 600); break;
      case '--rounds': o.rounds = a.whole(1, 20); break;
      case '--no-write': o.write = false; break;
      case '--private-redis': o.privateRedis = true; break;
      case '--pin': o.pin = true; break;
      default: return false;
    }
    return true;
  });
  return o;
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc (Linux)

const TICK = 100; // USER_HZ

interface ProcCpu { comm: string; ppid: number; ticks: number }

function readProcs(): Map<number, ProcCpu> {
  const out = new Map<number, ProcCpu>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const f = stat.slice(close + 2).split(' ');
      out.set(Number(name), { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the process ended while the list was read
    }
  }
  return out;
}

/** CPU seconds all CPUs spent busy (not idle, not waiting on I/O). */
function machineBusySeconds(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / TICK;
}

/** CPU seconds of this process's children that ended and were waited for. */
function reapedChildrenSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / TICK;
}

/** The pid and every descendant of it. */
function tree(procs: Map<number, ProcCpu>, root: number): Set<number> {
  const out = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, p] of procs) if (!out.has(pid) && out.has(p.ppid)) { out.add(pid); grew = true; }
  }
  return out;
}

interface CpuWindow {
  /** % of one core over the window. */
  server: number;
  client: number;
  redis: number;
  other: number;
  /** The busiest other processes, "name pid: %". */
  busiest: string[];
}

/** extraClientS: CPU seconds of a load generator that ran as a child process (already ended). */
function cpuWindow(before: Map<number, ProcCpu>, after: Map<number, ProcCpu>, wallS: number, busyS: number, serverRoot: number | undefined, redisPid: number | undefined, extraClientS = 0): CpuWindow {
  const pct = (ticks: number) => (ticks / TICK / wallS) * 100;
  const delta = (pid: number) => Math.max(0, (after.get(pid)?.ticks ?? 0) - (before.get(pid)?.ticks ?? after.get(pid)?.ticks ?? 0));
  const servers = serverRoot === undefined ? new Set<number>() : tree(after, serverRoot);
  let server = 0;
  for (const pid of servers) server += delta(pid);
  const client = delta(process.pid) + extraClientS * TICK;
  const redis = redisPid === undefined ? 0 : delta(redisPid);
  const others: { name: string; pct: number }[] = [];
  for (const [pid, p] of after) {
    if (servers.has(pid) || pid === process.pid || pid === redisPid) continue;
    const d = delta(pid);
    if (d > 0) others.push({ name: `${p.comm} ${pid}`, pct: pct(d) });
  }
  others.sort((a, b) => b.pct - a.pct);
  // The machine's total also holds processes that started and ended inside the window.
  const other = Math.max(0, (busyS / wallS) * 100 - pct(server) - pct(client) - pct(redis));
  return { server: pct(server), client: pct(client), redis: pct(redis), other, busiest: others.slice(0, 3).filter((o) => o.pct >= 1).map((o) => `${o.name}: ${o.pct.toFixed(0)}%`) };
}

/** Waits (up to maxS) for a second in which the machine was busy less than 10% of a core. */
async function waitQuiet(maxS: number): Promise<number> {
  const until = Date.now() + maxS * 1000;
  for (;;) {
    const b0 = machineBusySeconds();
    await sleep(1000);
    const busy = (machineBusySeconds() - b0) * 100;
    if (busy < 10 || Date.now() >= until) return busy;
  }
}

// ---------------------------------------------------------------------------------------------
// Servers

interface Server {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly output: string[];
  stop(): Promise<number | null>;
}

/** Spawns `node --import tsx <args>` and resolves once a line of its output passes `ready`. */
async function spawnServer(name: string, args: string[], env: Record<string, string>, ready: (line: string) => boolean, timeoutMs = 60_000): Promise<Server> {
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve((exitCode = code))));
  let isReady = false;
  eachLine(proc, output, (line) => {
    if (ready(line)) isReady = true;
  });
  const server: Server = {
    name,
    pid: proc.pid!,
    url: `http://127.0.0.1:${port}`,
    output,
    stop: async () => {
      if (exitCode !== undefined) return exitCode;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 40_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (!isReady) {
    if (exitCode !== undefined) throw new Error(`${name} exited with ${exitCode} before it was ready:\n${output.slice(-20).join('\n')}`);
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${name} was not ready within ${timeoutMs} ms:\n${output.slice(-20).join('\n')}`);
    }
    await sleep(50);
  }
  // --pin: every thread of every process of the server on CPU 1 (the load stays on CPU 0).
  if (pinServers) for (const pid of tree(readProcs(), server.pid)) spawnSync('taskset', ['-a', '-p', '-c', '1', String(pid)], { stdio: 'ignore' });
  return server;
}

function startBare(processes: number): Promise<Server> {
  return processes === 1
    ? spawnServer('bare', ['bench/bare-server.ts'], {}, (l) => l.startsWith('listening '))
    : spawnServer(`bare x${processes}`, [SELF, '--bare-cluster', String(processes)], {}, (l) => l.startsWith('bare cluster ready'));
}

function startIdmint(processes: number, names: TestNames, runId: string): Promise<Server> {
  const env = { REDIS_URL: redisUrl, MYSQL_URL: names.mysqlUrl, REDIS_PREFIX: names.prefix, ADMIN_TOKEN, LOG_LEVEL: 'info', UDP_PORT: '0', GRPC_PORT: '0', NODE_ID: `scale-${runId}-p${processes}` };
  const readyMsg = processes === 1 ? 'idmint listening' : 'all serving processes ready';
  return spawnServer(`idmint x${processes}`, ['src/cli.ts', 'serve', '--processes', String(processes)], env, (l) => l.includes(`"msg":"${readyMsg}"`));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Redis

interface RedisCounters { evalCalls: number; cpuS: number; evalshaCalls: number; evalshaUsec: number }

async function redisCounters(r: Redis): Promise<RedisCounters> {
  const stats = await r.info('commandstats');
  const cpu = await r.info('cpu');
  let evalCalls = 0;
  for (const m of stats.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|eval_ro):calls=(\d+)/gm)) evalCalls += Number(m[2]);
  const sha = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(stats);
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? NaN);
  return { evalCalls, cpuS: field('used_cpu_user') + field('used_cpu_sys'), evalshaCalls: Number(sha?.[1] ?? 0), evalshaUsec: Number(sha?.[2] ?? 0) };
}

/** Redis usec per EVALSHA between two readings (commandstats: server-wide). */
const usecPerEvalsha = (a: RedisCounters, b: RedisCounters) => (b.evalshaUsec - a.evalshaUsec) / (b.evalshaCalls - a.evalshaCalls);

/**
 * The no-op script's Redis usec per EVALSHA in this run: `return 1` with the keys and
 * arguments of a take, `calls` times, 8 in flight (as in bench/take-cpu.ts).
 */
async function noopUsec(r: Redis, keys: readonly string[], args: readonly string[], calls = 20_000): Promise<number> {
  const sha = (await r.script('LOAD', 'return 1')) as string;
  const c0 = await redisCounters(r);
  for (let i = 0; i < calls; i += 8) await Promise.all(Array.from({ length: Math.min(8, calls - i) }, () => r.evalsha(sha, keys.length, ...keys, ...args)));
  return usecPerEvalsha(c0, await redisCounters(r));
}

/** A counter of the node's /metrics (summed over its series of that tag). */
async function metricOf(url: string, name: string, tag: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(`tag="${tag}"`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

async function redisPid(r: Redis): Promise<number | undefined> {
  const m = /^process_id:(\d+)/m.exec(await r.info('server'));
  return m ? Number(m[1]) : undefined;
}

interface RedisLimit {
  script: string;
  command: string;
  calls: number;
  clients: number;
  rps: number;
  p50?: number;
  p99?: number;
  takenAdvance: number;
  cpu: CpuWindow;
  redisCpu: number;
}

/** The take script's file (named take-<number of keys>.lua, as the loader wants). */
function takeScript(): { file: string; numKeys: number; lua: string } {
  const file = readdirSync(COMMANDS).find((f) => /^take-\d+\.lua$/.test(f));
  if (!file) throw new Error(`no take-<keys>.lua in ${COMMANDS}`);
  return { file, numKeys: Number(/\d+/.exec(file)![0]), lua: readFileSync(COMMANDS + file, 'utf8') };
}

/** The keys and arguments of the take script as idmint sends it for `tag`, seen with MONITOR while `trigger` runs. */
async function captureTake(r: Redis, sha: string | undefined, numKeys: number, tag: string, trigger: () => Promise<unknown>): Promise<{ sha: string; keys: string[]; args: string[] }> {
  const mon = await r.monitor();
  try {
    const seen = new Promise<{ sha: string; keys: string[]; args: string[] }>((resolve) => {
      mon.on('monitor', (_time: string, a: string[]) => {
        const cmd = String(a[0]).toLowerCase();
        if (cmd !== 'evalsha' || (sha !== undefined && String(a[1]).toLowerCase() !== sha) || Number(a[2]) !== numKeys) return;
        const keys = a.slice(3, 3 + numKeys);
        if (keys[0]?.includes(`{${tag}}:seg:`)) resolve({ sha: String(a[1]).toLowerCase(), keys, args: a.slice(3 + numKeys) });
      });
    });
    await trigger();
    return await Promise.race([seen, sleep(5000).then(() => Promise.reject(new Error(`no take of ${tag} with script ${sha} seen within 5 s`)))]);
  } finally {
    mon.disconnect();
  }
}

/** redis-benchmark of the take script against the segment key of `tag` (one ID per call). */
async function redisLimit(r: Redis, tag: string, trigger: () => Promise<unknown>, calls: number, clients: number, pid: number | undefined, serverRoot: number): Promise<RedisLimit> {
  const script = takeScript();
  await r.script('LOAD', script.lua);
  // The script idmint runs: take-<keys>.lua, or on a single Redis 7 server its pinned copy.
  const { sha, keys, args } = await captureTake(r, undefined, script.numKeys, tag, trigger);
  const key = keys[0];
  // ARGV[1] is n, the IDs wanted (see the script's header): one per call here.
  const benchArgs = ['EVALSHA', sha, String(keys.length), ...keys, '1', ...args.slice(1)];
  const url = new URL(redisUrl);
  const takenBefore = takenOf(await r.hgetall(key));
  const [seg0, end0] = (await r.hmget(key, 'cur', 'end')).map(Number);
  if (!(end0 - seg0 > calls)) throw new Error(`the segment of ${key} holds ${end0 - seg0 + 1} IDs, fewer than ${calls} calls`);
  const before = readProcs();
  const b0 = machineBusySeconds();
  const c0 = await redisCounters(r);
  const k0 = reapedChildrenSeconds();
  const t0 = performance.now();
  const res = spawnSync('redis-benchmark', ['-h', url.hostname, '-p', url.port || '6379', '-n', String(calls), '-c', String(clients), '--csv', ...benchArgs],
    { encoding: 'utf8', timeout: 120_000 });
  const wallS = (performance.now() - t0) / 1000;
  const c1 = await redisCounters(r);
  const cpu = cpuWindow(before, readProcs(), wallS, machineBusySeconds() - b0, serverRoot, pid, reapedChildrenSeconds() - k0);
  if (res.status !== 0) throw new Error(`redis-benchmark failed (${res.status}): ${res.stderr}`);
  const takenAdvance = takenOf(await r.hgetall(key)) - takenBefore;
  // --csv: a header line, then "name","rps","avg","min","p50","p95","p99","max" (7.x).
  const rows = res.stdout.trim().split('\n').map((l) => l.split(',').map((c) => c.replace(/"/g, '')));
  const head = rows[0];
  const row = rows[rows.length - 1];
  const col = (name: string) => { const i = head.indexOf(name); return i >= 0 ? Number(row[i]) : undefined; };
  const rps = col('rps') ?? Number(row[1]);
  return { script: script.file, command: benchArgs.join(' '), calls, clients, rps, p50: col('p50_latency_ms'), p99: col('p99_latency_ms'), takenAdvance, cpu, redisCpu: ((c1.cpuS - c0.cpuS) / wallS) * 100 };
}

// ---------------------------------------------------------------------------------------------
// Report

interface CaseResult {
  name: CaseName;
  processes: number;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  cpu: CpuWindow;
  /** Redis script calls per second during the case (server-wide: other clients count too). */
  evalsPerS: number;
  /** Global: takes per second the nodes sent for the tag (idmint_takes_total), and requests per take. */
  takesPerS: number;
  reqPerTake: number;
  /** Global: Redis usec per EVALSHA during the case, and of the no-op script measured after it. */
  usecPerTake: number;
  usecNoop: number;
  attempts: number;
  disturbed: boolean;
  checks: string;
  /** req/s of each round (one entry without --rounds). */
  roundsRps: number[];
}

const fmt = (v: number | undefined, d = 0) => (v === undefined || !Number.isFinite(v) ? '-' : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));

function table(rows: string[][], markdown: boolean): string {
  if (markdown) {
    const [head, ...body] = rows;
    return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i < 2 ? ' --- ' : ' ---: ')).join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n');
}

const CASE_LABEL: Record<CaseName, string> = { bare: 'bare Fastify route', node: '`GET /v1/id`, order node', global: '`GET /v1/id`, order global' };

function rows(results: CaseResult[], redis: RedisLimit | undefined): string[][] {
  const one = (c: CaseResult) => results.find((r) => r.name === c.name && r.processes === Math.min(...results.filter((x) => x.name === c.name).map((x) => x.processes)));
  const bare = (c: CaseResult) => results.find((r) => r.name === 'bare' && r.processes === c.processes);
  const out = [['case', 'processes', 'req/s', 'req/s range', '× fewest processes', '÷ bare', 'p50 ms', 'p99 ms', 'server CPU %', 'load gen CPU %', 'Redis CPU %', 'other CPU %', 'Redis calls/s', 'req per call', 'takes/s (nodes)', 'req per take (nodes)', 'Redis usec/take', 'no-op usec', 'take ÷ no-op']];
  for (const c of results) {
    out.push([
      CASE_LABEL[c.name], String(c.processes), fmt(c.rps), c.roundsRps.length > 1 ? `${fmt(Math.min(...c.roundsRps))}–${fmt(Math.max(...c.roundsRps))}` : '-', fmt(c.rps / one(c)!.rps, 2), c.name === 'bare' ? '1.00' : fmt(c.rps / (bare(c)?.rps ?? NaN), 2),
      fmt(c.p50, 2), fmt(c.p99, 2), fmt(c.cpu.server), fmt(c.cpu.client), fmt(c.cpu.redis), `${fmt(c.cpu.other)}${c.disturbed ? ' (disturbed)' : ''}`, fmt(c.evalsPerS),
      c.name === 'global' ? fmt(c.rps / c.evalsPerS, 1) : '-',
      c.name === 'global' ? fmt(c.takesPerS) : '-', c.name === 'global' ? fmt(c.reqPerTake, 1) : '-',
      c.name === 'global' ? fmt(c.usecPerTake, 2) : '-', c.name === 'global' ? fmt(c.usecNoop, 2) : '-', c.name === 'global' ? fmt(c.usecPerTake / c.usecNoop, 2) : '-',
    ]);
  }
  if (redis) {
    out.push([`redis-benchmark EVALSHA take (1 ID per call, ${redis.clients} clients)`, '-', fmt(redis.rps), '-', '-', '-', fmt(redis.p50, 3), fmt(redis.p99, 3), '-', fmt(redis.cpu.client), fmt(redis.redisCpu), fmt(redis.cpu.other), fmt(redis.rps), '1.0', '-', '-', '-', '-', '-']);
  }
  return out;
}


/** One row for the rounds of a case: the median of every figure. */
function medianOf(rs: CaseResult[], maxOther: number): CaseResult {
  if (rs.length === 1) return rs[0];
  const m = (f: (r: CaseResult) => number) => median(rs.map(f));
  const other = m((r) => r.cpu.other);
  return {
    ...rs[0],
    rps: m((r) => r.rps), p50: m((r) => r.p50), p99: m((r) => r.p99), requests: rs.reduce((a, r) => a + r.requests, 0),
    cpu: { server: m((r) => r.cpu.server), client: m((r) => r.cpu.client), redis: m((r) => r.cpu.redis), other, busiest: [...new Set(rs.flatMap((r) => r.cpu.busiest))].slice(0, 4) },
    evalsPerS: m((r) => r.evalsPerS), takesPerS: m((r) => r.takesPerS), reqPerTake: m((r) => r.reqPerTake), usecPerTake: m((r) => r.usecPerTake), usecNoop: m((r) => r.usecNoop), attempts: rs.reduce((a, r) => a + r.attempts, 0), disturbed: other > maxOther,
    checks: rs.map((r) => r.checks).join('; '), roundsRps: rs.map((r) => r.rps),
  };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const runId = randomBytes(4).toString('hex');
  const db = `idmint_b_${runId}`;
  const names: TestNames = { db, prefix: `b${runId}`, mysqlUrl: mysqlUrlFor(db) };
  const tags = { node: 'scale.node', global: 'scale.global', redis: 'scale.redis' };
  const cores = cpus().length;
  const loadBefore = loadavg();
  console.log(`idmint scale bench: processes ${opts.processesList.join(', ')}; ${opts.connections} connections, ${opts.duration} s per case after ${opts.warmup} s warm-up; ` +
    `node ${process.version}, ${cores} CPUs (${cpus()[0]?.model.trim() ?? '?'}); load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`);

  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinServers = true;
    spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  }
  const ownRedis = opts.privateRedis ? await RedisServer.start() : undefined;
  if (ownRedis) redisUrl = ownRedis.url;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const rPid = await redisPid(redis);
  const results: CaseResult[] = [];
  const problems: string[] = [];
  let limit: RedisLimit | undefined;
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    console.error('interrupted: finishing the current case, then cleaning up');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let tagsCreated = false;
  /** Keys and arguments of a take of the global tag, for the no-op script. */
  let takeShape: { keys: string[]; args: string[] } | undefined;

  const measure = async (name: CaseName, processes: number, server: Server, round: number): Promise<CaseResult> => {
    const path = name === 'bare' ? '/v1/id/bench' : `/v1/id/${tags[name]}`;
    const label = `${name} x${processes}${opts.rounds > 1 ? ` round ${round}` : ''}`;
    let best: CaseResult | undefined;
    for (let attempt = 1; attempt <= 1 + opts.retries && !interrupted; attempt++) {
      if (opts.waitQuiet > 0) {
        const busy = await waitQuiet(opts.waitQuiet);
        if (busy >= 10) console.log(`(machine still busy: ${fmt(busy)}% of a core)`);
      }
      // Global: every ID of the case must lie above a batch fetched just before it.
      const above = name === 'global' ? BigInt((await fetchIds(server.url, tags.global, 5)).at(-1)!) : 0n;
      const check: Check = name === 'bare' ? { kind: 'constant', body: '{"id":"1"}' } : { kind: 'ids', above };
      process.stdout.write(`${label}${attempt > 1 ? ` (attempt ${attempt})` : ''}: `);
      if (opts.warmup > 0) {
        const w = await runLoad(server.url + path, opts.connections, opts.warmup, check);
        const failed = w.non2xx + w.errors + w.timeouts;
        if (failed + w.violations > 0) problems.push(`${label} warm-up: ${failed} failed, ${w.violations} broken checks ${w.examples.join(' | ')}`);
        if (check.kind === 'ids' && name === 'global') check.above = maxOf(w.ids, check.above);
      }
      const before = readProcs();
      const b0 = machineBusySeconds();
      const takes0 = name === 'global' ? await metricOf(server.url, 'idmint_takes_total', tags.global) : 0;
      const issued0 = name === 'global' ? await metricOf(server.url, 'idmint_ids_issued_total', tags.global) : 0;
      const r0 = await redisCounters(redis);
      const t0 = performance.now();
      const r = await runLoad(server.url + path, opts.connections, opts.duration, check);
      const wallS = (performance.now() - t0) / 1000;
      const r1 = await redisCounters(redis);
      let takes = NaN;
      let issued = NaN;
      let usecNoop = NaN;
      if (name === 'global') {
        takes = (await metricOf(server.url, 'idmint_takes_total', tags.global)) - takes0;
        issued = (await metricOf(server.url, 'idmint_ids_issued_total', tags.global)) - issued0;
        takeShape ??= await captureTake(redis, undefined, takeScript().numKeys, tags.global, () => fetchIds(server.url, tags.global, 1));
        usecNoop = await noopUsec(redis, takeShape.keys, takeShape.args);
      }
      const cpu = cpuWindow(before, readProcs(), wallS, machineBusySeconds() - b0, server.pid, rPid);
      let checks = `${fmt(r.ok)} bodies {"id":"1"}`;
      if (name !== 'bare') {
        const dup = duplicatesIn(r.ids);
        if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
        if (r.ids.length !== r.ok) problems.push(`${label}: ${r.ok} answers but ${r.ids.length} IDs checked`);
        checks = `${fmt(r.ids.length)} IDs distinct, increasing per connection${name === 'global' ? `, above ${above}` : ''}`;
      }
      const failed = r.non2xx + r.errors + r.timeouts;
      if (failed > 0) problems.push(`${label}: ${failed} failed requests ${r.examples.join(' | ')}`);
      if (r.violations > 0) problems.push(`${label}: ${r.violations} broken checks: ${r.examples.join(' | ')}`);
      const res: CaseResult = {
        name, processes, rps: r.rps, p50: r.p50, p99: r.p99, requests: r.ok, cpu,
        evalsPerS: (r1.evalCalls - r0.evalCalls) / wallS, takesPerS: takes / wallS, reqPerTake: issued / takes,
        usecPerTake: name === 'global' ? usecPerEvalsha(r0, r1) : NaN, usecNoop, attempts: attempt, disturbed: cpu.other > opts.maxOther, checks, roundsRps: [r.rps],
      };
      console.log(`${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 2)} ms; CPU % server ${fmt(cpu.server)}, load gen ${fmt(cpu.client)}, Redis ${fmt(cpu.redis)}, other ${fmt(cpu.other)}` +
        (name === 'global' ? `; ${fmt(res.takesPerS)} takes/s, ${fmt(res.reqPerTake, 1)} req/take, ${fmt(res.usecPerTake, 2)} usec/take vs no-op ${fmt(usecNoop, 2)}` : '') +
        (cpu.busiest.length ? ` (${cpu.busiest.join(', ')})` : ''));
      if (!best || best.disturbed) best = res;
      if (!res.disturbed) break;
    }
    return best!;
  };

  try {
    for (const processes of opts.processesList) {
      if (interrupted) break;
      const idmintCases = opts.cases.filter((c) => c !== 'bare');
      const needRedisKey = !limit && opts.redisRequests > 0;
      // Both servers run side by side (an idle one costs next to nothing), so rounds interleave.
      const bare = opts.cases.includes('bare') ? await startBare(processes) : undefined;
      let idmint: Server | undefined;
      try {
        if (idmintCases.length > 0 || needRedisKey) {
          idmint = await startIdmint(processes, names, runId);
          if (!tagsCreated) {
            await createTag(idmint.url, { tag: tags.node, mode: 'segment', order: 'node' });
            await createTag(idmint.url, { tag: tags.global, mode: 'segment', order: 'global' });
            await createTag(idmint.url, { tag: tags.redis, mode: 'segment', order: 'global', step: 100_000_000, min_step: 100_000_000, max_step: 100_000_000 });
            tagsCreated = true;
          }
          for (const t of Object.values(tags)) await fetchIds(idmint.url, t, 1); // cold start: first segments
        }
        const runs: CaseResult[] = [];
        for (let round = 1; round <= opts.rounds && !interrupted; round++) {
          for (const name of opts.cases) if (!interrupted) runs.push(await measure(name, processes, name === 'bare' ? bare! : idmint!, round));
        }
        for (const name of opts.cases) {
          const rs = runs.filter((r) => r.name === name);
          if (rs.length) results.push(medianOf(rs, opts.maxOther));
        }
        if (idmint && needRedisKey && !interrupted) {
          const server = idmint;
          process.stdout.write(`redis-benchmark: EVALSHA take, ${fmt(opts.redisRequests)} calls, ${opts.connections} clients: `);
          limit = await redisLimit(redis, tags.redis, () => fetchIds(server.url, tags.redis, 1), opts.redisRequests, opts.connections, rPid, server.pid);
          console.log(`${fmt(limit.rps)} calls/s; Redis CPU ${fmt(limit.redisCpu)}%, other ${fmt(limit.cpu.other)}%`);
          if (limit.takenAdvance !== opts.redisRequests) problems.push(`redis-benchmark: the key's taken counter moved by ${limit.takenAdvance}, not ${opts.redisRequests}`);
        }
      } finally {
        await bare?.stop();
        if (idmint) {
          const code = await idmint.stop();
          if (code !== 0) problems.push(`${idmint.name} exited with ${code} on SIGTERM`);
          const errs = logLines(idmint.output).filter((l) => Number(l.level) >= 50);
          if (errs.length) problems.push(`${idmint.name} logged ${errs.length} errors; first: ${JSON.stringify(errs[0]).slice(0, 300)}`);
        }
      }
    }
  } finally {
    redis.disconnect();
    await ownRedis?.stop();
    await cleanup(names, ownRedis ? undefined : redisUrl).catch((err: Error) => console.error(`cleanup of ${names.db} / ${names.prefix} failed: ${err.message}`));
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const ok = problems.length === 0 && !interrupted;
  console.log('');
  console.log(table(rows(results, limit), false));
  console.log('(CPU % is of one core over the measured window; "other" is every process but the servers, the load generator and Redis.)');
  for (const c of results) console.log(`check ${c.name} x${c.processes}: ${c.checks}`);
  for (const p of problems) console.log(`FAIL: ${p}`);
  console.log(ok ? 'bench OK (answers correct, no errors)' : 'bench FAILED');

  const full = opts.cases.length === ALL_CASES.length && opts.processesList.length > 1 && limit !== undefined;
  if (opts.write && full && !interrupted) {
    mkdirSync(RESULTS, { recursive: true });
    const disturbed = results.filter((c) => c.disturbed);
    const md = [
      '# idmint scaling benchmark (`--processes`)',
      '',
      `- command: \`npm run bench:scale --${process.argv.slice(2).map((a) => ` ${a}`).join('')}\``,
      `- date: ${new Date().toISOString()}`,
      `- machine: ${cores} CPUs (${cpus()[0]?.model.trim() ?? '?'}), node ${process.version}; load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`,
      `- load: autocannon in the bench process (one thread), ${opts.connections} keep-alive connections over loopback, pipelining 1, ${opts.duration} s per case after a ${opts.warmup} s warm-up` +
        (opts.rounds > 1 ? `; ${opts.rounds} interleaved rounds per process count, medians shown with the range of req/s` : ''),
      opts.pin ? '- pinned (taskset): every server process on CPU 1, the load generator (this process) on CPU 0; Redis unpinned' : '- not pinned: servers, load generator and Redis share both CPUs',
      `- servers: idmint \`serve --processes N\` and the bare route (N > 1: N copies under node's cluster module) share the ${cores} CPUs with the load generator and Redis`,
      `- a case is run again (up to ${opts.retries} times) when other processes used more than ${opts.maxOther}% of a core; ${disturbed.length ? `still disturbed: ${disturbed.map((c) => `${c.name} x${c.processes}`).join(', ')}` : 'no case stayed disturbed'}`,
      `- Redis: ${ownRedis ? 'a redis-server of this run alone (--private-redis): its commandstats count only this run' : `the shared server at ${redisUrl}: commandstats are server-wide, other clients count too`}`,
      `- idmint settings from the environment: ${Object.entries(process.env).filter(([k]) => k.startsWith('COALESCE_') || k === 'TAKE_PIN').map(([k, v]) => `${k}=${v}`).join(' ') || 'none (defaults)'}`,
      `- result: ${ok ? 'OK (answers correct, no errors)' : 'FAILED'}`,
      '',
      table(rows(results, limit), true),
      '',
      'CPU % is of one core over the measured window. "server" is the idmint (or bare) process tree,',
      'primary included; "load gen" is autocannon, in the bench process (for the redis-benchmark row:',
      'redis-benchmark itself); "Redis CPU" and "Redis calls/s" are server-wide, so other clients of',
      'the same Redis count too; "other" is what every other process used (well above 0: a disturbed',
      'figure). "× fewest processes" compares a case with itself at the smallest process count; "req per',
      'call" is how many requests of a global-order case one Redis script call served (server-wide);',
      '"takes/s (nodes)" and "req per take (nodes)" come from the nodes\' own idmint_takes_total and',
      'idmint_ids_issued_total of the tag (exact, whatever else uses Redis). "Redis usec/take" is',
      'commandstats usec per EVALSHA during the case; "no-op usec" the same for `return 1` with the',
      'keys and arguments of a take, measured right after the case (8 calls in flight).',
      '',
      '## Other processes during each case',
      '',
      '| case | processes | runs (rounds and reruns) | other CPU % (median) | busiest other processes |',
      '| --- | ---: | ---: | ---: | --- |',
      ...results.map((c) => `| ${c.name} | ${c.processes} | ${c.attempts} | ${fmt(c.cpu.other)} | ${c.cpu.busiest.join(', ') || '-'} |`),
      ...(limit ? [`| redis-benchmark | - | 1 | ${fmt(limit.cpu.other)} | ${limit.cpu.busiest.join(', ') || '-'} |`] : []),
      '',
      ...results.map((c) => `- check ${c.name} x${c.processes}: ${c.checks}`),
      ...(limit ? [`- redis-benchmark (${limit.script}): \`redis-benchmark -n ${limit.calls} -c ${limit.clients} ${limit.command}\``] : []),
      ...(limit ? [`- check redis-benchmark: the segment key's \`taken\` counter advanced by ${fmt(limit.takenAdvance)} for ${fmt(limit.calls)} calls`] : []),
      ...problems.map((p) => `- FAIL: ${p}`),
      '',
    ].join('\n');
    writeFileSync(`${RESULTS}scale-latest.md`, md);
    console.log('written: bench/results/scale-latest.md');
  } else if (opts.write) {
    console.log('results not written (only a run of all cases, more than one process count and redis-benchmark updates bench/results/scale-latest.md)');
  }
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// `--bare-cluster N`: N bare routes sharing one port (the baseline of N processes).

if (process.argv[2] === '--bare-cluster') {
  if (cluster.isWorker) {
    await import('./bare-server.js');
  } else {
    const n = Number(process.argv[3]);
    let listening = 0;
    cluster.on('listening', () => {
      if (++listening === n) process.stdout.write(`bare cluster ready ${n}\n`);
    });
    for (let i = 0; i < n; i++) cluster.fork();
    const stop = () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
      cluster.on('exit', () => {
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  }
} else {
  main().then(
    (code) => process.exit(code),
    (err: Error) => {
      console.error(`bench failed: ${err.stack ?? err.message}`);
      process.exit(1);
    },
  );
}
