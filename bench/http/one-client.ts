// The HTTP benchmark's one-client comparison (`npm run bench -- --one-client`): one keep-alive
// connection sending `GET /v1/id/:tag` one request at a time, so that no request ever shares a
// take with another, against two floors measured in the same interleaved rounds:
//   incr   a bare Fastify route doing one Redis INCR per request (bench/bare-server.ts)
//   take   the same route doing one EVALSHA of idmint's take (take-2.lua in its steady state,
//          BARE_TAKE=1): an order-global request's Redis work with nothing of idmint around it
//   global       idmint, a segment tag in order global
//   rule-global  idmint, a rule tag in order global (?app=bench)
// The figure that matters is latency: with one request in flight, req/s is 1 / latency, and
// each ratio ("latency ÷ INCR route", "latency ÷ take route") is the median of the per-round
// ratios. Every answer is checked as in the main run (IDs increasing, rule IDs of their shape).
import { loadavg } from 'node:os';
import { procCpuSeconds } from '../../tools/cpu.js';
import { redisCounters, redisPerRequest, type InfoSource } from '../../tools/redis-stats.js';
import { fmt } from '../../tools/table.js';
import { runLoad, type Check } from '../load.js';
import type { Server } from '../server.js';
import { startRun } from '../record.js';
import { medianOrNaN as median } from '../stats.js';
import { ID_CASES, type Options } from './cases.js';

export const INCR_ROUTE = 'bare route + one Redis INCR';
export const TAKE_ROUTE = "bare route + one EVALSHA of idmint's take";
const GLOBAL = '`GET /v1/id`, segment tag, order global';
const RULE_GLOBAL = '`GET /v1/id?app=bench`, rule tag, order global';

/** Goals of one sequential client: order global's latency against each floor. */
const MAX_VS_INCR = 1.2;
const MAX_VS_TAKE = 1.1;

interface Measured {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU of the serving process per request, µs. */
  readonly serverUs: number;
  /** CPU of Redis per request (the whole server: INFO cpu), µs. */
  readonly redisUs: number;
  /** Redis usec per EVALSHA (INFO commandstats), µs; NaN where the case runs no script per request. */
  readonly scriptUs: number;
}

export interface OneClientServers {
  readonly incr: Server;
  readonly take: Server;
  readonly idmint: Server;
}

/**
 * Runs the rounds, prints the table and records the run (unless opts.write is off); answers the
 * problems seen. `redis` reads the Redis server's counters around each window.
 */
