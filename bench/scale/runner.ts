// The scaling benchmark's runs: for one process count, the servers, the tags, every case of
// every round (a case the rest of the machine disturbed is run again), and once the Redis
// limit.
import type { Redis } from 'ioredis';
import { logLines } from '../../tools/child.js';
import { cpuWindow, machineBusySeconds, readProcs, waitQuiet, type CpuWindow } from '../../tools/cpu.js';
import { countRepeats } from '../../tools/duplicates.js';
import type { TestNames } from '../../tools/env.js';
import { createTag, fetchIds } from '../../tools/node.js';
import { redisCounters, usecPerEval, usecPerEvalsha } from '../../tools/redis-stats.js';
import { fmt } from '../../tools/table.js';
import { maxOf, runLoad, type Check } from '../load.js';
import { BARE_CASES, COUNTED_CASES, GLOBAL_CASES, TAGS, type CaseName, type Options } from './cases.js';
import { captureTake, noopUsec, pacedNoop, redisLimit, takeScript, type RedisLimit } from './redis-limit.js';
import { medianOf } from './report.js';
import type { Server } from '../server.js';
import { startBare, startIdmint } from './servers.js';

export interface CaseResult {
  name: CaseName;
  processes: number;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  cpu: CpuWindow;
  /** Requests answered per CPU-second the server's processes used (the inverse of CPU per request). */
  perCpuS: number;
  /** Redis script, INCR and INCRBY calls per second during the case (server-wide: other clients count too). */
  callsPerS: number;
  /** Global: takes per second the nodes sent for the tag (idmint_takes_total), and requests per take. */
  takesPerS: number;
  reqPerTake: number;
  /**
   * Global: Redis usec per EVALSHA during the case; of the no-op script sent once a millisecond
   * during the case (as EVAL), and of the same sent back to back after it.
   */
  usecPerTake: number;
  usecNoopPaced: number;
  usecNoop: number;
  attempts: number;
  disturbed: boolean;
  checks: string;
  /** req/s of each round (one entry without --rounds). */
  roundsRps: number[];
  /** The round measured (1, 2, ...); for a median row, the first. */
  round: number;
}

/** What one run shares across process counts. */
export interface ScaleRun {
  readonly opts: Options;
  readonly names: TestNames;
  readonly runId: string;
  /** The Redis idmint and the measurements use: the shared one, or (--private-redis) one of this run. */
  readonly redisUrl: string;
  readonly redis: Redis;
  readonly redisPid: number | undefined;
  readonly results: CaseResult[];
  /** Broken checks and failed requests, each failing the run. */
  readonly problems: string[];
  readonly interrupted: () => boolean;
  tagsCreated: boolean;
  /** Every case of every round, in the order measured (the per-round ratios come from these). */
  readonly rounds: CaseResult[];
  /** The servers started, stopped at the end. */
  readonly sets: ServerSet[];
  limit?: RedisLimit;
  /** Keys and arguments of a take of the global tag, for the no-op script. */
  takeShape?: { keys: string[]; args: string[] };
}

/** The key the `incr` (or `shared`) case's bare route increments. */
const incrKey = (run: ScaleRun, name: 'incr' | 'shared') => `${run.names.prefix}:bench-${name}`;

