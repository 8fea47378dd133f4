// A scale model of one hot `order: global` tag, from the latest recorded run of bench:scale
// (bench/results/runs/scale-*.json): what N cores of idmint (one serving process per core) can
// do against one Redis core, and where the curve bends. Run:
//   node --import tsx bench/scale/model.ts [--run FILE] [--no-write]
// It records its table as a run of its own (bench "scale-model"), so docs/BENCHMARKS.md shows
// the figures it computed, never figures typed by hand.
//
// Inputs, per process count P measured (1, 2, 4), all from the order-global rows of that run:
//   s(P)  server CPU per request (µs): what a request costs idmint's cores
//   k(P)  requests per take, from the nodes' own count of takes (idmint_takes_total)
//   r(P)  Redis CPU per take (µs): Redis's CPU % during the case, less its CPU % during the bare
//         route at the same P (its idle work: BullMQ, leases), over the takes per second
// The model, for C cores of idmint and one Redis core:
//   idmint-bound  C × 10^6 / s         (each core serves requests at its CPU cost per request)
//   Redis-bound   k × 10^6 / r         (one Redis core runs 10^6 / r takes a second, each for k requests)
//   throughput    the smaller of the two; the curve bends at the C where they meet.
// A process's CPU per request is a part per request and a part per take shared by the take's
// requests: s = a + b / k, fitted (least squares) to the measured points, so that fewer
// requests per take cost each request more. r is the median of the measured. Requests per take
// depend on how many requests each process has waiting; two cases bound it:
//   clients fixed      the run's connections spread over C processes: k falls as C grows, by
//                      the power law fitted to k(1), k(2), k(4) (at least 1)
//   clients per core   every process keeps the load of one process of the run: k = k(1)
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fmt } from '../../tools/table.js';
import { readBenchOptions } from '../common-options.js';
import { caseName, RUNS_DIR, startRun, type Case, type Run } from '../record.js';

const GLOBAL = '`GET /v1/id`, order global';
const BARE = 'bare Fastify route';
const CORES = [1, 2, 4, 8, 16, 32, 64];

interface Measured {
  readonly processes: number;
  readonly serverUs: number;
  readonly reqPerTake: number;
  readonly redisUsPerTake: number;
  readonly rps: number;
}

const num = (c: Case | undefined, col: string): number => {
  const v = c?.figures[col];
  if (typeof v !== 'number')
    throw new Error(`the run has no figure "${col}" for ${c ? caseName(c) : 'a missing case'}`);
  return v;
};

/** The latest recorded full bench:scale run (not a --rate run). */
function latestScaleRun(): { run: Run; file: string } {
  const files = readdirSync(RUNS_DIR)
    .filter((f) => /^scale-\d/.test(f) && f.endsWith('.json'))
    .sort();
  if (files.length === 0) throw new Error('no recorded bench:scale run in bench/results/runs');
  const file = files[files.length - 1];
  return { run: JSON.parse(readFileSync(new URL(file, RUNS_DIR), 'utf8')) as Run, file };
}

function measured(run: Run): Measured[] {
  const at = (name: string, p: number) => run.cases.find((c) => c.labels[0] === name && c.labels[1] === String(p));
  const out: Measured[] = [];
  for (const p of [1, 2, 4, 8, 16]) {
    const g = at(GLOBAL, p);
    if (!g) continue;
    const takes = num(g, 'takes/s (nodes)');
    const redisPct =
      num(g, 'Redis CPU %') -
      (typeof at(BARE, p)?.figures['Redis CPU %'] === 'number' ? num(at(BARE, p), 'Redis CPU %') : 0);
    out.push({
      processes: p,
      serverUs: num(g, 'server usec per request'),
      reqPerTake: num(g, 'req per take (nodes)'),
      redisUsPerTake: (Math.max(0, redisPct) * 1e4) / takes,
      rps: num(g, 'req/s'),
    });
  }
  if (out.length < 2) throw new Error('the run measured order global at fewer than two process counts');
  return out;
}

/** Least-squares fit of log k = a + b log P: k(P) = e^a P^b. */
function fitPower(ms: readonly Measured[]): (p: number) => number {
  const xs = ms.map((m) => Math.log(m.processes));
  const ys = ms.map((m) => Math.log(m.reqPerTake));
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  const b = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  const a = my - b * mx;
  return (p) => Math.max(1, Math.exp(a + b * Math.log(p)));
}

