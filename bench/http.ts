// HTTP benchmark of the ID route, run by `npm run bench`.
//
// In one run, at C concurrent keep-alive connections over loopback (autocannon, in this
// process), for a fixed duration per case after an uncounted warm-up, it measures:
//   baseline  a bare Fastify route answering a constant {"id":"1"} (bench/bare-server.ts)
//   node      GET /v1/id/:tag of a segment tag with order "node"   (IDs from process memory)
//   global    GET /v1/id/:tag of a segment tag with order "global" (coalesced Redis takes)
//   snowflake GET /v1/id/:tag of a snowflake tag
//   rule      GET /v1/id/:tag?app=bench of a rule tag with order "node" (formatted strings)
//   rule-global  the same of a rule tag with order "global" (coalesced takes of the app's counter)
// The baseline and idmint each run as a child process of their own; idmint runs against the
// real Redis and MySQL/MariaDB with a database and key prefix of its own, removed at the end.
//
// Besides speed it checks the answers: every 2xx body of an idmint case is {"id":"<n>"}, IDs strictly increase on each
// connection (requests on one connection are sequential), all IDs of a case are distinct, and every one lies between a
// batch fetched just before the case and one fetched just after it (rule IDs: distinct and of the template's shape).
// Any non-2xx, socket error, timeout or broken check fails the run (exit code 1); a missed speed target is reported as
// MISS and does not.
//
// Flags: --duration N (s, default 10)  --warmup N (s, default 2)  --connections N (default 50)
//        --rounds N (repeat the cases N times, interleaved; the table shows medians, and each
//        ratio is the median of the ratios measured within a round)
//        --cases baseline,node,global,snowflake,rule,rule-global   --env KEY=VALUE (extra env for the idmint process,
//        repeatable)  --cpu-prof (write .cpuprofile files of both servers to
//        bench/results/profiles/)  --no-write (do not update bench/results/http-latest.*)
//        --pin (taskset: the server under test on CPU 1, this process on CPU 0)
//        --one-client (instead of the cases: one connection, one request at a time, order global
//        against a bare route doing one INCR and one doing one EVALSHA of the take; bench/http/one-client.ts)
// Results: bench/results/http-latest.json and bench/results/http-latest.md (full runs only).
//
// The cases and flags are in bench/http/cases.ts, the servers in bench/server.ts, one measured
// case in bench/http/runner.ts, the tables, targets and results files in bench/http/report.ts.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pinProcess } from '../tools/cpu.js';
import { REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { ALL_CASES, parseArgs } from './http/cases.js';
import { combineRounds, mainRows, printReport, ratiosAndTargets, writeReport } from './http/report.js';
import { fmt } from '../tools/table.js';
import { createTags, idmintNotes, measureCase, type CaseResult } from './http/runner.js';
import { catchInterrupt, idmintEnv, runMain, startServer, type Server } from './server.js';
import { startRun } from './record.js';
import { runOneClient } from './http/one-client.js';

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const recorder = startRun('http');
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  const profDir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  const nodeFlags = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });

  // --pin: the server under test on CPU 1, this process (the load) on CPU 0.
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const serverCpu = opts.pin ? 1 : undefined;
  const loadBefore = loadavg()[0];
  console.log(
    `idmint HTTP bench: ${opts.connections} connections, ${opts.duration} s per case after ${opts.warmup} s warm-up; ` +
      `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})`,
  );

  const children: Server[] = [];
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const interrupt = catchInterrupt('interrupted: cleaning up');

  const runs: CaseResult[] = [];
  const problems: string[] = [];
  const warnings: string[] = [];
  try {
    if (opts.oneClient) {
      const bareEnv = { BARE_INCR_REDIS: REDIS_URL, BARE_INCR_KEY: `${names.prefix}:bare` };
      const incr = await startServer('incr route', ['bench/bare-server.ts'], {
        nodeFlags,
        cpu: serverCpu,
        env: bareEnv,
      });
      children.push(incr);
      const take = await startServer('take route', ['bench/bare-server.ts'], {
        nodeFlags,
        cpu: serverCpu,
        env: { ...bareEnv, BARE_TAKE: '1' },
      });
      children.push(take);
      const idmint = await startServer('idmint', ['src/cli.ts', 'serve'], {
        env: idmintEnv(names, `bench-${id}`, opts.env),
        nodeFlags,
        cpu: serverCpu,
      });
      children.push(idmint);
      await createTags(idmint);
      problems.push(...(await runOneClient(opts, { incr, take, idmint }, redis)));
      for (const p of problems) console.error(`FAILED: ${p}`);
      return problems.length === 0 && !interrupt.interrupted ? 0 : 1;
    }
    const bare = opts.cases.includes('baseline')
      ? await startServer('baseline', ['bench/bare-server.ts'], { nodeFlags, cpu: serverCpu })
      : undefined;
    if (bare) children.push(bare);
    const needIdmint = opts.cases.some((c) => c !== 'baseline');
    const idmint = needIdmint
      ? await startServer('idmint', ['src/cli.ts', 'serve'], {
          env: idmintEnv(names, `bench-${id}`, opts.env),
          nodeFlags,
          cpu: serverCpu,
        })
      : undefined;
    if (idmint) {
      children.push(idmint);
      await createTags(idmint);
    }

    const ctx = { opts, bare, idmint, redis, problems };
    for (let round = 1; round <= opts.rounds && !interrupt.interrupted; round++) {
      for (const name of opts.cases) {
        if (interrupt.interrupted) break;
        runs.push(await measureCase(ctx, name, round));
      }
    }
    if (idmint) warnings.push(...(await idmintNotes(idmint)));
  } finally {
    for (const c of children) await c.stop(10000).catch(() => undefined);
    redis.disconnect();
    await cleanup(names).catch((err: Error) =>
      console.error(`cleanup of ${names.db} / ${names.prefix} failed: ${err.message}`),
    );
    interrupt.stop();
  }

  const results = combineRounds(runs, opts.cases);
  const targets = ratiosAndTargets(results, runs);
  const busy = results.filter((c) => c.cpu.other > 15);
  if (busy.length)
    warnings.push(
      `other processes were busy during ${busy.map((c) => c.name).join(', ')} (see "other CPU %"): figures are disturbed`,
    );

  const ok = problems.length === 0 && !interrupt.interrupted;
  const report = { opts, ok, results, runs, targets, problems, warnings, loadBefore };
  printReport(report);
  const full = ALL_CASES.every((c) => results.some((r) => r.name === c));
  if (opts.write && full && !interrupt.interrupted) {
    writeReport(report);
    recorder.finish({
      rows: mainRows(results),
      ratio: { column: 'req/s ÷ base', baseline: 'baseline' },
      notes: targets.map((t) => `${t.name}: ${fmt(t.value, 3)} ${t.pass ? 'PASS' : 'MISS'}`),
    });
    console.log(`written: bench/results/http-latest.json, bench/results/http-latest.md`);
  } else if (opts.write) {
    console.log('results not written (only a full run of all cases updates bench/results/http-latest.*)');
  }
  return ok ? 0 : 1;
}

runMain(main);
