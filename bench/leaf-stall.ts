// Leaf's "segments not ready" stalls after a switch to idmint, run by `npm run bench:leaf-stall`.
//
// A Leaf-shaped table (leaf_alloc from Leaf's published DDL, one biz_tag with a small step, 1000
// by default as Leaf's example rows) is created in a scratch database and imported with
// `POST /v1/admin/import`; then C concurrent keep-alive clients call Leaf's route
// `GET /api/segment/get/{tag}` on an idmint node for a fixed time, as fast as it answers
// (closed loop: each client sends its next request when the last one is answered). The same
// load runs against a bare Fastify route answering a constant number, in this same process, as
// the baseline. Two tags are imported from two such rows: `idmint` serves one as imported (idmint
// sizes later segments to the observed rate), `idmint-fixed` the other with max_step pinned to
// Leaf's step, so that its segments stay that small and refills come many times a second. The
// cases alternate in every round (the order flips each round), and the table shows each round
// and the medians.
//
// Per case and round: requests answered, errors (any non-200 or socket error), refill waits
// (idmint_refill_waits_total of the tag on /metrics, before and after: takes that found Redis
// dry and waited for a refill, each for all the requests queued then), segments allocated
// (idmint_segments_allocated_total) and their mean size, p50/p99/max latency. Every idmint
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
import { startNode } from '../src/process/serve.js';
import { ADMIN_TOKEN, cleanup, testConfig, testNames } from '../tools/env.js';
import { dropDb, LEAF_DDL, oldDb } from '../tools/old-systems.js';
import { readBenchOptions } from './common-options.js';
import { median } from './stats.js';
import { startRun, tableRows } from './record.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
/** The idmint cases: the tag each imports. `idmint` keeps idmint's sizing of segments to the rate;
 * `idmint-fixed` pins the tag's max_step to Leaf's step, so that every segment holds only that many IDs. */
const TAGS = { idmint: 'bench.leaf', 'idmint-fixed': 'bench.leaf.fixed' } as const;
const OLD_MAX = 123_456_789n;

const opts = { duration: 5, warmup: 1, rounds: 3, connections: 64, step: 1000, write: true };
const USAGE =
  'npm run bench:leaf-stall -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--step N] [--no-write]';
const SHARED = {
  duration: [0.5, 600],
  warmup: [0, 600],
  rounds: [1, 100],
  connections: [1, 1000],
  write: true,
} as const;
readBenchOptions(process.argv.slice(2), USAGE, SHARED, opts, (a) => {
  if (a.flag !== '--step') return false;
  opts.step = a.whole(1, 100_000_000);
  return true;
});

type CaseName = 'baseline' | keyof typeof TAGS;
const CASES: readonly CaseName[] = ['baseline', 'idmint', 'idmint-fixed'];