/** A counter of the node's /metrics (summed over its series of that tag). */
async function metricOf(url: string, name: string, tag: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`) && line.includes(`tag="${tag}"`))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** One case of one round at one process count: the best of its attempts (the first undisturbed one). */
async function measureCase(
  run: ScaleRun,
  name: CaseName,
  processes: number,
  server: Server,
  round: number,
): Promise<CaseResult> {
  const { opts, problems, redis } = run;
  const path = pathOf(name);
  const counted = COUNTED_CASES.includes(name);
  const global = GLOBAL_CASES.includes(name);
  const label = `${name} x${processes}${opts.rounds > 1 ? ` round ${round}` : ''}`;
  let best: CaseResult | undefined;
  for (let attempt = 1; attempt <= 1 + opts.retries && !run.interrupted(); attempt++) {
    if (opts.waitQuiet > 0) {
      const busy = await waitQuiet(opts.waitQuiet);
      if (busy >= 10) console.log(`(machine still busy: ${fmt(busy)}% of a core)`);
    }
    // Global: every ID of the case must lie above a batch fetched just before it; incr and
    // shared: above the counter's value before it.
    const above = global
      ? BigInt((await fetchIds(server.url, TAGS.global, 5)).at(-1)!)
      : name === 'incr' || name === 'shared'
        ? BigInt((await redis.get(incrKey(run, name))) ?? 0)
        : 0n;
    const check = checkOf(name, above);
    process.stdout.write(`${label}${attempt > 1 ? ` (attempt ${attempt})` : ''}: `);
    if (opts.warmup > 0) {
      const w = await runLoad(server.url + path, opts.connections, opts.warmup, check);
      const failed = w.non2xx + w.errors + w.timeouts;
      if (failed + w.violations > 0)
        problems.push(`${label} warm-up: ${failed} failed, ${w.violations} broken checks ${w.examples.join(' | ')}`);
      if (check.kind === 'ids' && counted) check.above = maxOf(w.ids, check.above);
    }
    const before = readProcs();
    const b0 = machineBusySeconds();
    const takes0 = global ? await metricOf(server.url, 'idmint_takes_total', TAGS.global) : 0;
    const issued0 = global ? await metricOf(server.url, 'idmint_ids_issued_total', TAGS.global) : 0;
    if (global)
      run.takeShape ??= await captureTake(redis, undefined, takeScript().numKeys, TAGS.global, () =>
        fetchIds(server.url, TAGS.global, 1),
      );
    const r0 = await redisCounters(redis);
    const pacer = global ? pacedNoop(redis, run.takeShape!.keys, run.takeShape!.args) : undefined;
    const t0 = performance.now();
    const r = await runLoad(server.url + path, opts.connections, opts.duration, check, opts.rate);
    const wallS = (performance.now() - t0) / 1000;
    const pacedCalls = (await pacer?.stop()) ?? 0;
    // CPU of the load window only (the metrics and the no-op script below come after it).
    const after = readProcs();
    const busy = machineBusySeconds() - b0;
    const r1 = await redisCounters(redis);
    let takes = NaN;
    let issued = NaN;
    let usecNoop = NaN;
    if (global) {
      takes = (await metricOf(server.url, 'idmint_takes_total', TAGS.global)) - takes0;
      issued = (await metricOf(server.url, 'idmint_ids_issued_total', TAGS.global)) - issued0;
      usecNoop = await noopUsec(redis, run.takeShape!.keys, run.takeShape!.args);
    }
    const cpu = cpuWindow(before, after, wallS, busy, server.pid, run.redisPid);
    let checks = `${fmt(r.ok)} bodies {"id":"1"}`;
    if (name !== 'bare') {
      const dup = countRepeats(r.ids);
      if (dup > 0) problems.push(`${label}: ${dup} duplicate IDs`);
      if (r.ids.length !== r.ok) problems.push(`${label}: ${r.ok} answers but ${r.ids.length} IDs checked`);
      checks = `${fmt(r.ids.length)} IDs distinct, increasing per connection${counted ? `, above ${above}` : ''}`;
    }
    const failed = r.non2xx + r.errors + r.timeouts;
    if (failed > 0) problems.push(`${label}: ${failed} failed requests ${r.examples.join(' | ')}`);
    if (r.violations > 0) problems.push(`${label}: ${r.violations} broken checks: ${r.examples.join(' | ')}`);
    const res: CaseResult = {
      name,
      processes,
      rps: r.rps,
      p50: r.p50,
      p99: r.p99,
      requests: r.ok,
      cpu,
      perCpuS: r.rps / (cpu.server / 100),
      // The case's own calls: the paced no-op script is the bench's.
      callsPerS: (r1.evalCalls + r1.counterCalls - r0.evalCalls - r0.counterCalls - pacedCalls) / wallS,
      takesPerS: takes / wallS,
      reqPerTake: issued / takes,
      usecPerTake: global ? usecPerEvalsha(r0, r1) : NaN,
      usecNoopPaced: global ? usecPerEval(r0, r1) : NaN,
      usecNoop,
      attempts: attempt,
      disturbed: cpu.other > opts.maxOther,
      checks,
      roundsRps: [r.rps],
      round,
    };
    console.log(
      `${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 2)} ms; CPU % server ${fmt(cpu.server)} (${fmt(1e6 / res.perCpuS, 1)} usec per request), load gen ${fmt(cpu.client)}, Redis ${fmt(cpu.redis)}, other ${fmt(cpu.other)}` +
        (global
          ? `; ${fmt(res.takesPerS)} takes/s, ${fmt(res.reqPerTake, 1)} req/take, ${fmt(res.usecPerTake, 2)} usec/take vs no-op ${fmt(res.usecNoopPaced, 2)} paced, ${fmt(usecNoop, 2)} back to back`
          : name === 'shared'
            ? `; ${fmt(res.callsPerS)} INCRBY/s, ${fmt(r.rps / res.callsPerS, 1)} req/INCRBY`
            : '') +
        (cpu.busiest.length ? ` (${cpu.busiest.join(', ')})` : ''),
    );
    if (!best || best.disturbed) best = res;
    if (!res.disturbed) break;
  }
  return best!;
}

/** The servers of one process count: the bare routes and idmint, each when a case needs it. */
export interface ServerSet {
  readonly processes: number;
  readonly bare?: Server;
  readonly incr?: Server;
  readonly shared?: Server;
  readonly idmint?: Server;
  /** idmint with --alt-env's settings (the `alt` case). */
  readonly alt?: Server;
}

/** What every answer of a case must be: the bare route's constant body, or IDs above `above`. */
const checkOf = (name: CaseName, above: bigint): Check =>
  name === 'bare' ? { kind: 'constant', body: '{"id":"1"}' } : { kind: 'ids', above };
const serverOf = (set: ServerSet, name: CaseName): Server =>
  name === 'node' || name === 'global' ? set.idmint! : set[name]!;
const pathOf = (name: CaseName): string =>
  name === 'node' ? `/v1/id/${TAGS.node}` : GLOBAL_CASES.includes(name) ? `/v1/id/${TAGS.global}` : '/v1/id/bench';

/** Starts the servers of one process count and adds them to run.sets. */
async function startSet(run: ScaleRun, processes: number): Promise<void> {
  const { opts } = run;
  const needIdmint =
    opts.cases.some((c) => !BARE_CASES.includes(c)) || (processes === opts.processesList[0] && opts.redisRequests > 0);
  const set: { -readonly [K in keyof ServerSet]: ServerSet[K] } = { processes };
  run.sets.push(set);
  if (opts.cases.includes('bare')) set.bare = await startBare(processes, opts.pin);
  if (opts.cases.includes('incr'))
    set.incr = await startBare(processes, opts.pin, { url: run.redisUrl, key: incrKey(run, 'incr'), shared: false });
  if (opts.cases.includes('shared'))
    set.shared = await startBare(processes, opts.pin, { url: run.redisUrl, key: incrKey(run, 'shared'), shared: true });
  if (needIdmint) {
    const idmint = (set.idmint = await startIdmint(processes, run.names, run.runId, run.redisUrl, opts.pin));
    if (!run.tagsCreated) {
      await createTag(idmint.url, { tag: TAGS.node, mode: 'segment', order: 'node' });
      await createTag(idmint.url, { tag: TAGS.global, mode: 'segment', order: 'global' });
      await createTag(idmint.url, {
        tag: TAGS.redis,
        mode: 'segment',
        order: 'global',
        step: 100_000_000,
        min_step: 100_000_000,
        max_step: 100_000_000,
      });
      run.tagsCreated = true;
    }
    for (const t of Object.values(TAGS)) await fetchIds(idmint.url, t, 1); // cold start: first segments
  }
  if (opts.cases.includes('alt'))
    set.alt = await startIdmint(processes, run.names, run.runId, run.redisUrl, opts.pin, opts.altEnv);
}

/**
 * Before the first round every case runs --settle seconds per serving process of its server
 * (answers checked): each process compiles its hot paths, and the tags' segment step adapts to
 * the rate, as on a server that has been running, so no round measures a start-up.
 */
async function settle(run: ScaleRun, set: ServerSet): Promise<void> {
  const { opts, problems } = run;
  if (opts.settle <= 0) return;
  for (const name of opts.cases) {
    if (run.interrupted()) return;
    const seconds = opts.settle * set.processes;
    process.stdout.write(`settling ${name} x${set.processes} (${fmt(seconds)} s): `);
    const check = checkOf(name, 0n);
    const r = await runLoad(serverOf(set, name).url + pathOf(name), opts.connections, seconds, check);
    const failed = r.non2xx + r.errors + r.timeouts;
    if (failed + r.violations > 0)
      problems.push(
        `${name} x${set.processes} settling: ${failed} failed, ${r.violations} broken checks ${r.examples.join(' | ')}`,
      );
    console.log(`${fmt(r.rps)} req/s`);
  }
}

/**
 * Every process count's servers run side by side for the whole run (an idle one costs next to
 * nothing), so each round measures every case at every process count, one after the other:
 * the ratios between process counts and between cases are taken within a round, whatever the
 * machine did between rounds. The Redis limit is measured once, after the rounds.
 */
export async function runAll(run: ScaleRun): Promise<void> {
  const { opts, problems } = run;
  try {
    for (const processes of opts.processesList) if (!run.interrupted()) await startSet(run, processes);
    const sets = run.sets;
    for (const set of sets) await settle(run, set);
    const runs: CaseResult[] = [];
    for (let round = 1; round <= opts.rounds && !run.interrupted(); round++)
      for (const set of sets)
        for (const name of opts.cases)
          if (!run.interrupted()) runs.push(await measureCase(run, name, set.processes, serverOf(set, name), round));
    run.rounds.push(...runs);
    for (const set of sets)
      for (const name of opts.cases) {
        const rs = runs.filter((r) => r.name === name && r.processes === set.processes);
        if (rs.length) run.results.push(medianOf(rs, opts.maxOther));
      }
    const idmint = sets[0]?.idmint;
    if (idmint && opts.redisRequests > 0 && !run.interrupted()) {
      const server = idmint;
      process.stdout.write(
        `redis-benchmark: EVALSHA take, ${fmt(opts.redisRequests)} calls, ${opts.connections} clients: `,
      );
      const limit = await redisLimit(
        run.redis,
        run.redisUrl,
        TAGS.redis,
        () => fetchIds(server.url, TAGS.redis, 1),
        opts.redisRequests,
        opts.connections,
        run.redisPid,
        server.pid,
      );
      run.limit = limit;
      console.log(`${fmt(limit.rps)} calls/s; Redis CPU ${fmt(limit.redisCpu)}%, other ${fmt(limit.cpu.other)}%`);
      if (limit.takenAdvance !== opts.redisRequests)
        problems.push(
          `redis-benchmark: the key's taken counter moved by ${limit.takenAdvance}, not ${opts.redisRequests}`,
        );
    }
  } finally {
    for (const set of run.sets) {
      for (const bare of [set.bare, set.incr, set.shared]) await bare?.stop(40_000);
      for (const idmint of [set.idmint, set.alt]) {
        if (!idmint) continue;
        const code = await idmint.stop(40_000);
        if (code !== 0) problems.push(`${idmint.name} exited with ${code} on SIGTERM`);
        const errs = logLines(idmint.output).filter((l) => Number(l.level) >= 50);
        if (errs.length)
          problems.push(`${idmint.name} logged ${errs.length} errors; first: ${JSON.stringify(errs[0]).slice(0, 300)}`);
      }
    }
  }
}
