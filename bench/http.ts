// HTTP benchmark of the ID route, run by `npm run bench`.
//
// In one run, at C concurrent keep-alive connections over loopback (autocannon, in this
// process), for a fixed duration per case after an uncounted warm-up, it measures:
//   baseline  a bare Fastify route answering a constant {"id":"1"} (bench/bare-server.ts)
//   node      GET /v1/id/:tag of a segment tag with order "node"   (IDs from process memory)
//   global    GET /v1/id/:tag of a segment tag with order "global" (coalesced Redis takes)
//   snowflake GET /v1/id/:tag of a snowflake tag
//   rule      GET /v1/id/:tag?app=bench of a rule tag with order "node" (formatted strings)
// The baseline and idmint each run as a child process of their own; idmint runs against the
// real Redis and MySQL/MariaDB with a database and key prefix of its own, removed at the end.
//
// Besides speed it checks the answers: every 2xx body of an idmint case is {"id":"<n>"}, IDs
// strictly increase on each connection (requests on one connection are sequential), all IDs of
// a case are distinct, and every one lies between a batch fetched just before the case and one
// fetched just after it (rule IDs: distinct and of the template's shape). Any non-2xx, socket error, timeout or broken check fails the run
// (exit code 1); a missed speed target is reported as MISS and does not.
//
// Flags: --duration N (s, default 10)  --warmup N (s, default 2)  --connections N (default 50)
//        --rounds N (repeat the cases N times, interleaved; the table shows medians, and each
//        ratio is the median of the ratios measured within a round)
//        --cases baseline,node,global,snowflake,rule   --env KEY=VALUE (extra env for the idmint process,
//        repeatable)  --cpu-prof (write .cpuprofile files of both servers to
//        bench/results/profiles/)  --no-write (do not update bench/results/http-latest.*)
//        --pin (taskset: the server under test on CPU 1, this process on CPU 0)
// Results: bench/results/http-latest.json and bench/results/http-latest.md (full runs only).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { ADMIN_TOKEN, REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../test/helpers/env.js';
import { freePort } from '../test/helpers/redis-server.js';
import { pick, readOptions } from './args.js';
import { duplicatesIn, maxOf, runLoad, type Check, type LoadResult } from './load.js';
import { median } from './stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  cases: CaseName[];
  env: Record<string, string>;
  cpuProf: boolean;
  /** Pin the server under test to CPU 1 and the load generator to CPU 0 (taskset). */
  pin: boolean;
  write: boolean;
}
type CaseName = 'baseline' | 'node' | 'global' | 'snowflake' | 'rule';
const ALL_CASES: CaseName[] = ['baseline', 'node', 'global', 'snowflake', 'rule'];

/** The idmint cases: the tag each one creates and the request it measures. */
const ID_CASES: Record<Exclude<CaseName, 'baseline'>, { tag: string; query: string; create: Record<string, unknown>; pattern?: RegExp }> = {
  node: { tag: 'bench.node', query: '', create: { mode: 'segment', order: 'node' } },
  global: { tag: 'bench.global', query: '', create: { mode: 'segment', order: 'global' } },
  snowflake: { tag: 'bench.sf', query: '', create: { mode: 'snowflake' } },
  // Rule IDs are strings: checked against their pattern and for being distinct.
  rule: {
    tag: 'bench.rule',
    query: '?app=bench',
    create: { mode: 'rule', order: 'node', template: 'B{yyyy}{MM}{dd}{counter:9}', min_counter: 1, max_counter: 999_999_999, reset_seconds: 86400 },
    pattern: /^B\d{17}$/,
  },
};