export async function runOneClient(opts: Options, servers: OneClientServers, redis: InfoSource): Promise<string[]> {
  const recorder = startRun('http-one');
  const load0 = loadavg();
  const problems: string[] = [];
  const cases: { name: string; server: Server; path: string; check: () => Check }[] = [
    {
      name: INCR_ROUTE,
      server: servers.incr,
      path: '/v1/id/bench',
      check: () => ({ kind: 'strings', pattern: /^\d+$/ }),
    },
    {
      name: TAKE_ROUTE,
      server: servers.take,
      path: '/v1/id/bench',
      check: () => ({ kind: 'strings', pattern: /^\d+$/ }),
    },
    {
      name: GLOBAL,
      server: servers.idmint,
      path: `/v1/id/${ID_CASES.global.tag}`,
      check: () => ({ kind: 'ids', above: 0n }),
    },
    {
      name: RULE_GLOBAL,
      server: servers.idmint,
      path: `/v1/id/${ID_CASES['rule-global'].tag}${ID_CASES['rule-global'].query}`,
      check: () => ({ kind: 'strings', pattern: ID_CASES['rule-global'].pattern! }),
    },
  ];
  const measured = new Map<string, Measured[]>(cases.map((c) => [c.name, []]));
  for (let round = 1; round <= opts.rounds; round++) {
    for (const c of cases) {
      const label = `one client: ${c.name}${opts.rounds > 1 ? ` (round ${round})` : ''}`;
      if (opts.warmup > 0) await runLoad(c.server.url + c.path, 1, opts.warmup, c.check());
      const redis0 = await redisCounters(redis);
      const cpu0 = procCpuSeconds(c.server.pid);
      const r = await runLoad(c.server.url + c.path, 1, opts.duration, c.check());
      const cpu1 = procCpuSeconds(c.server.pid);
      const { redisUs, scriptUs } = redisPerRequest(redis0, await redisCounters(redis), r.ok);
      if (r.non2xx + r.errors + r.timeouts + r.violations > 0) {
        problems.push(
          `${label}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts, ${r.violations} broken checks ${r.examples.join(' | ')}`,
        );
      }
      console.log(`${label}: ${fmt(r.rps)} req/s, p50 ${fmt(r.p50, 3)} ms`);
      const serverUs = r.ok > 0 ? ((cpu1 - cpu0) * 1e6) / r.ok : NaN;
      measured.get(c.name)!.push({ rps: r.rps, p50: r.p50, p99: r.p99, serverUs, redisUs, scriptUs });
    }
  }
  const incr = measured.get(INCR_ROUTE)!;
  const take = measured.get(TAKE_ROUTE)!;
  const rows: string[][] = [
    [
      'case',
      'req/s',
      'latency µs',
      'p50 ms',
      'p99 ms',
      'latency ÷ INCR route',
      'latency ÷ take route',
      'p50 ÷ take route',
      'server CPU µs/req',
      'Redis CPU µs/req',
      'Redis µs/EVALSHA',
    ],
    ...[...measured].map(([name, ms]) => [
      name,
      fmt(median(ms.map((m) => m.rps))),
      fmt(1e6 / median(ms.map((m) => m.rps)), 1),
      fmt(median(ms.map((m) => m.p50)), 3),
      fmt(median(ms.map((m) => m.p99)), 3),
      fmt(median(ms.map((m, i) => incr[i].rps / m.rps)), 3),
      fmt(median(ms.map((m, i) => take[i].rps / m.rps)), 3),
      fmt(median(ms.map((m, i) => m.p50 / take[i].p50)), 3),
      fmt(median(ms.map((m) => m.serverUs)), 1),
      fmt(median(ms.map((m) => m.redisUs)), 1),
      fmt(median(ms.map((m) => m.scriptUs)), 1),
    ]),
  ];
  const ratio = (name: string, of: Measured[]) => median(measured.get(name)!.map((m, i) => of[i].rps / m.rps));
  const notes: string[] = [];
  for (const name of [GLOBAL, RULE_GLOBAL]) {
    const vsIncr = ratio(name, incr);
    const vsTake = ratio(name, take);
    notes.push(
      `${name}: latency ${fmt(vsIncr, 3)} × the INCR route (goal ≤ ${MAX_VS_INCR}: ${vsIncr <= MAX_VS_INCR ? 'PASS' : 'MISS'}), ` +
        `${fmt(vsTake, 3)} × the take route (goal ≤ ${MAX_VS_TAKE}: ${vsTake <= MAX_VS_TAKE ? 'PASS' : 'MISS'})`,
    );
  }
  const redisOf = (of: Measured[]) => median(of.map((m) => m.redisUs));
  notes.push(
    `the take route's own latency: ${fmt(ratio(TAKE_ROUTE, incr), 3)} × the INCR route (what the take script costs over INCR); ` +
      `Redis CPU per request ${fmt(redisOf(take), 1)} µs against ${fmt(redisOf(incr), 1)} µs for the INCR route`,
  );
  const load1 = loadavg();
  notes.push(
    `load average before ${load0.map((l) => l.toFixed(2)).join(' ')}, after ${load1.map((l) => l.toFixed(2)).join(' ')}`,
  );
  console.log(`\none sequential client (${opts.rounds} round(s), ${opts.duration} s per case, medians):`);
  for (const r of rows) console.log(`  ${r.join(' | ')}`);
  for (const n of notes) console.log(`- ${n}`);
  if (opts.write && problems.length === 0)
    recorder.finish({ rows, ratio: { column: 'latency ÷ take route', baseline: TAKE_ROUTE }, notes });
  return problems;
}
