// What an idempotency key costs on `GET /v1/id/:tag`, run by `npm run bench:idempotency`.
//
// The promise measured (docs/GUARANTEES.md#idempotency-keys): a request without a key is served
// as before; a keyed request with a new key to a segment tag of order global costs the same one
// script call as the unkeyed one (idem-takes-4.lua looks the key up, takes and keeps the answer,
// for the keyed requests of one event-loop turn together);
// to a tag served from memory (order node) two calls more than the unkeyed one (the claim,
// idem-claim-3.lua, before the take; the record, idem-record-3.lua, after it); a replay one call
// in all (which finds the kept answer). In one run, with keep-alive clients over loopback (autocannon, in this
// process) at 1 client (latency) and at --connections clients (throughput), it measures, in
// interleaved rounds after an uncounted warm-up of every case:
//   bare route                     a bare Fastify route answering a constant (bench/bare-server.ts)
//   bare route + one Redis INCR    the same route doing one INCR per request: minus the bare
//                                  route, the cost of one Redis round trip on this machine
//   floor, unkeyed                 the floor of order global (bench/idempotency/floor-server.ts):
//                                  a bare Fastify route doing only the Redis calls idmint makes,
//                                  here one take (take-2.lua) shared by the requests of a turn
//   floor, keyed, new key          the same route, a fresh key per request: one idem-takes-4.lua
//                                  call per turn carrying every new key of the turn, with idmint's
//                                  arguments
//   floor, keyed, replay           the same route, the same key every time: the call that finds
//                                  the kept answer
//   <order>, unkeyed               GET /v1/id/:tag as most callers send it (the pre-router path)
//   <order>, unkeyed, before keys  with --before COMMIT: the unkeyed request to idmint as it was at
//                                  that commit (exported with git archive), served in the same
//                                  rounds: whether requests without a key are unchanged
//   <order>, unkeyed, router       the same with an empty query ("?"), which Fastify's router
//                                  serves, as it serves every keyed request
//   <order>, keyed, new key        a fresh Idempotency-Key per request (order global: taken and
//                                  kept in one call; order node: claimed, taken, recorded)
//   <order>, keyed, replay         the same key every time (the one call finds the kept answer)
// for a segment tag of order global and one of order node. Apart, on a private redis-server
// (nothing else on it), Redis's own time per call (INFO commandstats) of INCR, the take and the
// key scripts (a new key's one call of order global; its claim and record of order node; a
// replay's claim and a replay's call of order global), as idmint sends them for one ID. The floor
// bounds idmint's ratios: the notes give, per goal of order global, PASS or MISS with the
// floor's own ratio beside it (a MISS whose floor is below the goal too is bounded by the Redis
// calls themselves). "extra µs" is the case's cost over the unkeyed request of its tag (over the
// bare route for the INCR route; over the floor's unkeyed request for its keyed ones), per round: at 1
// client the difference of the p50 latencies, at N clients the difference of the wall time per
// request (1/throughput); "÷ round trip" divides it by the INCR route's extra of the same round
// and client count, so 1.00 is exactly one more round trip. Figures are medians of the rounds.
// Every answer is checked (IDs increasing per connection and never twice; a replay's answer the
// kept one); any error or broken check fails the run.
//
// Flags: --duration S (per case and round, default 3)  --warmup S (per case, default 1)
//        --rounds N (default 5)  --connections N (default 50)  --pin (idmint and the bare routes
//        on CPU 1, this process on CPU 0)  --cpu-prof (write idmint's .cpuprofile to
//        bench/results/profiles/)  --no-write (print only, record no run)
//        --before COMMIT (also idmint at COMMIT, e.g. the commit before idempotency keys)
//
// The parts are in bench/idempotency/: options.ts (the command line), cases.ts, targets.ts (what
// each case sends and how its answers are checked), load-run.ts (one load run), before.ts (idmint
// at --before), redis-alone.ts (Redis's time per call alone), report.ts (the table and the notes).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { ROOT } from '../tools/child.js';
import { pinProcess } from '../tools/cpu.js';
import { ADMIN_TOKEN, REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { createTag } from '../tools/node.js';
import { redisPid } from '../tools/redis-stats.js';
import { textTable } from '../tools/table.js';
import { startAt } from './idempotency/before.js';
import { idempotencyCases, LABELS, ORDERS, TAGS, type Case } from './idempotency/cases.js';
import { BENCH_KEY_SETTINGS } from './idempotency/floor-calls.js';
import { load, type Measured } from './idempotency/load-run.js';
import { readIdempotencyOptions } from './idempotency/options.js';
import { redisAlone } from './idempotency/redis-alone.js';
import { idempotencyReport } from './idempotency/report.js';
import { replayKey, targetsOf, type ReplayOf } from './idempotency/targets.js';
import { startRun } from './record.js';
import { BENCH_SETTINGS, runMain, startServer, type Server } from './server.js';

async function main(): Promise<number> {
  const opts = readIdempotencyOptions(process.argv.slice(2));
  const recorder = startRun('idempotency');
  const loadBefore = loadavg();
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const cpu = opts.pin ? 1 : undefined;
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  const beforeNames: TestNames = { db: `${db}_before`, prefix: `b${id}before`, mysqlUrl: mysqlUrlFor(`${db}_before`) };
  const beforeDir = opts.before === undefined ? undefined : mkdtempSync(join(tmpdir(), 'idmint-before-'));
  const beforeCommit =
    opts.before === undefined
      ? undefined
      : execFileSync('git', ['rev-parse', '--short', opts.before], { cwd: ROOT }).toString().trim();
  const profDir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });
  console.log(
    `idmint idempotency-key bench: 1 and ${opts.connections} clients, ${opts.duration} s per case after ${opts.warmup} s warm-up, ${opts.rounds} interleaved rounds; ` +
      `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})${opts.pin ? ', servers on CPU 1, load on CPU 0' : ''}`,
  );
  console.log(`load average before: ${loadBefore.map((v) => v.toFixed(2)).join(' ')}`);

  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const redisProcess = await redisPid(redis);
  const children: Server[] = [];
  const problems: string[] = [];
  const rows: string[][] = [];
  const notes: string[] = [];
  try {
    const bare = await startServer('bare route', ['bench/bare-server.ts'], { cpu });
    children.push(bare);
    const incr = await startServer('bare route + INCR', ['bench/bare-server.ts'], {
      cpu,
      env: { BARE_INCR_REDIS: REDIS_URL, BARE_INCR_KEY: `${names.prefix}:bare-incr` },
    });
    children.push(incr);
    const floor = await startServer('floor', ['bench/idempotency/floor-server.ts'], {
      cpu,
      env: { FLOOR_REDIS: REDIS_URL, FLOOR_PREFIX: `${names.prefix}:floor`, FLOOR_TAG: TAGS.global },
    });
    children.push(floor);
    const idmintEnv = (n: TestNames, node: string) => ({
      REDIS_URL,
      MYSQL_URL: n.mysqlUrl,
      REDIS_PREFIX: n.prefix,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      UDP_PORT: '0',
      GRPC_PORT: '0',
      NODE_ID: node,
      ...BENCH_SETTINGS,
      // Every new-key request keeps a key: the bound must not refuse the run's keys. The floor
      // sends the same settings (floor-calls.ts).
      IDEMPOTENCY_MAX_KEYS: String(BENCH_KEY_SETTINGS.maxKeys),
      IDEMPOTENCY_MAX_BYTES: String(BENCH_KEY_SETTINGS.maxBytes),
    });
    const idmint = await startServer('idmint', ['src/cli.ts', 'serve'], {
      cpu,
      nodeFlags: opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
      env: idmintEnv(names, `bench-${id}`),
    });
    children.push(idmint);
    const before =
      beforeCommit && beforeDir
        ? await startAt(beforeCommit, beforeDir, idmintEnv(beforeNames, `bench-${id}-before`), cpu)
        : undefined;
    if (before) {
      children.push(before);
      for (const order of ORDERS) await createTag(before.url, { tag: TAGS[order], mode: 'segment', order });
      notes.push(`unkeyed, before keys: idmint at commit ${beforeCommit}, in the same rounds`);
    }

    // The kept answer each replay case asks for again.
    const kept: Partial<Record<ReplayOf, string>> = {};
    const keep = async (of: ReplayOf, server: Server, tag: string) => {
      const res = await fetch(`${server.url}/v1/id/${tag}`, { headers: { 'idempotency-key': replayKey(id, of) } });
      kept[of] = await res.text();
      if (res.status !== 200) throw new Error(`first keyed request of ${tag}: ${res.status} ${kept[of]}`);
    };
    for (const order of ORDERS) {
      await createTag(idmint.url, { tag: TAGS[order], mode: 'segment', order });
      await keep(order, idmint, TAGS[order]);
    }
    await keep('floor', floor, TAGS.global);

    const cases = idempotencyCases(opts.connections, before !== undefined);
    const target = targetsOf({ bare, incr, floor, idmint, before }, id, kept);

    const run = async (c: Case, seconds: number, label: string) => {
      const t = target(c);
      const m = await load(t, c.clients, seconds, redisProcess, problems, label);
      const dup = t.repeats();
      if (dup > 0) problems.push(`${label}: ${dup} IDs answered twice`);
      return m;
    };
    if (opts.warmup > 0) {
      process.stdout.write('warm-up...');
      for (const c of cases) await run(c, opts.warmup, `${c.name}, ${c.clients} (warm-up)`);
      console.log(' done');
    }
    const results = new Map<Case, Measured[]>(cases.map((c) => [c, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      process.stdout.write(`round ${round}/${opts.rounds}...`);
      for (const c of cases)
        results.get(c)!.push(await run(c, opts.duration, `${c.name}, ${c.clients} (round ${round})`));
      console.log(' done');
    }

    const alone = await redisAlone(opts.rounds, 20_000);
    const report = idempotencyReport(opts, cases, results, alone);
    rows.push(...report.rows);
    notes.push(...report.notes);
  } finally {
    for (const c of children) await c.stop(10000).catch(() => undefined);
    redis.disconnect();
    for (const n of beforeDir ? [names, beforeNames] : [names])
      await cleanup(n).catch((err: Error) => console.error(`cleanup of ${n.db} / ${n.prefix} failed: ${err.message}`));
    if (beforeDir) rmSync(beforeDir, { recursive: true, force: true });
  }
  const loadAfter = loadavg();
  console.log();
  console.log(textTable(rows, 2));
  console.log();
  for (const n of notes) console.log(`- ${n}`);
  console.log(
    `load average before: ${loadBefore.map((v) => v.toFixed(2)).join(' ')}; after: ${loadAfter.map((v) => v.toFixed(2)).join(' ')}`,
  );
  for (const p of problems) console.error(`PROBLEM ${p}`);
  const ok = problems.length === 0;
  console.log(ok ? 'result: OK (every answer checked, no errors)' : `result: FAILED (${problems.length} problems)`);
  if (ok && opts.write)
    recorder.finish({ rows, labelColumns: 2, ratio: { column: '÷ round trip', baseline: `${LABELS.incr}, 1` }, notes });
  return ok ? 0 : 1;
}

runMain(main);