/** Least-squares fit of s = a + b / k over the measured points: CPU per request and per take (µs). */
function fitCost(ms: readonly Measured[]): { perRequest: number; perTake: number } {
  const xs = ms.map((m) => 1 / m.reqPerTake);
  const ys = ms.map((m) => m.serverUs);
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  const b = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return { perRequest: my - b * mx, perTake: b };
}

const medianOf = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

function main(): void {
  let runFile: string | undefined;
  const o = { write: true };
  readBenchOptions(
    process.argv.slice(2),
    'node --import tsx bench/scale/model.ts [--run FILE] [--no-write]',
    { write: true },
    o,
    (a) => {
      if (a.flag !== '--run') return false;
      runFile = a.text();
      return true;
    },
  );
  const { run, file } = runFile
    ? { run: JSON.parse(readFileSync(runFile, 'utf8')) as Run, file: runFile }
    : latestScaleRun();
  const ms = measured(run);
  const k = fitPower(ms);
  const cost = fitCost(ms);
  const redisUs = medianOf(ms.map((m) => m.redisUsPerTake));
  const serverUs = (kk: number) => cost.perRequest + cost.perTake / kk;
  const inputs: string[][] = [
    ['case', 'processes', 'req/s', 'server CPU µs/req', 'req per take', 'Redis CPU µs/take'],
    ...ms.map((m) => [
      `measured: ${GLOBAL}`,
      String(m.processes),
      fmt(m.rps),
      fmt(m.serverUs, 1),
      fmt(m.reqPerTake, 1),
      fmt(m.redisUsPerTake, 1),
    ]),
  ];
  const rows: string[][] = [
    [
      'case',
      'cores',
      'req per take',
      'server CPU µs/req',
      'idmint-bound req/s',
      'Redis-bound req/s',
      'model req/s',
      'bound by',
    ],
  ];
  const bends: string[] = [];
  for (const [scenario, kOf] of [
    [
      'clients fixed',
      (c: number) => (ms.some((m) => m.processes === c) ? ms.find((m) => m.processes === c)!.reqPerTake : k(c)),
    ],
    ['clients per core', () => ms[0].reqPerTake],
  ] as const) {
    let bent: number | undefined;
    for (const c of CORES) {
      const node = (c * 1e6) / serverUs(kOf(c));
      const redis = (kOf(c) * 1e6) / redisUs;
      if (bent === undefined && redis < node) bent = c;
      rows.push([
        `model, ${scenario}`,
        String(c),
        fmt(kOf(c), 1),
        fmt(serverUs(kOf(c)), 1),
        fmt(node),
        fmt(redis),
        fmt(Math.min(node, redis)),
        redis < node ? 'Redis' : 'idmint',
      ]);
    }
    bends.push(
      bent === undefined
        ? `${scenario}: idmint's cores bound it up to ${CORES[CORES.length - 1]} cores; Redis is not reached`
        : `${scenario}: the curve bends at ${bent} cores: from there one Redis core (about ${fmt(1e6 / redisUs)} takes/s) bounds it, and more cores add only what more requests per take give`,
    );
  }
  const notes = [
    `inputs from ${file.replace(/^.*\//, '')} (${run.command ?? 'bench:scale'}): order global at ${ms.map((m) => m.processes).join(', ')} processes`,
    ...ms.map(
      (m) =>
        `${m.processes} process(es): ${fmt(m.serverUs, 1)} µs of server CPU per request, ${fmt(m.reqPerTake, 1)} requests per take, ${fmt(m.redisUsPerTake, 1)} µs of Redis CPU per take`,
    ),
    `fitted: ${fmt(cost.perRequest, 1)} µs of server CPU per request plus ${fmt(cost.perTake, 1)} µs per take shared by its requests; Redis ${fmt(redisUs, 1)} µs of CPU per take (median)`,
    ...bends,
  ];
  const limit = run.cases.find((c) => c.labels[0].startsWith('redis-benchmark'));
  if (typeof limit?.figures['Redis calls/s'] === 'number') {
    notes.push(
      `redis-benchmark ran ${fmt(limit.figures['Redis calls/s'] as number)} takes/s on the same Redis (50 clients, no idmint): a Redis core kept busy spends less per take than one woken for each, so the Redis bound above is the cautious one`,
    );
  }
  console.log([...inputs, ...rows.slice(1)].map((r) => r.join(' | ')).join('\n'));
  for (const n of notes) console.log(`- ${n}`);
  // The ratio charted: each row's throughput over one core's (of the clients-fixed case).
  if (o.write)
    startRun('scale-model').finish({
      rows,
      labelColumns: 2,
      ratio: { of: 'model req/s', baseline: 'model, clients fixed, 1' },
      notes,
    });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
