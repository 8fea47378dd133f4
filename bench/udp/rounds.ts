// The rounds of `npm run bench:udp`: each round runs every case once, in the same order, so a
// slow spell of the machine hits a round rather than one case. Per case and round it runs the C
// clients (bench/udp/c-client.ts) and reads the serving process's CPU (/proc), Redis's CPU and
// script time (INFO), and the CPU windows of the server and the clients; it checks every idmint
// ID of one counter distinct over all rounds and the echo server busy (bench/udp/load-limit.ts).
// Before the first round every app name asks each idmint case twice, unmeasured (warmUp), and
// opts.warmupRounds rounds of every case run as the measured ones do, their figures printed and
// kept apart: a process's first round of load can cost it a fifth to three quarters more per
// request than the rounds after (its code not yet optimised by V8), which is not the steady
// state the goals judge.
import type { Redis } from 'ioredis';
import { procCpuSeconds } from '../../tools/cpu.js';
import { SeenIds } from '../../tools/duplicates.js';
import { redisCounters, redisPerRequest } from '../../tools/redis-stats.js';
import { medianOrNaN as median } from '../stats.js';
import { WINDOW_MS, runClients as runLoad } from './c-client.js';
import { CASE_NAMES, type Case } from './cases.js';
import { echoWaited } from './load-limit.js';
import type { UdpOptions } from './options.js';

/** One case in one round. */
export interface Measured {
  readonly tps: number;
  readonly avgMs: number;
  readonly fail: number;
  /** CPU of the serving process per request, µs. */
  readonly serverUs: number;
  /** CPU of Redis per request, µs (the whole server: INFO cpu). */
  readonly redisUs: number;
  /** Redis usec per EVALSHA (INFO commandstats), µs; NaN where the case runs no script per request. */
  readonly scriptUs: number;
  /** The serving process's CPU in its least busy window, % of a core. */
  readonly serverLowPct: number;
  /** The serving process's main thread running or runnable in its least busy window, %. */
  readonly demandLowPct: number;
  /** The client processes' CPU together in the median window, % of a core. */
  readonly clientPct: number;
}

export interface Rounds {
  /** Per case, one measurement per round. */
  readonly measured: Map<string, Measured[]>;
  /** Per case, one measurement per warm-up round (not in the medians). */
  readonly warmups: Map<string, Measured[]>;
  /** False when an idmint case answered a duplicate ID or a failed request. */
  readonly ok: boolean;
  /** Rounds in which the echo server waited for its clients: the run fails. */
  readonly clientLimited: string[];
}

/** The C clients against one server; the server's and the clients' CPU in each window. */
async function runClients(
  opts: UdpOptions,
  binary: string,
  port: number,
  rule: string,
  collect: boolean,
  serverPid: number,
): Promise<{
  tps: number;
  avgMs: number;
  fail: number;
  ids: Map<string, string[]>;
  serverPct: number[];
  demandPct: number[];
  clientPct: number[];
}> {
  const run = await runLoad(binary, {
    port,
    rule,
    requests: opts.requests,
    clients: opts.clients,
    inFlight: opts.inFlight,
    workload: opts.workload,
    collect,
    cpu: opts.pin ? 0 : undefined,
    serverPid,
  });
  const results = run.clients;
  const seconds = Math.max(...results.map((r) => r.seconds));
  const total = results.reduce((s, r) => s + r.total, 0);
  for (const r of results)
    console.log(
      `  total:${r.total} fail:${r.fail} min:${r.min.toFixed(6)} max:${r.max.toFixed(6)} avg:${r.avg.toFixed(6)}`,
    );
  const pcts = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(
    `  CPU % per ${WINDOW_MS} ms window: server ${pcts(run.serverPct)}; its main thread running or runnable ${pcts(run.demandPct)}; clients ${pcts(run.clientPct)}`,
  );
  return {
    tps: total / seconds,
    avgMs: (results.reduce((s, r) => s + r.avg, 0) / results.length) * 1000,
    fail: results.reduce((s, r) => s + r.fail, 0),
    ids: new Map(results.flatMap((r) => [...r.ids])),
    serverPct: run.serverPct,
    demandPct: run.demandPct,
    clientPct: run.clientPct,
  };
}

