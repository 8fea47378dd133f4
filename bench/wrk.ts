// HTTP benchmark of the ID route under wrk, run by `npm run bench:wrk`: a C load generator that
// is not the limit, so the figures are the server's.
//
// The servers run as child processes on CPU 1, wrk (one thread, `-t 1`) and this process on
// CPU 0 (tools/cpu.ts pinProcess, taskset). The cases, each C keep-alive connections over
// loopback (--connections, default 50):
//   bare       a bare Fastify route answering a constant {"id":"1"} (bench/bare-server.ts): the baseline
//   wide       the bare route at twice the connections (at the server's limit: the same rate or a little more)
//   node       GET /v1/id/:tag of a segment tag with order "node"   (IDs from process memory)
//   global     GET /v1/id/:tag of a segment tag with order "global" (coalesced Redis takes)
//   snowflake  GET /v1/id/:tag of a snowflake tag
//   rule       GET /v1/id/:tag?app=bench of a rule tag with order "node"
// idmint is this checkout's src/ (bench/server.ts), against the real Redis and MySQL/MariaDB with
// a database and key prefix of its own, removed at the end. --also DIR (repeatable) starts the
// idmint of another checkout (its src/, run from DIR) as well, on CPU 1 with a database and
// prefix of its own, and measures its cases as `<case> @<commit>`: a before and after in the
// same rounds against the same bare route. --routed starts another idmint of this checkout with
// PRE_ROUTER=0 (every request through Fastify's router, no pre-router path: src/api/http/fast-path.ts)
// and measures its cases as `<case> routed`; the notes give, per case, the median over rounds of
// the routed server's CPU per request minus the pre-router's in the same round.
//
// A warm-up round (--warmup S per case, uncounted), then --rounds rounds of --duration S per case,
// interleaved (each round starts one case further on). The table shows medians over rounds; a
// ratio is the median of the per-round ratios to the bare route of the same round. CPU shares
// come from /proc/<pid>/stat over the steady part of each window: the server's, wrk's own, Redis's
// and the rest of the machine's; server µs/req is the server's CPU over its rate. wrk never using
// a whole core in any window shows it was not the limit. The load average is printed before and after.
//
// Checks: any socket error, timeout or non-2xx answer fails the run (exit code 1); for each idmint
// case an ID fetched after the window must be above one fetched before it, by more than the
// answers wrk counted (order node, global and the rule's counter: every answer took an ID of its own).
//
// Flags: --duration S (10)  --warmup S (5)  --rounds N (5)  --connections N (50)
//        --cases bare,wide,node,global,snowflake,rule  --also DIR (repeatable)  --routed  --env KEY=VALUE (idmint, repeatable)
//        --cpu-prof (write .cpuprofile files of every server to bench/results/profiles/; not recorded)
//        --no-record (do not record the run in bench/results/runs/)
// Needs wrk: `npm run bench:wrk` installs Debian's when it is missing (scripts/wrk.sh).
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pick } from '../tools/args.js';
import { pinProcess } from '../tools/cpu.js';
import { REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { redisPid } from '../tools/redis-stats.js';
import { fmt, textTable } from '../tools/table.js';
import { readBenchOptions } from './common-options.js';
import { ID_CASES } from './http/cases.js';
import { createTags } from './http/runner.js';
import { startRun } from './record.js';
import { catchInterrupt, idmintEnv, runMain, startServer, type Server } from './server.js';
import { runWrk } from './wrk/load.js';
import {
  clientVerdict,
  combineRounds,
  cpuSaved,
  failureKinds,
  RATIO_COLUMN,
  tableRows,
  WRK_DONE_SCRIPT,
  wrkFailures,
  type Measured,
} from './wrk/summary.js';

const CASES = ['bare', 'wide', 'node', 'global', 'snowflake', 'rule'] as const;
type CaseKind = (typeof CASES)[number];
const ID_KINDS = ['node', 'global', 'snowflake', 'rule'] as const;
type IdKind = (typeof ID_KINDS)[number];

const SERVER_CPU = 1;
const LOAD_CPU = 0;
const GOAL = { case: 'node', ratio: 0.95 };

interface Options {
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  cases: CaseKind[];
  also: string[];
  routed: boolean;
  env: Record<string, string>;
  cpuProf: boolean;
  record: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    duration: 10,
    warmup: 5,
    rounds: 5,
    connections: 50,
    cases: [...CASES],
    also: [],
    routed: false,
    env: {},
    cpuProf: false,
    record: true,
  };
  const usage = `npm run bench:wrk -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--cases ${CASES.join(',')}] [--also DIR] [--routed] [--env KEY=VALUE] [--cpu-prof] [--no-record]`;
  readBenchOptions(argv, usage, { duration: [3], warmup: [0], rounds: [1], connections: [1], env: true }, o, (a) => {
    switch (a.flag) {
      case '--cases':
        o.cases = pick(a.flag, a.list(), CASES);
        break;
      case '--also':
        o.also.push(resolve(a.text()));
        break;
      case '--routed':
        o.routed = true;
        break;
      case '--cpu-prof':
        o.cpuProf = true;
        break;
      case '--no-record':
        o.record = false;
        break;
      default:
        return false;
    }
    return true;
  });
  if (!o.cases.includes('bare'))
    throw new Error('--cases needs bare: every ratio is to the bare route of the same round');
  return o;
}