interface Result {
  name: CaseName;
  round: number;
  requests: number;
  rps: number;
  errors: number;
  refillWaits: number;
  allocations: number;
  /** Mean size of the segments allocated (NaN when none was). */
  segmentSize: number;
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
      res.on('data', (c: string) => {
        body += c;
      });
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

interface Snapshot {
  waits: number;
  allocations: number;
  sizeSum: number;
  sizeCount: number;
}

/** The tag's refill waits, allocations and segment sizes from /metrics (each summed over its series, 0 when absent). */
async function snapshot(base: string, tag: string): Promise<Snapshot> {
  const text = (await (await fetch(`${base}/metrics`)).text()).split('\n');
  const of = (name: string) => {
    let sum = 0;
    for (const line of text)
      if (line.startsWith(`${name}{`) && line.includes(`tag="${tag}"`))
        sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    return sum;
  };
  return {
    waits: of('idmint_refill_waits_total'),
    allocations: of('idmint_segments_allocated_total'),
    sizeSum: of('idmint_segment_size_sum'),
    sizeCount: of('idmint_segment_size_count'),
  };
}

const problems: string[] = [];
const seen = new Map<string, Set<bigint>>();
let checked = 0;

/** C clients in a closed loop for `seconds`; idmint answers are checked (see the header). */
async function load(
  url: URL,
  seconds: number,
  tag: string | undefined,
): Promise<{ requests: number; errors: number; lat: Float64Array; elapsed: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.connections });
  const lat: number[] = [];
  let errors = 0;
  const errorExamples: string[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: opts.connections }, async () => {
      let last = OLD_MAX;
      while (performance.now() < end) {
        const r = await get(agent, url);
        lat.push(r.ms);
        if (r.status !== 200) {
          errors++;
          if (errorExamples.length < 3) errorExamples.push(`${r.status} ${r.body.slice(0, 200)}`);
          continue;
        }
        if (tag === undefined) continue;
        if (!/^[1-9]\d*$/.test(r.body)) {
          problems.push(`not a bare decimal: ${JSON.stringify(r.body.slice(0, 100))}`);
          continue;
        }
        const id = BigInt(r.body);
        if (id <= last)
          problems.push(`ID ${id} after ${last} on one client${last === OLD_MAX ? ' (the old max_id)' : ''}`);
        let ids = seen.get(tag);
        if (!ids) seen.set(tag, (ids = new Set()));
        if (ids.has(id)) problems.push(`ID ${id} of ${tag} twice`);
        ids.add(id);
        checked++;
        last = id;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  if (errorExamples.length) console.log(`  errors, e.g.: ${errorExamples.join(' | ')}`);
  return { requests: lat.length, errors, lat: Float64Array.from(lat).sort(), elapsed };
}

async function main(): Promise<void> {
  const recorder = startRun('leaf-stall');
  const names = testNames();
  const leafDb = `${names.db}_leaf`;
  const leaf = await oldDb(leafDb, [LEAF_DDL]);
  const node = await startNode(testConfig(names, { LOG_LEVEL: 'error' }));
  const bare = Fastify({ logger: false });
  bare.get('/api/segment/get/:tag', async (_req, reply) => reply.type('text/plain').send('1'));
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
  const results: Result[] = [];
  try {
    for (const tag of Object.values(TAGS)) {
      await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', [
        tag,
        String(OLD_MAX),
        opts.step,
        'bench',
      ]);
    }
    const nodeUrl = (node as unknown as { url: string }).url;
    const imp = await fetch(`${nodeUrl}/v1/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ system: 'leaf', mysql: leaf.url }),
    });
    if (imp.status !== 200) throw new Error(`import failed: ${imp.status} ${await imp.text()}`);
    const pin = await fetch(`${nodeUrl}/v1/admin/tags/${TAGS['idmint-fixed']}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ max_step: opts.step }),
    });
    if (pin.status !== 200) throw new Error(`pinning max_step failed: ${pin.status} ${await pin.text()}`);
    console.log(
      `imported leaf_alloc rows ${Object.values(TAGS).join(', ')} (max_id ${OLD_MAX}, step ${opts.step}); ${opts.connections} clients, ${opts.duration} s per case, ${opts.rounds} round(s)`,
    );
    const urls: Record<CaseName, URL> = {
      baseline: new URL(`/api/segment/get/${TAGS.idmint}`, bareUrl),
      idmint: new URL(`/api/segment/get/${TAGS.idmint}`, nodeUrl),
      'idmint-fixed': new URL(`/api/segment/get/${TAGS['idmint-fixed']}`, nodeUrl),
    };
    // Warm-up (JIT, connections), uncounted in the medians: idmint's row is shown, as it holds
    // the first seconds after the import, while the tag still has Leaf's step. Its answers are
    // checked as well.
    const run = async (name: CaseName, round: number, seconds: number) => {
      const tag = name === 'baseline' ? undefined : TAGS[name];
      const isId = tag !== undefined;
      const zero: Snapshot = { waits: 0, allocations: 0, sizeSum: 0, sizeCount: 0 };
      const s0 = tag ? await snapshot(nodeUrl, tag) : zero;
      const r = await load(urls[name], seconds, tag);
      const s1 = tag ? await snapshot(nodeUrl, tag) : zero;
      const res: Result = {
        name,
        round,
        requests: r.requests,
        rps: r.requests / r.elapsed,
        errors: r.errors,
        refillWaits: s1.waits - s0.waits,
        allocations: s1.allocations - s0.allocations,
        segmentSize: (s1.sizeSum - s0.sizeSum) / (s1.sizeCount - s0.sizeCount),
        p50: quantile(r.lat, 0.5),
        p99: quantile(r.lat, 0.99),
        max: r.lat.length ? r.lat[r.lat.length - 1] : NaN,
      };
      console.log(
        `${round ? `round ${round}` : 'warm-up'} ${name.padEnd(12)} ${res.requests} requests (${res.rps.toFixed(0)}/s), ${res.errors} errors, ` +
          `${isId ? `${res.refillWaits} refill waits, ${res.allocations} segments allocated (mean size ${res.segmentSize.toFixed(0)}), ` : ''}p50 ${res.p50.toFixed(2)} ms, p99 ${res.p99.toFixed(2)} ms, max ${res.max.toFixed(2)} ms`,
      );
      return res;
    };
    if (opts.warmup > 0) {
      await run('baseline', 0, opts.warmup);
      results.push(await run('idmint', 0, opts.warmup));
      results.push(await run('idmint-fixed', 0, opts.warmup));
    }
    for (let round = 1; round <= opts.rounds; round++) {
      const order: CaseName[] = round % 2 ? [...CASES] : [...CASES].reverse();
      for (const name of order) results.push(await run(name, round, opts.duration));
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
    recorder.finish({
      rows: tableRows(report),
      ratio: { of: 'req/s', baseline: 'baseline, median', cases: (n) => n.endsWith(', median') },
    });
  }
  if (problems.length) {
    console.error(`FAILED: ${problems.length} broken check(s), e.g.:\n  ${problems.slice(0, 5).join('\n  ')}`);
    process.exitCode = 1;
  }
}