/** Per counter (a rule's case and app name; a segment tag's case), every ID seen over all rounds. */
type Seen = Map<string, SeenIds<string, string>>;

/** Adds a case's IDs to those seen: how many were seen before. */
function duplicates(c: Case, ids: Map<string, string[]>, seen: Seen): number {
  let dups = 0;
  for (const [app, list] of c.idmint ? ids : []) {
    const key = c.name === CASE_NAMES.segment ? c.name : `${c.name}/${app}`;
    const all = seen.get(key) ?? new SeenIds<string, string>();
    seen.set(key, all);
    for (const id of list) if (all.add(id, key) !== undefined) dups++;
  }
  return dups;
}

/**
 * Every app name of the clients asks each idmint case twice before the rounds, unmeasured: the
 * first request of an app waits for its counter's first segment (a refill), and the clients'
 * hundreds of apps asking at once queue their refills behind each other. Its IDs count in the
 * duplicate check; requests that timed out waiting are printed, not failed.
 */
async function warmUp(opts: UdpOptions, binary: string, cases: readonly Case[], seen: Seen): Promise<boolean> {
  let ok = true;
  for (const c of cases.filter((x) => x.idmint)) {
    const run = await runLoad(binary, {
      port: c.port,
      rule: c.rule,
      requests: 2 * opts.inFlight,
      clients: opts.clients,
      inFlight: opts.inFlight,
      workload: opts.workload,
      collect: true,
      cpu: opts.pin ? 0 : undefined,
      serverPid: c.pid ?? 0,
    });
    const dups = duplicates(c, new Map(run.clients.flatMap((r) => [...r.ids])), seen);
    const fail = run.clients.reduce((sum, r) => sum + r.fail, 0);
    console.log(`${c.name} (warm-up, unmeasured): ${fail} requests timed out or failed, ${dups} duplicate IDs`);
    if (dups > 0) ok = false;
  }
  return ok;
}

/** Runs opts.rounds rounds of the cases with the client binary; stats is a connection to the Redis the servers use. */
export async function runRounds(
  opts: UdpOptions,
  binary: string,
  cases: readonly Case[],
  stats: Redis,
): Promise<Rounds> {
  const clientLimited: string[] = [];
  const measured = new Map<string, Measured[]>();
  const warmups = new Map<string, Measured[]>();
  const seen: Seen = new Map();
  let ok = await warmUp(opts, binary, cases, seen);
  for (let at = 1; at <= opts.warmupRounds + opts.rounds; at++) {
    // The warm-up rounds come first; `round` numbers the measured ones from 1.
    const warm = at <= opts.warmupRounds;
    const round = warm ? at : at - opts.warmupRounds;
    const label = warm ? ` (warm-up round ${round}, not in the medians)` : opts.rounds > 1 ? ` (round ${round})` : '';
    for (const c of cases) {
      console.log(`${c.name}${label}`);
      const cpu0 = procCpuSeconds(c.pid ?? 0);
      const redis0 = await redisCounters(stats);
      const r = await runClients(opts, binary, c.port, c.rule, c.idmint, c.pid ?? 0);
      const cpu1 = procCpuSeconds(c.pid ?? 0);
      const requests = opts.clients * opts.requests;
      const perRequest = redisPerRequest(redis0, await redisCounters(stats), requests);
      // Every ID of one of idmint's counters, over all rounds, must be distinct.
      const dups = duplicates(c, r.ids, seen);
      // A lost or wrong reply fails the run, a baseline's too: its figures would count timeouts.
      if (dups > 0 || r.fail > 0) {
        ok = false;
        console.log(`  FAILED: ${dups} duplicate IDs, ${r.fail} failed requests`);
      }
      const lowest = (xs: number[]) => (xs.length > 0 ? Math.min(...xs) : NaN);
      const serverLowPct = lowest(r.serverPct);
      const demandLowPct = lowest(r.demandPct);
      // The load check is of the measured rounds: a warm-up round's figures are not the run's.
      const waited = c.name === CASE_NAMES.echo && !warm ? echoWaited(round, r.demandPct, demandLowPct) : undefined;
      if (waited !== undefined) clientLimited.push(waited);
      const into = warm ? warmups : measured;
      const list = into.get(c.name) ?? [];
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
      into.set(c.name, list);
    }
  }
  return { measured, warmups, ok, clientLimited };
}
