// Leaf's "segments not ready" stalls after a switch to idmint, run by `npm run bench:leaf-stall`.
//
// A Leaf-shaped table (leaf_alloc from Leaf's published DDL, one biz_tag with a small step, 1000
// by default as Leaf's example rows) is created in a scratch database and imported with
// `POST /v1/admin/import`; then C concurrent keep-alive clients call Leaf's route
// `GET /api/segment/get/{tag}` on an idmint node for a fixed time, as fast as it answers
// (closed loop: each client sends its next request when the last one is answered). The same
// load runs against a bare Fastify route answering a constant number, in this same process, as
// the baseline; the two cases alternate in every round (the order flips each round), and the
// table shows each round and the medians.
//
// Per case and round: requests answered, errors (any non-200 or socket error), requests that
// waited on a refill (idmint_refill_waits_total of the tag on /metrics, before and after),
// segments allocated (idmint_segments_allocated_total), p50/p99/max latency. Every idmint
// answer is checked: a bare decimal above the old max_id, increasing on each client (its
// requests are sequential) and never twice in the whole run; a broken check fails the run
// (exit code 1). idmint runs in this process against the real Redis and MySQL/MariaDB with a
// database and key prefix of its own, removed at the end, as the scratch Leaf database.
//
// Flags: --duration S (per case and round, default 5)  --warmup S (each case once, uncounted,
//        before the rounds, default 1)  --rounds N (default 3)
//        --connections N (default 64)  --step N (leaf_alloc.step, default 1000)  --no-write
// Results: bench/results/leaf-stall-latest.md
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { startNode } from '../src/api/server.js';
import { ADMIN_TOKEN, cleanup, testConfig, testNames } from '../test/helpers/env.js';
import { dropDb, LEAF_DDL, oldDb } from '../test/helpers/old-systems.js';
import { readOptions } from './args.js';
import { median } from './stats.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const TAG = 'bench.leaf';
const OLD_MAX = 123_456_789n;

const opts = { duration: 5, warmup: 1, rounds: 3, connections: 64, step: 1000, write: true };
const USAGE = 'npm run bench:leaf-stall -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--step N] [--no-write]';
readOptions(process.argv.slice(2), USAGE, (a) => {
  switch (a.flag) {
    case '--duration': opts.duration = a.number(0.5, 600); break;
    case '--warmup': opts.warmup = a.number(0, 600); break;
    case '--rounds': opts.rounds = a.whole(1, 100); break;
    case '--connections': opts.connections = a.whole(1, 1000); break;
    case '--step': opts.step = a.whole(1, 100_000_000); break;
    case '--no-write': opts.write = false; break;
    default: return false;
  }
  return true;
});

type CaseName = 'baseline' | 'idmint';

interface Result {
  name: CaseName;
  round: number;
  requests: number;
  rps: number;
  errors: number;
  refillWaits: number;
  allocations: number;
  p50: number;
  p99: number;
  max: number;
}