function render(results: Result[]): string {
  const f = (x: number | undefined, d = 2) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
  const row = (label: string, r: Omit<Result, 'name' | 'round'>, id: boolean) =>
    `| ${label} | ${f(r.requests, 0)} | ${f(r.rps, 0)} | ${f(r.errors, 0)} | ${id ? f(r.refillWaits, 0) : '-'} | ${id ? f(r.allocations, 0) : '-'} | ${id ? f(r.segmentSize, 0) : '-'} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.max)} |`;
  const lines = [
    '# Leaf route after an import: stalls while segments refill',
    '',
    `Command: \`npm run bench:leaf-stall -- --duration ${opts.duration} --warmup ${opts.warmup} --rounds ${opts.rounds} --connections ${opts.connections} --step ${opts.step}\``,
    `(${new Date().toISOString()}, ${cpus().length} CPUs shared with other work running at the same time, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} at the end; Node ${process.version}).`,
    'The machine was busy: absolute rates and tail latencies vary from round to round; compare within a round.',
    '',
    `Two leaf_alloc rows (max_id ${OLD_MAX}, step ${opts.step}) imported with \`POST /v1/admin/import\`, then ${opts.connections} keep-alive clients`,
    'in a closed loop on `GET /api/segment/get/{tag}`: idmint (in this process, real Redis and MariaDB) against a bare',
    'Fastify route answering a constant, in the same process, alternating each round. `idmint`: the imported tag as',
    `it is (idmint sizes its segments to the rate); \`idmint-fixed\`: the other tag with \`max_step\` ${opts.step}, so every`,
    "segment holds Leaf's step and refills come many times a second. Errors: any non-200 or socket",
    "error. Refill waits: `idmint_refill_waits_total` of the tag (takes that found the tag's Redis segments dry and",
    'waited for a refill; one take serves every request queued at that moment). Segment size: mean of the segments',
    'allocated (`idmint_segment_size`): idmint sizes segments to the',
    'observed rate. The warm-up row holds the first seconds after the import (the first segment is allocated on the',
    'first request), and is left out of the medians. Every idmint answer was checked: above the old max_id,',
    'increasing per client, never twice.',
    '',
    '| case | requests | req/s | errors | refill waits | segments allocated | mean segment size | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const name of CASES) {
    const rs = results.filter((r) => r.name === name && r.round > 0);
    for (const r of results.filter((x) => x.name === name && x.round === 0))
      lines.push(row(`${name}, warm-up`, r, true));
    for (const r of rs) lines.push(row(`${name}, round ${r.round}`, r, name !== 'baseline'));
    const m = (k: keyof Omit<Result, 'name' | 'round'>) => median(rs.map((r) => r[k])) ?? NaN;
    lines.push(
      row(
        `**${name}, median**`,
        {
          requests: m('requests'),
          rps: m('rps'),
          errors: m('errors'),
          refillWaits: m('refillWaits'),
          allocations: m('allocations'),
          segmentSize: m('segmentSize'),
          p50: m('p50'),
          p99: m('p99'),
          max: m('max'),
        },
        name !== 'baseline',
      ),
    );
  }
  lines.push(
    '',
    problems.length
      ? `**${problems.length} broken check(s)**: ${problems.slice(0, 3).join('; ')}`
      : `Checks: ${checked} IDs, all above ${OLD_MAX}, increasing per client, none twice per tag.`,
    '',
  );
  lines.push(
    '## Leaf under the same load (from its source, not run here)',
    '',
    'Leaf cannot be built and run on this machine. Its segment mode (`SegmentIDGenImpl`) keeps two buffers per',
    'biz_tag in each node; when less than 90 % of the current segment is left it loads the next one from MySQL on a',
    'thread of that node. A request that finds the current segment spent while the load is still running spins, then',
    'sleeps 10 ms once, and if the next segment is still not ready answers `EXCEPTION_ID_TWO_SEGMENTS_ARE_NULL`',
    '(-3; "Both two segments ... are not ready!"), which its HTTP server turns into an HTTP 500. Leaf doubles the step',
    'of a biz_tag whose segment lasted under 15 minutes (up to 1,000,000), one refill at a time. idmint requests a refill',
    'when a fifth of the segment is used, any process allocates it, and a request that finds Redis dry waits for it',
    '(up to `REFILL_WAIT_MS`, 3 s by default) instead of failing.',
    '',
  );
  return lines.join('\n');
}

await main();