function parseArgs(argv: string[]): Options {
  const o: Options = { duration: 10, warmup: 2, connections: 50, rounds: 1, cases: [...ALL_CASES], env: {}, cpuProf: false, write: true, pin: false };
  const usage = 'npm run bench -- [--duration S] [--warmup S] [--connections N] [--rounds N] [--cases baseline,node,global,snowflake,rule] [--env KEY=VALUE] [--cpu-prof] [--no-write] [--pin]';
  readOptions(argv, usage, (a) => {
    switch (a.flag) {
      case '--duration': o.duration = a.number(1); break;
      case '--warmup': o.warmup = a.number(0); break;
      case '--connections': o.connections = a.whole(1); break;
      case '--rounds': o.rounds = a.whole(1); break;
      case '--cases': o.cases = pick(a.flag, a.list(), ALL_CASES); break;
      case '--env': {
        const kv = a.text();
        const eq = kv.indexOf('=');
        if (eq <= 0) throw new Error(`--env needs KEY=VALUE, got "${kv}"`);
        o.env[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--cpu-prof': o.cpuProf = true; break;
      case '--no-write': o.write = false; break;
      case '--pin': o.pin = true; break;
      default: return false;
    }
    return true;
  });
  return o;
}

// ---------------------------------------------------------------------------------------------
// Child processes

interface Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly output: string[];
  stop(): Promise<void>;
}


/** Spawns `node [flags] --import tsx <script...>` and resolves once its port answers HTTP. */
let PIN = false;

async function spawnServer(name: string, script: string[], env: Record<string, string>, nodeFlags: string[], timeoutMs = 30000): Promise<Child> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const argv = [...nodeFlags, '--import', 'tsx', ...script];
  // --pin: the server on CPU 1, this process (the load) on CPU 0 (see main).
  const proc = spawn(PIN ? 'taskset' : process.execPath, PIN ? ['-c', '1', process.execPath, ...argv] : argv, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) output.push(line);
    if (output.length > 500) output.splice(0, output.length - 500);
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) => proc.once('exit', (code) => { exitCode = code; resolve(); }));
  const child: Child = {
    name,
    proc,
    pid: proc.pid!,
    url,
    output,
    stop: async () => {
      if (exitCode !== undefined) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(t);
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`${name} exited with ${exitCode} before listening:\n${output.join('\n')}`);
    try {
      await fetch(`${url}/`, { signal: AbortSignal.timeout(1000) });
      return child;
    } catch {
      await sleep(100);
    }
  }
  await child.stop();
  throw new Error(`${name} did not listen within ${timeoutMs} ms:\n${output.join('\n')}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds (user + system) a process has used, from /proc (Linux); NaN elsewhere. */
function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/** CPU seconds all CPUs of the machine spent busy (not idle, not waiting on I/O). */
function machineBusySeconds(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return (total - f[3] - f[4]) / 100;
  } catch {
    return NaN;
  }
}

function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

// ---------------------------------------------------------------------------------------------
// Redis-side counters (the Redis server is shared: other clients' calls are counted too)

interface RedisCounters {
  evalCalls: number;
  evalUsec: number;
  cpuSeconds: number;
}

async function redisCounters(r: Redis): Promise<RedisCounters> {
  const stats = await r.info('commandstats');
  const cpu = await r.info('cpu');
  let evalCalls = 0;
  let evalUsec = 0;
  for (const m of stats.matchAll(/^cmdstat_(evalsha|eval|evalsha_ro|eval_ro):calls=(\d+),usec=(\d+)/gm)) {
    evalCalls += Number(m[2]);
    evalUsec += Number(m[3]);
  }
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? NaN);
  return { evalCalls, evalUsec, cpuSeconds: field('used_cpu_user') + field('used_cpu_sys') };
}

// ---------------------------------------------------------------------------------------------
// idmint helpers

const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

async function createTag(url: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${url}/v1/admin/tags`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`creating tag ${JSON.stringify(body)} failed: ${res.status} ${await res.text()}`);
}

async function fetchBatch(url: string, tag: string, count: number, query = ''): Promise<string[]> {
  const path = `/v1/ids/${tag}?count=${count}${query.replace('?', '&')}`;
  const res = await fetch(url + path);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { ids: string[] }).ids;
}

async function showTag(url: string, tag: string): Promise<unknown> {
  const res = await fetch(`${url}/v1/admin/tags/${tag}`, { headers: adminHeaders });
  return res.status === 200 ? res.json() : { status: res.status };
}

function increasing(xs: bigint[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i] > xs[i - 1])) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Report

interface CaseResult extends Omit<LoadResult, 'ids' | 'strings' | 'examples'> {
  name: CaseName;
  /** 1-based round; 0 for the median row of several rounds. */
  round: number;
  path: string;
  ratioRps?: number;
  ratioP99?: number;
  examples: string[];
  checks: string[];
  cpu: { server: number; client: number; redis: number; other: number };
  redisEvalCalls: number;
  requestsPerEval?: number;
  redisEvalUsecPerCall?: number;
}

interface Target {
  name: string;
  want: string;
  value: number;
  pass: boolean;
}

const fmt = (v: number | undefined, d = 0) => (v === undefined || !Number.isFinite(v) ? '-' : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));