/** A checkout's commit, short, marked when its src/ has changes not committed. */
function commitOf(dir: string): string {
  const git = (...args: string[]) => spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).stdout.trim();
  const sha = git('rev-parse', '--short', 'HEAD') || 'unknown';
  return git('status', '--porcelain', '--', 'src') ? `${sha}+changes` : sha;
}

/** One idmint under test: its server, the names of its database and keys, the label of its cases. */
interface Idmint {
  readonly server: Server;
  readonly names: TestNames;
  /** '' for this checkout, ' routed' for it with PRE_ROUTER=0, ' @<commit>' for an --also checkout. */
  readonly suffix: string;
  readonly dir: string;
  readonly commit: string;
}

interface Case {
  readonly name: string;
  readonly server: Server;
  readonly url: string;
  readonly connections: number;
  readonly kind: CaseKind;
}

/** `node --import tsx src/cli.ts serve` run from another checkout, on the servers' CPU; ready once it answers HTTP. */
function startIdmintAt(
  dir: string,
  name: string,
  env: Record<string, string>,
  nodeFlags: readonly string[],
): Promise<Server> {
  return startServer(name, ['src/cli.ts', 'serve'], { cwd: dir, nodeFlags, cpu: SERVER_CPU, env, timeoutMs: 60_000 });
}

const newNames = (): TestNames => {
  const id = randomBytes(4).toString('hex');
  return { db: `idmint_w_${id}`, prefix: `w${id}`, mysqlUrl: mysqlUrlFor(`idmint_w_${id}`) };
};

