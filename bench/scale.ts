// Scaling benchmark of `idmint serve --processes N`, run by `npm run bench:scale`.
//
// For each process count in --processes-list (default 1,2,4) it starts idmint with that many
// serving processes against the one Redis (and MySQL), and the bare Fastify routes
// (bench/bare-server.ts; N > 1 runs N copies under node's cluster module, as idmint does). All
// of them run side by side for the whole run: after settling (--settle S seconds of each case
// per serving process, so every process has compiled its hot paths and the segment step has
// adapted), each round measures every case at every process count in turn, with autocannon in
// this process, C keep-alive connections over loopback, a warm-up and then --duration seconds
// per case. Ratios (between process counts, and to the baselines) are taken within a round and
// the table shows their median over rounds. The cases:
//   bare    the bare route, answering a constant {"id":"1"}
//   incr    the bare route doing one Redis INCR per request and answering its value: the floor
//           of a request that needs a round trip to Redis, at the same process count
//   shared  the bare route where the requests of one event-loop turn share one Redis INCRBY
//           (each answers its own number of the range): the floor of a request that shares a
//           round trip with the other requests of its process, as order global does
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
// are distinct within a case, global IDs lie above a batch fetched before the case (incr and
// shared: above the counter's value before it); the Redis
// run must advance the key's `taken` counter by exactly the number of calls. A failed check
// fails the run (exit code 1).
//
// The machine is shared: for every case the CPU used by processes other than the servers, the
// load generator and Redis is recorded (and the busiest of them named); a case where it
// exceeds --max-other % of a core is run again, up to --retries times, and marked when it
// stays disturbed. --wait-quiet S waits up to S seconds for a quiet machine before each case.
//
// Flags: --duration S (5)  --warmup S (1)  --connections N (50)  --processes-list 1,2,4
//        --cases bare,incr,shared,node,global  --redis-requests N (300000, 0 skips redis-benchmark)
//        --max-other PCT (15)  --retries N (2)  --wait-quiet S (0)  --no-write
//        --rounds N (1): every case at every process count N times, interleaved; the table
//        shows medians, the range of req/s and the median of the ratios within each round
//        --settle S (3): seconds of load per serving process for each case before the first round
//        --rate R (0): every measured window offers R requests per second over all connections
//        instead of sending as fast as answered; the ratios then compare requests per server
//        CPU-second (what a request costs the serving core at the same load), and the results go
//        to bench/results/scale-rate-latest.md
//        --alt-env K=V[,K=V]: a second idmint per process count started with these settings
//        serves the case `alt` (order global, the same tag), e.g. COALESCE_LINGER_MS=0 to see
//        what the linger after a reply does; its row compares it with order global
//        --pin: every server process on CPU 1, the load generator on CPU 0 (taskset)
//        --private-redis: idmint and redis-benchmark use a redis-server of this run alone, so
//        its commandstats (calls and usec per EVALSHA) count only this run
// For order global it also reports the nodes' own count of takes (idmint_takes_total) and IDs
// of the tag, so requests per take, and Redis usec per EVALSHA during the case beside a no-op
// script (`return 1` with the take's keys and arguments) measured right after it.
// Results: bench/results/scale-latest.md (full runs only).
//
// The cases and flags are in bench/scale/cases.ts, the servers in bench/scale/servers.ts, the
// runs in bench/scale/runner.ts, the Redis limit in bench/scale/redis-limit.ts, the table and
// results file in bench/scale/report.ts.
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { pinProcess } from '../tools/cpu.js';
import { REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { RedisServer } from '../tools/redis-server.js';
import { redisPid } from '../tools/redis-stats.js';
import { ALL_CASES, parseArgs } from './scale/cases.js';
import { printReport, resultsFile, resultsTable, writeReport } from './scale/report.js';
import { startRun } from './record.js';
import { catchInterrupt, runMain } from './server.js';
import { runAll, type ScaleRun } from './scale/runner.js';

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const recorder = startRun('scale');
  const runId = randomBytes(4).toString('hex');
  const db = `idmint_b_${runId}`;
  const names: TestNames = { db, prefix: `b${runId}`, mysqlUrl: mysqlUrlFor(db) };
  const cores = cpus().length;
  const loadBefore = loadavg();
  console.log(
    `idmint scale bench: processes ${opts.processesList.join(', ')}; ${opts.connections} connections, ${opts.duration} s per case after ${opts.warmup} s warm-up; ` +
      `node ${process.version}, ${cores} CPUs (${cpus()[0]?.model.trim() ?? '?'}); load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`,
  );

  // --pin: servers on CPU 1 (see bench/scale/servers.ts), this process (the load generator) on CPU 0.
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const ownRedis = opts.privateRedis ? await RedisServer.start() : undefined;
  const redisUrl = ownRedis ? ownRedis.url : REDIS_URL;
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const interrupt = catchInterrupt('interrupted: finishing the current case, then cleaning up');
  const run: ScaleRun = {
    opts,
    names,
    runId,
    redisUrl,
    redis,
    redisPid: await redisPid(redis),
    results: [],
    problems: [],
    interrupted: () => interrupt.interrupted,
    tagsCreated: false,
    rounds: [],
    sets: [],
  };
  try {
    await runAll(run);
  } finally {
    redis.disconnect();
    await ownRedis?.stop();
    await cleanup(names, ownRedis ? undefined : redisUrl).catch((err: Error) =>
      console.error(`cleanup of ${names.db} / ${names.prefix} failed: ${err.message}`),
    );
    interrupt.stop();
  }

  const ok = run.problems.length === 0 && !interrupt.interrupted;
  const report = {
    opts,
    ok,
    results: run.results,
    rounds: run.rounds,
    limit: run.limit,
    problems: run.problems,
    loadBefore,
    redisUrl,
    privateRedis: ownRedis !== undefined,
  };
  printReport(report);
  const full =
    ALL_CASES.every((c) => opts.cases.includes(c)) && opts.processesList.length > 1 && run.limit !== undefined;
  if (opts.write && full && !interrupt.interrupted) {
    writeReport(report);
    console.log(`written: bench/results/${resultsFile(opts)}`);
    // A run at a fixed offered load compares CPU per request, not throughput: a benchmark of its own.
    recorder.finish({
      bench: opts.rate > 0 ? 'scale-rate' : 'scale',
      rows: resultsTable(report),
      labelColumns: 2,
      ratio: { column: '÷ bare', baseline: 'bare Fastify route' },
    });
  } else if (opts.write) {
    console.log(
      `results not written (only a run of all cases, more than one process count and redis-benchmark updates bench/results/${resultsFile(opts)})`,
    );
  }
  return ok ? 0 : 1;
}

runMain(main);