/** One GET on a keep-alive agent: status, body and latency in ms; a socket error is status 0. */
function get(agent: Agent, url: URL): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { agent, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - t0 }));
      res.on('error', (e) => resolve({ status: 0, body: e.message, ms: performance.now() - t0 }));
    });
    req.on('error', (e) => resolve({ status: 0, body: e.message, ms: performance.now() - t0 }));
    req.setTimeout(10_000, () => req.destroy(new Error('timeout after 10 s')));
    req.end();
  });
}

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** A Prometheus counter of the tag, summed over its series (0 when absent). */
async function counter(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(`tag="${TAG}"`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

const problems: string[] = [];
const seen = new Set<bigint>();

/** C clients in a closed loop for `seconds`; idmint answers are checked (see the header). */
async function load(url: URL, seconds: number, check: boolean): Promise<{ requests: number; errors: number; lat: Float64Array; elapsed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.connections });
  const lat: number[] = [];
  let errors = 0;
  const errorExamples: string[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: opts.connections }, async () => {
    let last = OLD_MAX;
    while (performance.now() < end) {
      const r = await get(agent, url);
      lat.push(r.ms);
      if (r.status !== 200) {
        errors++;
        if (errorExamples.length < 3) errorExamples.push(`${r.status} ${r.body.slice(0, 200)}`);
        continue;
      }
      if (!check) continue;
      if (!/^[1-9]\d*$/.test(r.body)) {
        problems.push(`not a bare decimal: ${JSON.stringify(r.body.slice(0, 100))}`);
        continue;
      }
      const id = BigInt(r.body);
      if (id <= last) problems.push(`ID ${id} after ${last} on one client${last === OLD_MAX ? ' (the old max_id)' : ''}`);
      if (seen.has(id)) problems.push(`ID ${id} twice`);
      seen.add(id);
      last = id;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  if (errorExamples.length) console.log(`  errors, e.g.: ${errorExamples.join(' | ')}`);
  return { requests: lat.length, errors, lat: Float64Array.from(lat).sort(), elapsed };
}

async function main(): Promise<void> {
  const names = testNames();
  const leafDb = `${names.db}_leaf`;
  const leaf = await oldDb(leafDb, [LEAF_DDL]);
  const node = await startNode(testConfig(names, { LOG_LEVEL: 'error' }));
  const bare = Fastify({ logger: false });
  bare.get('/api/segment/get/:tag', async (_req, reply) => reply.type('text/plain').send('1'));
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
  const results: Result[] = [];
  try {
    await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', [TAG, String(OLD_MAX), opts.step, 'bench']);
    const nodeUrl = (node as unknown as { url: string }).url;
    const imp = await fetch(`${nodeUrl}/v1/admin/import`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ system: 'leaf', mysql: leaf.url }),
    });
    if (imp.status !== 200) throw new Error(`import failed: ${imp.status} ${await imp.text()}`);
    console.log(`imported leaf_alloc row ${TAG} (max_id ${OLD_MAX}, step ${opts.step}); ${opts.connections} clients, ${opts.duration} s per case, ${opts.rounds} round(s)`);
    const urls: Record<CaseName, URL> = { baseline: new URL(`/api/segment/get/${TAG}`, bareUrl), idmint: new URL(`/api/segment/get/${TAG}`, nodeUrl) };
    // Uncounted warm-up (JIT, connections, the tag's first refill after the import); its idmint
    // answers are checked as well.
    if (opts.warmup > 0) for (const name of ['baseline', 'idmint'] as const) await load(urls[name], opts.warmup, name === 'idmint');
    for (let round = 1; round <= opts.rounds; round++) {
      const order: CaseName[] = round % 2 ? ['baseline', 'idmint'] : ['idmint', 'baseline'];
      for (const name of order) {
        const isId = name === 'idmint';
        const [w0, a0] = isId ? [await counter(nodeUrl, 'idmint_refill_waits_total'), await counter(nodeUrl, 'idmint_segments_allocated_total')] : [0, 0];
        const r = await load(urls[name], opts.duration, isId);
        const [w1, a1] = isId ? [await counter(nodeUrl, 'idmint_refill_waits_total'), await counter(nodeUrl, 'idmint_segments_allocated_total')] : [0, 0];
        const res: Result = {
          name, round, requests: r.requests, rps: r.requests / r.elapsed, errors: r.errors, refillWaits: w1 - w0, allocations: a1 - a0,
          p50: quantile(r.lat, 0.5), p99: quantile(r.lat, 0.99), max: r.lat.length ? r.lat[r.lat.length - 1] : NaN,
        };
        results.push(res);
        console.log(`round ${round} ${name.padEnd(8)} ${res.requests} requests (${res.rps.toFixed(0)}/s), ${res.errors} errors, ` +
          `${isId ? `${res.refillWaits} refill waits, ${res.allocations} segments allocated, ` : ''}p50 ${res.p50.toFixed(2)} ms, p99 ${res.p99.toFixed(2)} ms, max ${res.max.toFixed(2)} ms`);
      }
    }
  } finally {
    await bare.close();
    await node.close();
    await leaf.c.end();
    await dropDb(leafDb);
    await cleanup(names);
  }
  const report = render(results);
  console.log(`\n${report}`);
  if (opts.write) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}leaf-stall-latest.md`, report);
    console.log('written to bench/results/leaf-stall-latest.md');
  }
  if (problems.length) {
    console.error(`FAILED: ${problems.length} broken check(s), e.g.:\n  ${problems.slice(0, 5).join('\n  ')}`);
    process.exitCode = 1;
  }
}

function render(results: Result[]): string {
  const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
  const row = (label: string, r: Omit<Result, 'name' | 'round'>, id: boolean) =>
    `| ${label} | ${f(r.requests, 0)} | ${f(r.rps, 0)} | ${f(r.errors, 0)} | ${id ? f(r.refillWaits, 0) : '-'} | ${id ? f(r.allocations, 0) : '-'} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.max)} |`;
  const lines = [
    '# Leaf route after an import: stalls while segments refill',
    '',
    `Command: \`npm run bench:leaf-stall -- --duration ${opts.duration} --warmup ${opts.warmup} --rounds ${opts.rounds} --connections ${opts.connections} --step ${opts.step}\``,
    `(${new Date().toISOString()}, ${cpus().length} CPUs shared with other work, load average before the report ${loadavg().map((x) => x.toFixed(2)).join(' ')}; Node ${process.version})`,
    '',
    `A leaf_alloc row (max_id ${OLD_MAX}, step ${opts.step}) imported with \`POST /v1/admin/import\`, then ${opts.connections} keep-alive clients`,
    'in a closed loop on `GET /api/segment/get/{tag}`: idmint (in this process, real Redis and MariaDB) against a bare',
    'Fastify route answering a constant, in the same process, alternating each round. Errors: any non-200 or socket',
    'error. Refill waits: `idmint_refill_waits_total` of the tag (requests that found Redis dry and waited for a',
    'refill). Every idmint answer was checked: above the old max_id, increasing per client, never twice.',
    '',
    '| case | requests | req/s | errors | refill waits | segments allocated | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const name of ['baseline', 'idmint'] as const) {
    const rs = results.filter((r) => r.name === name);
    for (const r of rs) lines.push(row(`${name}, round ${r.round}`, r, name === 'idmint'));
    const m = (k: keyof Omit<Result, 'name' | 'round'>) => median(rs.map((r) => r[k])) ?? NaN;
    lines.push(row(`**${name}, median**`, {
      requests: m('requests'), rps: m('rps'), errors: m('errors'), refillWaits: m('refillWaits'), allocations: m('allocations'),
      p50: m('p50'), p99: m('p99'), max: m('max'),
    }, name === 'idmint'));
  }
  lines.push('', problems.length ? `**${problems.length} broken check(s)**: ${problems.slice(0, 3).join('; ')}` : `Checks: ${seen.size} IDs, all above ${OLD_MAX}, increasing per client, none twice.`, '');
  return lines.join('\n');
}

await main();