function table(rows: string[][], markdown: boolean): string {
  if (markdown) {
    const [head, ...body] = rows;
    return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n');
}

function mainRows(cases: CaseResult[]): string[][] {
  return [
    ['case', 'req/s', 'p50 ms', 'p99 ms', 'req/s ÷ base', 'p99 ÷ base', 'non-2xx+errors'],
    ...cases.map((c) => [c.name, fmt(c.rps), fmt(c.p50, 3), fmt(c.p99, 3), fmt(c.ratioRps, 3), fmt(c.ratioP99, 3), String(c.non2xx + c.errors + c.timeouts)]),
  ];
}

/** The baseline measured in the same round as r. */
function baselineOf(runs: CaseResult[], r: CaseResult): CaseResult | undefined {
  return runs.find((b) => b.name === 'baseline' && b.round === r.round);
}

/** Every round of a multi-round run, with its ratios to the same round's baseline. */
function roundRows(runs: CaseResult[]): string[][] {
  return [
    ['case', 'round', 'req/s', 'p99 ms', 'req/s ÷ base', 'p99 ÷ base'],
    ...runs.map((r) => {
      const b = baselineOf(runs, r);
      return [r.name, String(r.round), fmt(r.rps), fmt(r.p99, 3), b ? fmt(r.rps / b.rps, 3) : '-', b ? fmt(r.p99 / b.p99, 3) : '-'];
    }),
  ];
}

function diagRows(cases: CaseResult[]): string[][] {
  return [
    ['case', 'requests', 'p90 ms', 'max ms', 'server CPU %', 'server µs/req', 'client CPU %', 'Redis CPU %', 'other CPU %', 'Redis evals', 'req per eval', 'Redis µs/eval'],
    ...cases.map((c) => [
      c.round > 0 ? `${c.name} #${c.round}` : c.name, fmt(c.ok), fmt(c.p90, 3), fmt(c.max, 1), fmt(c.cpu.server), fmt((c.cpu.server * 1e4) / c.rps, 1), fmt(c.cpu.client), fmt(c.cpu.redis), fmt(c.cpu.other),
      fmt(c.redisEvalCalls), fmt(c.requestsPerEval, 1), fmt(c.redisEvalUsecPerCall, 1),
    ]),
  ];
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  const profDir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });

  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    spawnSync('taskset', ['-pc', '0', String(process.pid)], { stdio: 'ignore' });
    PIN = true;
  }
  const loadBefore = loadavg()[0];
  console.log(`idmint HTTP bench: ${opts.connections} connections, ${opts.duration} s per case after ${opts.warmup} s warm-up; ` +
    `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})`);

  const children: Child[] = [];
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    console.error('interrupted: cleaning up');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const runs: CaseResult[] = [];
  const problems: string[] = [];
  const warnings: string[] = [];
  try {
    const bare = opts.cases.includes('baseline') ? await spawnServer('baseline', ['bench/bare-server.ts'], {}, nodeFlags) : undefined;
    if (bare) children.push(bare);
    const needIdmint = opts.cases.some((c) => c !== 'baseline');
    const idmint = needIdmint
      ? await spawnServer('idmint', ['src/cli.ts', 'serve'], {
          REDIS_URL,
          MYSQL_URL: names.mysqlUrl,
          REDIS_PREFIX: names.prefix,
          ADMIN_TOKEN,
          LOG_LEVEL: 'warn',
          UDP_PORT: '0',
          GRPC_PORT: '0',
          NODE_ID: `bench-${id}`,
          ...opts.env,
        }, nodeFlags)
      : undefined;
    if (idmint) children.push(idmint);

    if (idmint) {
      for (const c of Object.values(ID_CASES)) {
        await createTag(idmint.url, { tag: c.tag, ...c.create });
        // Cold start: the first take of each tag waits for its first segment or lease.
        await fetchBatch(idmint.url, c.tag, 1, c.query);
      }
    }

    const measure = async (name: CaseName, round: number): Promise<CaseResult> => {
      const server = name === 'baseline' ? bare! : idmint!;
      const idCase = name === 'baseline' ? undefined : ID_CASES[name];
      const path = idCase ? `/v1/id/${idCase.tag}${idCase.query}` : '/v1/id/bench';
      const label = opts.rounds > 1 ? `${name} (round ${round})` : name;
      const checks: string[] = [];
      const numeric = idCase !== undefined && idCase.pattern === undefined;
      let before: bigint[] = [];
      if (idCase && numeric) {
        before = (await fetchBatch(server.url, idCase.tag, 10, idCase.query)).map(BigInt);
        if (!increasing(before)) problems.push(`${label}: batch before the run is not increasing: ${before.join(',')}`);
      }
      const check: Check = !idCase
        ? { kind: 'constant', body: '{"id":"1"}' }
        : idCase.pattern
          ? { kind: 'strings', pattern: idCase.pattern }
          : { kind: 'ids', above: before[before.length - 1] ?? 0n };

      if (opts.warmup > 0) {
        process.stdout.write(`${label}: warm-up ${opts.warmup} s... `);
        const w = await runLoad(server.url + path, opts.connections, opts.warmup, check);
        if (w.non2xx + w.errors + w.timeouts + w.violations > 0) {
          problems.push(`${label} warm-up: ${w.non2xx} non-2xx, ${w.errors} errors, ${w.timeouts} timeouts, ${w.violations} broken checks ${w.examples.join(' | ')}`);
        }
        if (check.kind === 'ids') check.above = maxOf(w.ids, check.above);
      } else process.stdout.write(`${label}: `);
      process.stdout.write(`measuring ${opts.duration} s... `);
      const r0 = await redisCounters(redis);
      const s0 = procCpuSeconds(server.pid);
      const c0 = selfCpuSeconds();
      const m0 = machineBusySeconds();
      const t0 = process.hrtime.bigint();
      const r = await runLoad(server.url + path, opts.connections, opts.duration, check);
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const m1 = machineBusySeconds();
      const s1 = procCpuSeconds(server.pid);
      const c1 = selfCpuSeconds();
      const r1 = await redisCounters(redis);

      if (idCase && numeric) {
        const after = (await fetchBatch(server.url, idCase.tag, 10, idCase.query)).map(BigInt);
        if (!increasing(after)) problems.push(`${label}: batch after the run is not increasing: ${after.join(',')}`);
        const lo = before[before.length - 1];
        const hi = after[0];
        if (!(hi > lo)) problems.push(`${label}: batch after the run (${hi}) is not above the batch before it (${lo})`);
        checks.push(`batches before/after increase (${lo} < ${hi})`);
        const top = maxOf(r.ids, lo);
        const dup = duplicatesIn(r.ids);
        if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
        if (r.ids.length && !(top < hi)) problems.push(`${label}: an ID of the run (${top}) is not below the batch fetched after it (${hi})`);
        if (r.ids.length !== r.ok) problems.push(`${label}: ${r.ok} 2xx answers but ${r.ids.length} IDs checked`);
        checks.push(`${fmt(r.ids.length)} IDs distinct, increasing per connection, within (${lo}, ${hi})`);
      } else if (idCase) {
        const dup = duplicatesIn(r.strings);
        if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
        if (r.strings.length !== r.ok) problems.push(`${label}: ${r.ok} 2xx answers but ${r.strings.length} IDs checked`);
        checks.push(`${fmt(r.strings.length)} IDs distinct, matching ${idCase.pattern}`);
      } else {
        checks.push(`${fmt(r.ok)} bodies equal {"id":"1"}`);
      }
      if (r.non2xx + r.errors + r.timeouts > 0) {
        problems.push(`${label}: ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors, ${r.timeouts} timeouts ${r.examples.join(' | ')}`);
      }
      if (r.violations > 0) problems.push(`${label}: ${r.violations} broken answer checks: ${r.examples.join(' | ')}`);

      const evals = r1.evalCalls - r0.evalCalls;
      const cpu = {
        server: ((s1 - s0) / wall) * 100,
        client: ((c1 - c0) / wall) * 100,
        redis: ((r1.cpuSeconds - r0.cpuSeconds) / wall) * 100,
        other: 0,
      };
      cpu.other = Math.max(0, ((m1 - m0) / wall) * 100 - cpu.server - cpu.client - cpu.redis);
      const { ids: _ids, strings: _strings, ...rest } = r;
      console.log(`${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 3)} ms${cpu.other > 15 ? ` (other processes used ${fmt(cpu.other)}% of a core)` : ''}`);
      return {
        ...rest,
        name,
        round,
        path,
        checks,
        cpu,
        redisEvalCalls: evals,
        requestsPerEval: name === 'baseline' || evals === 0 ? undefined : r.ok / evals,
        redisEvalUsecPerCall: evals === 0 ? undefined : (r1.evalUsec - r0.evalUsec) / evals,
      };
    };

    for (let round = 1; round <= opts.rounds && !interrupted; round++) {
      for (const name of opts.cases) {
        if (interrupted) break;
        runs.push(await measure(name, round));
      }
    }

    if (idmint) {
      const warn = idmint.output.filter((l) => l.includes('"level":40') || l.includes('"level":50') || l.includes('"level":60'));
      if (warn.length) warnings.push(`idmint logged ${warn.length} warnings/errors; last: ${warn.slice(-3).join(' / ')}`);
      for (const t of Object.values(ID_CASES).map((c) => c.tag)) {
        const shown = (await showTag(idmint.url, t).catch(() => undefined)) as { step?: number; state?: { shards?: { step?: number; segments_used?: number }[] } } | undefined;
        const sh = shown?.state?.shards?.[0];
        if (sh) warnings.push(`tag ${t} after the run: ${sh.segments_used} segments used, step now ${sh.step}`);
      }
    }
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    redis.disconnect();
    await cleanup(names).catch((err: Error) => console.error(`cleanup of ${names.db} / ${names.prefix} failed: ${err.message}`));
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  // One row per case: the median over rounds of each figure.
  const results: CaseResult[] = [];
  for (const name of opts.cases) {
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
      cpu: { server: med((r) => r.cpu.server)!, client: med((r) => r.cpu.client)!, redis: med((r) => r.cpu.redis)!, other: med((r) => r.cpu.other)! },
      redisEvalCalls: rs.reduce((a, r) => a + r.redisEvalCalls, 0),
      requestsPerEval: med((r) => r.requestsPerEval),
      redisEvalUsecPerCall: med((r) => r.redisEvalUsecPerCall),
      checks: rs.flatMap((r) => r.checks.map((c) => `round ${r.round}: ${c}`)),
      examples: rs.flatMap((r) => r.examples),
    });
  }

  // Ratios and targets. Each round measures the baseline and every case back to back, so a
  // ratio is taken within a round and the median over rounds is shown: a slow spell of the
  // machine then moves both sides of one ratio instead of one side of the median.
  const base = results.find((c) => c.name === 'baseline');
  if (base) for (const c of results) {
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
      targets.push({ name: 'node req/s ≥ 0.95 × bare', want: '≥ 0.95', value: node.ratioRps!, pass: node.ratioRps! >= 0.95 });
      targets.push({ name: 'node p99 ≤ 1.2 × bare p99', want: '≤ 1.2', value: node.ratioP99!, pass: node.ratioP99! <= 1.2 });
    }
    if (glob) {
      targets.push({ name: 'global req/s ≥ 0.85 × bare', want: '≥ 0.85', value: glob.ratioRps!, pass: glob.ratioRps! >= 0.85 });
      targets.push({ name: 'global p99 ≤ 1.2 × bare p99', want: '≤ 1.2', value: glob.ratioP99!, pass: glob.ratioP99! <= 1.2 });
    }
    const sf = byName('snowflake');
    if (sf) targets.push({ name: 'snowflake req/s ≥ 0.95 × bare', want: '≥ 0.95', value: sf.ratioRps!, pass: sf.ratioRps! >= 0.95 });
  }
  const busy = results.filter((c) => c.cpu.other > 15);
  if (busy.length) warnings.push(`other processes were busy during ${busy.map((c) => c.name).join(', ')} (see "other CPU %"): figures are disturbed`);

  const ok = problems.length === 0 && !interrupted;
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

  const full = ALL_CASES.every((c) => results.some((r) => r.name === c));
  if (opts.write && full && !interrupted) {
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
    writeFileSync(`${RESULTS}http-latest.json`, JSON.stringify({ ...meta, ok, cases: results, targets, problems, warnings }, null, 2) + '\n');
    const md = [
      '# idmint HTTP benchmark (latest run)',
      '',
      `- date: ${meta.date}`,
      `- node ${meta.node}, ${meta.cpus} CPUs (${meta.cpuModel})`,
      `- ${meta.connections} connections, ${meta.durationS} s per case after a ${meta.warmupS} s warm-up${meta.rounds > 1 ? `, ${meta.rounds} interleaved rounds (medians shown; a ratio is the median of the per-round ratios)` : ''}`,
      `- 1-minute load average before the run: ${meta.loadavg1mBefore}`,
      `- client: ${meta.client}`,
      ...(Object.keys(opts.env).length ? [`- idmint env: ${Object.entries(opts.env).map(([k, v]) => `${k}=${v}`).join(' ')}`] : []),
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
      ...(opts.rounds > 1 ? ['Every round (the baseline and each case measured back to back):', '', table(roundRows(runs), true), ''] : []),
      ...results.flatMap((c) => c.checks.map((ch) => `- check ${c.name}: ${ch}`)),
      ...problems.map((p) => `- FAIL: ${p}`),
      '',
    ].join('\n');
    writeFileSync(`${RESULTS}http-latest.md`, md);
    console.log(`written: bench/results/http-latest.json, bench/results/http-latest.md`);
  } else if (opts.write) {
    console.log('results not written (only a full run of all cases updates bench/results/http-latest.*)');
  }
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`bench failed: ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
