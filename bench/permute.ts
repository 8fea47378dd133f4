// Benchmark of permuted tags: `node --import tsx bench/permute.ts`.
//
// micro  what the permutation (core/permute.ts) costs per ID, in this process, for several
//        widths, against the same-run baseline of writing the counter itself (String(k)): the
//        single-ID path (idString over consecutive counters, as one process is handed them),
//        the bulk path (idStrings over runs of 1000), decoding one ID (decrypt), and building
//        a permutation (round tables or cipher) once per tag.
// http   GET /v1/id/:tag of idmint (a child process, real Redis and MySQL, a database and key
//        prefix of its own, removed at the end) for the same tag definition with and without
//        permute, in interleaved rounds at C keep-alive connections (autocannon): req/s, p99,
//        the idmint process's CPU time per request, and the permuted case's req/s ÷ the plain
//        case's (target >= 0.9; on a busy machine the CPU-time ratio is the steadier). Every answer is
//        checked: {"id":"<digits>"}, all IDs of a case distinct.
//
// Flags: --part micro,http (default both)  --widths digits:6,digits:8,... (micro)
//        --order global|node (http, default global)  --permute digits:12 (the http case's
//        setting; repeatable via a comma list)  --duration S (default 5)  --warmup S (default 1)
//        --rounds N (default 3; medians shown)  --connections N (default 50)
//        --pin (the idmint process on CPU 1, this process on CPU 0; micro runs on CPU 0)
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { domainSize, Permutation, type PermuteSpec } from '../src/core/permute.js';
import { readOptions } from '../tools/args.js';
import { pinProcess, procCpuSeconds } from '../tools/cpu.js';
import { ADMIN_TOKEN, cleanup, mysqlUrlFor, REDIS_URL, type TestNames } from '../tools/env.js';
import { countRepeats } from '../tools/duplicates.js';
import { createTag } from '../tools/node.js';
import { fmt, textTable } from '../tools/table.js';
import { runLoad } from './load.js';
import { startServer, type Server } from './server.js';

type Width = Pick<PermuteSpec, 'unit' | 'width'>;

interface Options {
  parts: string[];
  widths: Width[];
  order: 'global' | 'node';
  permutes: Width[];
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  pin: boolean;
}

function width(s: string): Width {
  const m = /^(digits|bits):(\d+)$/.exec(s);
  if (!m) throw new Error(`a width is digits:D or bits:B, got "${s}"`);
  return { unit: m[1] as Width['unit'], width: Number(m[2]) };
}
const label = (w: Width) => `${w.unit} ${w.width}`;

function parseArgs(argv: string[]): Options {
  const o: Options = {
    parts: ['micro', 'http'],
    widths: ['digits:6', 'digits:8', 'digits:9', 'digits:10', 'digits:12', 'digits:18', 'bits:32', 'bits:40', 'bits:63'].map(width),
    order: 'global',
    permutes: [width('digits:8'), width('digits:12')],
    duration: 5,
    warmup: 1,
    rounds: 3,
    connections: 50,
    pin: false,
  };
  const usage =
    'node --import tsx bench/permute.ts [--part micro,http] [--widths digits:8,bits:40] [--order global|node] [--permute digits:8,digits:12] [--duration S] [--warmup S] [--rounds N] [--connections N] [--pin]';
  readOptions(argv, usage, (a) => {
    if (a.flag === '--part') o.parts = a.list();
    else if (a.flag === '--widths') o.widths = a.list().map(width);
    else if (a.flag === '--permute') o.permutes = a.list().map(width);
    else if (a.flag === '--order') o.order = a.text() === 'node' ? 'node' : 'global';
    else if (a.flag === '--duration') o.duration = a.number(1);
    else if (a.flag === '--warmup') o.warmup = a.number(0);
    else if (a.flag === '--rounds') o.rounds = a.whole(1);
    else if (a.flag === '--connections') o.connections = a.whole(1);
    else if (a.flag === '--pin') o.pin = true;
    else return false;
    return true;
  });
  return o;
}

/** ns per call of fn(i) for i = 1..n, the best of 3 passes (the others warm it up or met noise). */
function nsPer(n: number, fn: (i: number) => unknown): number {
  let best = Infinity;
  let sink = 0;
  for (let pass = 0; pass < 3; pass++) {
    const t0 = process.hrtime.bigint();
    for (let i = 1; i <= n; i++) if (fn(i) === undefined) sink++;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / n);
  }
  if (sink < 0) console.log(sink);
  return best;
}