/** GET /v1/id/:tag once: the ID as a bigint (a rule ID's digits: its date, then its counter). */
async function oneId(url: string): Promise<bigint> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text}`);
  return BigInt((JSON.parse(text) as { id: string }).id.replace(/^\D+/, ''));
}

const loads = () =>
  loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  if (cpus().length < 2) throw new Error('bench:wrk needs 2 CPUs: the servers on one, wrk on the other');
  if (spawnSync('wrk', ['-v']).error)
    throw new Error('wrk is not installed: run `bash scripts/wrk.sh` (npm run bench:wrk does)');
  const recorder = startRun('wrk');
  pinProcess(process.pid, LOAD_CPU);
  const loadBefore = loads();
  console.log(
    `idmint HTTP bench under wrk: -t1 -c${opts.connections}, ${opts.rounds} rounds of ${opts.duration} s per case after a ${opts.warmup} s warm-up round; ` +
      `servers on CPU ${SERVER_CPU}, wrk on CPU ${LOAD_CPU}; node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})`,
  );
  console.log(`load average before: ${loadBefore}`);

  const tmp = mkdtempSync(join(tmpdir(), 'idmint-wrk-'));
  const script = join(tmp, 'done.lua');
  writeFileSync(script, WRK_DONE_SCRIPT);
  const profDir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });

  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const servers: Server[] = [];
  const idmints: Idmint[] = [];
  const problems: string[] = [];
  const runs: Measured[] = [];
  const answered = new Map<string, number>();
  const interrupt = catchInterrupt('interrupted: stopping after this window');
  const notes: string[] = [];
  try {
    const rpid = await redisPid(redis);
    const bare = await startServer('bare', ['bench/bare-server.ts'], { nodeFlags, cpu: SERVER_CPU });
    servers.push(bare);
    const idKinds = ID_KINDS.filter((k) => opts.cases.includes(k));
    if (idKinds.length) {
      const id = randomBytes(4).toString('hex');
      const here = fileURLToPath(new URL('../', import.meta.url));
      const checkouts: { dir: string; suffix: string; env: Record<string, string> }[] = [
        { dir: here, suffix: '', env: {} },
        ...(opts.routed ? [{ dir: here, suffix: ' routed', env: { PRE_ROUTER: '0' } }] : []),
        ...opts.also.map((dir) => ({ dir, suffix: ` @${commitOf(dir)}`, env: {} })),
      ];
      for (const [i, { dir, suffix, env: extra }] of checkouts.entries()) {
        const names = newNames();
        const commit = commitOf(dir);
        const env = idmintEnv(names, `wrk-${id}-${i}`, { ...extra, ...opts.env });
        const server =
          dir === here
            ? await startServer(`idmint${suffix}`, ['src/cli.ts', 'serve'], { env, nodeFlags, cpu: SERVER_CPU })
            : await startIdmintAt(dir, `idmint ${commit}`, env, nodeFlags);
        idmints.push({ server, names, suffix, dir, commit });
        servers.push(server);
        await createTags(server);
        if (dir !== here)
          notes.push(`${idKinds.map((k) => `${k}${suffix}`).join(', ')}: idmint of ${dir} at ${commit}`);
        else
          notes.push(
            suffix
              ? `${idKinds.map((k) => `${k}${suffix}`).join(', ')}: this checkout with PRE_ROUTER=0`
              : `idmint: this checkout at ${commit}`,
          );
      }
    }
    const cases: Case[] = [];
    for (const kind of opts.cases) {
      if (kind === 'bare')
        cases.push({ name: 'bare', kind, server: bare, url: `${bare.url}/v1/id/bench`, connections: opts.connections });
      else if (kind === 'wide')
        cases.push({
          name: `bare -c${opts.connections * 2}`,
          kind,
          server: bare,
          url: `${bare.url}/v1/id/bench`,
          connections: opts.connections * 2,
        });
    }
    for (const im of idmints)
      for (const kind of opts.cases.filter((k): k is IdKind => (ID_KINDS as readonly string[]).includes(k)))
        cases.push({
          name: `${kind}${im.suffix}`,
          kind,
          server: im.server,
          url: `${im.server.url}/v1/id/${ID_CASES[kind].tag}${ID_CASES[kind].query}`,
          connections: opts.connections,
        });

    const measure = async (c: Case, round: number, duration: number) => {
      const before = c.kind === 'bare' || c.kind === 'wide' ? undefined : await oneId(c.url);
      const w = await runWrk(
        c.url,
        { connections: c.connections, threads: 1, duration, cpu: LOAD_CPU, script },
        c.server.pid,
        rpid,
      );
      const label = round === 0 ? `warm-up ${c.name}` : `round ${round} ${c.name}`;
      answered.set(c.server.name, (answered.get(c.server.name) ?? 0) + w.summary.requests);
      const failures = wrkFailures(w.summary);
      if (failures > 0) problems.push(`${label}: ${failureKinds(w.summary)} of ${w.summary.requests} answers`);
      if (before !== undefined) {
        const after = await oneId(c.url);
        const counts = c.kind !== 'snowflake';
        if (!(after > before) || (counts && after - before <= BigInt(w.summary.requests)))
          problems.push(
            `${label}: ID after the window ${after}, before it ${before}, ${w.summary.requests} answers counted between`,
          );
      }
      console.log(
        `${label}: ${fmt(w.rps)} req/s, p99 ${fmt(w.summary.p99Us / 1000, 2)} ms, server ${fmt((w.cpu.server / 100 / w.rps) * 1e6, 2)} µs/req; ` +
          `CPU % server ${fmt(w.cpu.server)}, wrk ${fmt(w.cpu.wrk)}, ` +
          `Redis ${fmt(w.cpu.redis)}, other ${fmt(w.cpu.other)}${w.cpu.other > 15 ? ` (${w.cpu.busiest.join(', ')})` : ''}${failures ? ` FAILURES ${failureKinds(w.summary)}` : ''}`,
      );
      return w;
    };

    if (opts.warmup > 0)
      for (const c of cases) if (!interrupt.interrupted) await measure(c, 0, Math.max(3, opts.warmup));
    for (let round = 1; round <= opts.rounds && !interrupt.interrupted; round++) {
      const order = cases.map((_, i) => cases[(i + round - 1) % cases.length]);
      for (const c of order) {
        if (interrupt.interrupted) break;
        const w = await measure(c, round, opts.duration);
        runs.push({
          name: c.name,
          round,
          rps: w.rps,
          p99Ms: w.summary.p99Us / 1000,
          serverCpu: w.cpu.server,
          wrkCpu: w.cpu.wrk,
          redisCpu: w.cpu.redis,
          otherCpu: w.cpu.other,
        });
      }
    }
    const warn = idmints.flatMap((im) =>
      im.server.output.filter((l) => /"level":(40|50|60)/.test(l)).map((l) => `${im.server.name}: ${l}`),
    );
    if (warn.length) notes.push(`idmint logged ${warn.length} warnings/errors; last: ${warn.slice(-2).join(' / ')}`);
    const names = cases.map((c) => c.name);
    const rows = combineRounds(runs, names, 'bare');
    const loadAfter = loads();
    console.log(`\n${textTable(tableRows(rows))}\n`);
    for (const r of rows)
      if (r.name !== 'bare')
        notes.push(`${r.name}: per-round ratios to bare ${r.ratios.map((x) => fmt(x, 3)).join(' ')}`);
    if (opts.routed) for (const kind of idKinds) notes.push(cpuSaved(runs, kind, `${kind} routed`));
    const verdict = clientVerdict(rows, opts.cases.includes('wide') ? `bare -c${opts.connections * 2}` : undefined);
    notes.push(verdict.line);
    if (!verdict.ok) problems.push(verdict.line);
    for (const im of idmints) {
      const row = rows.find((r) => r.name === `${GOAL.case}${im.suffix}`);
      if (row)
        notes.push(
          `${row.name}: ${fmt(row.ratio, 3)}x the bare route (goal ${GOAL.ratio}): ${row.ratio >= GOAL.ratio ? 'PASS' : 'MISS'}`,
        );
    }
    const busy = rows.filter((r) => r.otherCpu > 15);
    if (busy.length)
      notes.push(
        `other processes used more than 15% of a core during ${busy.map((r) => r.name).join(', ')}: figures disturbed`,
      );
    notes.push(`load average before the run ${loadBefore}, after it ${loadAfter}`);
    for (const n of notes) console.log(`- ${n}`);
    for (const p of problems) console.log(`PROBLEM ${p}`);
    if (opts.cpuProf) {
      console.log(`\nprofiles: ${profDir} (written as the servers exit); answers per server, warm-up included:`);
      for (const [name, n] of answered)
        console.log(`  ${name}: ${n} (pid ${servers.find((s) => s.name === name)?.pid})`);
    } else if (opts.record && !interrupt.interrupted && problems.length === 0 && rows.length === cases.length) {
      recorder.finish({ rows: tableRows(rows), ratio: { column: RATIO_COLUMN, baseline: 'bare' }, notes });
    } else if (opts.record) console.log('not recorded (problems, interrupted, or a case missing)');
  } finally {
    for (const s of servers) await s.stop(10_000).catch(() => undefined);
    redis.disconnect();
    for (const im of idmints)
      await cleanup(im.names).catch((err: Error) => console.error(`cleanup of ${im.names.db} failed: ${err.message}`));
    rmSync(tmp, { recursive: true, force: true });
    interrupt.stop();
  }
  return problems.length === 0 && !interrupt.interrupted ? 0 : 1;
}

runMain(main);