function micro(o: Options): void {
  const n = 200_000;
  const baseline = nsPer(n, (k) => String(k));
  const rows = [['width', 'domain', 'half bits', 'build ms', 'single ns/ID', 'bulk ns/ID', 'decode ns/ID', 'String(k) ns (baseline)']];
  for (const w of o.widths) {
    const size = domainSize(w);
    const key = randomBytes(16);
    const t0 = performance.now();
    const p = new Permutation(key, size);
    const build = performance.now() - t0;
    const single = nsPer(n, (k) => p.idString(k));
    let from = 1;
    const bulk =
      nsPer(n / 1000, () => {
        const out = p.idStrings([[from, from + 999]]);
        from += 1000;
        return out;
      }) / 1000;
    const ids = p.idStrings([[1, 10_000]]).map(BigInt);
    const decode = nsPer(10_000, (i) => p.decrypt(ids[i - 1]));
    rows.push([label(w), `[1, ${size})`, String(p.half), fmt(build, 1), fmt(single), fmt(bulk), fmt(decode), fmt(baseline)]);
  }
  console.log(`\npermutation per ID (this process${o.pin ? ', CPU 0' : ''}; best of 3 passes of ${fmt(n)} consecutive counters)`);
  console.log(textTable(rows));
}

interface HttpRow {
  name: string;
  rps: number[];
  p99: number[];
  /** The idmint process's CPU time per answered request, µs (steadier than req/s on a busy machine). */
  cpuUs: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function http(o: Options): Promise<boolean> {
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  let idmint: Server | undefined;
  const problems: string[] = [];
  const cases: { name: string; tag: string; permute?: Width }[] = [
    { name: 'plain', tag: 'bench.plain' },
    ...o.permutes.map((w, i) => ({ name: `permute ${label(w)}`, tag: `bench.p${i}`, permute: w })),
  ];
  const rows: HttpRow[] = cases.map((c) => ({ name: c.name, rps: [], p99: [], cpuUs: [] }));
  try {
    idmint = await startServer('idmint', ['src/cli.ts', 'serve'], {
      env: {
        REDIS_URL,
        MYSQL_URL: names.mysqlUrl,
        REDIS_PREFIX: names.prefix,
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        UDP_PORT: '0',
        GRPC_PORT: '0',
        NODE_ID: `bench-${id}`,
      },
      cpu: o.pin ? 1 : undefined,
    });
    for (const c of cases) {
      await createTag(idmint.url, { tag: c.tag, order: o.order, ...(c.permute ? { permute: { [c.permute.unit]: c.permute.width } } : {}) });
      await fetch(`${idmint.url}/v1/id/${c.tag}`);
    }
    for (let round = 1; round <= o.rounds; round++) {
      for (const [i, c] of cases.entries()) {
        const url = `${idmint.url}/v1/id/${c.tag}`;
        const check = { kind: 'strings', pattern: /^[1-9]\d{0,18}$/ } as const;
        if (o.warmup > 0) await runLoad(url, o.connections, o.warmup, check);
        const cpu0 = procCpuSeconds(idmint.pid);
        const r = await runLoad(url, o.connections, o.duration, check);
        rows[i].cpuUs.push(((procCpuSeconds(idmint.pid) - cpu0) / Math.max(1, r.ok)) * 1e6);
        const bad = r.non2xx + r.errors + r.timeouts + r.violations;
        if (bad > 0) problems.push(`${c.name} round ${round}: ${bad} failed or malformed answers ${r.examples.join(' | ')}`);
        const dup = countRepeats(r.strings);
        if (dup > 0) problems.push(`${c.name} round ${round}: ${dup} duplicate IDs`);
        rows[i].rps.push(r.rps);
        rows[i].p99.push(r.p99);
        console.log(
          `${c.name} (round ${round}): ${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 3)} ms, server ${fmt(rows[i].cpuUs.at(-1), 1)} µs/req, ${fmt(r.strings.length)} IDs distinct`,
        );
      }
    }
  } finally {
    await idmint?.stop(10_000).catch(() => undefined);
    await cleanup(names).catch((err: Error) => console.error(`cleanup of ${names.db} failed: ${err.message}`));
  }
  const base = rows[0];
  const table = [['case', 'req/s', 'p99 ms', 'server µs/req', 'req/s ÷ plain', 'plain µs ÷ case µs', 'target']];
  for (const r of rows) {
    // The ratio of each round, then the median of those: the rounds are interleaved.
    const ratio = median(r.rps.map((v, i) => v / base.rps[i]));
    // The same ratio from CPU time: the rate the server could sustain on one core.
    const cpuRatio = median(r.cpuUs.map((v, i) => base.cpuUs[i] / v));
    const target = r === base ? '' : ratio >= 0.9 ? 'PASS (>= 0.9)' : 'MISS (< 0.9)';
    table.push([r.name, fmt(median(r.rps)), fmt(median(r.p99), 3), fmt(median(r.cpuUs), 1), fmt(ratio, 3), fmt(cpuRatio, 3), target]);
  }
  console.log(`\nGET /v1/id/:tag, order ${o.order}, ${o.connections} connections, ${o.duration} s x ${o.rounds} rounds (medians)`);
  console.log(textTable(table));
  for (const p of problems) console.error(`FAIL ${p}`);
  return problems.length === 0;
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  if (o.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  console.log(`node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'}), 1-minute load ${fmt(loadavg()[0], 2)}`);
  if (o.parts.includes('micro')) micro(o);
  let ok = true;
  if (o.parts.includes('http')) ok = await http(o);
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
