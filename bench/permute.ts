// Benchmark of permuted tags: `npm run bench:permute` (node --import tsx bench/permute.ts).
//
// micro  what the permutation (core/permute.ts) costs per ID, in this process, for several
//        widths, against the same-run baseline of the plain rendering (layout's seqString of a
//        tag without permute, String(k)): the single-ID path (idString over consecutive
//        counters, as one process is handed them), the bulk path (idStrings over runs of
//        1000), decoding one ID (decrypt), and building a permutation (round tables or cipher)
//        once per tag.
// http   GET /v1/id/:tag of idmint (a child process, real Redis and MySQL, a database and key
//        prefix of its own, removed at the end) for the same tag definition with and without
//        permute, for each order, in interleaved rounds at C keep-alive connections
//        (autocannon, in this process): req/s, p99, the idmint process's CPU time per request
//        and share of a core, this process's share of a core (the load generator: below the
//        server's, the server is the limit), how busy each one's core was with anything (pinned:
//        other work there holds it back), and the permuted case's req/s ÷ the plain case's
//        of the same order (target >= 0.9; on a busy machine the CPU-time ratio is the
//        steadier). Every answer is checked: {"id":"<digits>"}, all IDs of a case distinct.
//
// Each part records its run (bench/record.ts): permute-micro and permute-http under
// bench/results/runs/; the load average is printed before and after.
//
// Flags: --part micro,http (default both)  --widths digits:6,digits:8,... (micro)
//        --order global,node (http, default both)  --permute digits:12 (the http case's
//        setting; repeatable via a comma list)  --duration S (default 5)  --warmup S (default 1)
//        --rounds N (default 3; medians shown)  --connections N (default 50)
//        --pin (the idmint process on CPU 1, this process on CPU 0; micro runs on CPU 0)
//        --cpu-prof DIR (idmint writes its .cpuprofile there when it stops: bench/cpuprofile-summary.ts)
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { type Interleave, seqString } from '../src/core/layout.js';
import { domainSize, Permutation, type PermuteSpec } from '../src/core/permute.js';
import { pinProcess, procCpuSeconds, selfCpuSeconds } from '../tools/cpu.js';
import { cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { countRepeats } from '../tools/duplicates.js';
import { createTag } from '../tools/node.js';
import { fmt, textTable } from '../tools/table.js';
import { readBenchOptions } from './common-options.js';
import { busySeconds, limit } from './permute/cpu-shares.js';
import { runLoad } from './load.js';
import { startRun } from './record.js';
import { idmintEnv, runMain, startServer, type Server } from './server.js';

type Width = Pick<PermuteSpec, 'unit' | 'width'>;
type Order = 'global' | 'node';

interface Options {
  parts: string[];
  widths: Width[];
  orders: Order[];
  permutes: Width[];
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  pin: boolean;
  cpuProf: string;
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
    widths: [
      'digits:6',
      'digits:8',
      'digits:9',
      'digits:10',
      'digits:12',
      'digits:18',
      'bits:32',
      'bits:40',
      'bits:63',
    ].map(width),
    orders: ['global', 'node'],
    permutes: [width('digits:8'), width('digits:12')],
    duration: 5,
    warmup: 1,
    rounds: 3,
    connections: 50,
    pin: false,
    cpuProf: '',
  };
  const usage =
    'node --import tsx bench/permute.ts [--part micro,http] [--widths digits:8,bits:40] [--order global,node] [--permute digits:8,digits:12] [--duration S] [--warmup S] [--rounds N] [--connections N] [--pin] [--cpu-prof DIR]';
  readBenchOptions(argv, usage, { duration: [1], warmup: [0], rounds: [1], connections: [1], pin: true }, o, (a) => {
    if (a.flag === '--part') o.parts = a.list();
    else if (a.flag === '--widths') o.widths = a.list().map(width);
    else if (a.flag === '--permute') o.permutes = a.list().map(width);
    else if (a.flag === '--order') {
      o.orders = a.list().map((x) => {
        if (x !== 'global' && x !== 'node') throw new Error(`--order takes global and node, got "${x}"`);
        return x;
      });
    } else if (a.flag === '--cpu-prof') o.cpuProf = a.text();
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

const PLAIN = 'plain rendering (seqString, no permute)';

/** The micro table: the plain rendering (the baseline) first, then each width. */
function micro(o: Options): string[][] {
  const n = 200_000;
  const plain: Interleave = { stride: 1, offset: 0 };
  const plainSingle = nsPer(n, (k) => seqString(plain, k));
  let plainFrom = 1;
  const plainBulk =
    nsPer(n / 1000, () => {
      const out = new Array<string>(1000);
      for (let j = 0; j < 1000; j++) out[j] = seqString(plain, plainFrom + j);
      plainFrom += 1000;
      return out;
    }) / 1000;
  const head = [
    'case',
    'domain',
    'half bits',
    'build ms',
    'single ns/ID',
    'bulk ns/ID',
    'decode ns/ID',
    'single ns added',
    'single ÷ plain',
  ];
  const rows = [head, [PLAIN, '-', '-', '-', fmt(plainSingle, 1), fmt(plainBulk, 1), '-', '-', fmt(1, 2)]];
  for (const w of o.widths) {
    const size = domainSize(w);
    const key = randomBytes(16);
    const t0 = performance.now();
    const p = new Permutation(key, size);
    const build = performance.now() - t0;
    // The single-ID path as the server takes it: seqString of a permuted tag (the cached permutation's idString).
    const tag: Interleave = { stride: 1, offset: 0, permute: { ...w, key: key.toString('hex') } };
    const single = nsPer(n, (k) => seqString(tag, k));
    let from = 1;
    const bulk =
      nsPer(n / 1000, () => {
        const out = p.idStrings([[from, from + 999]]);
        from += 1000;
        return out;
      }) / 1000;
    const ids = p.idStrings([[1, 10_000]]).map(BigInt);
    const decode = nsPer(10_000, (i) => p.decrypt(ids[i - 1]));
    rows.push([
      `permute ${label(w)}`,
      `[1, ${size})`,
      String(p.half),
      fmt(build, 1),
      fmt(single, 1),
      fmt(bulk, 1),
      fmt(decode, 1),
      fmt(single - plainSingle, 1),
      fmt(single / plainSingle, 2),
    ]);
  }
  console.log(
    `\npermutation per ID (this process${o.pin ? ', CPU 0' : ''}; best of 3 passes of ${fmt(n)} consecutive counters)`,
  );
  console.log(textTable(rows));
  return rows;
}

interface HttpRow {
  order: Order;
  name: string;
  rps: number[];
  p99: number[];
  /** The idmint process's CPU time per answered request, µs (steadier than req/s on a busy machine). */
  cpuUs: number[];
  /** The idmint process's CPU time over the measured window's wall time, % of one core. */
  serverPct: number[];
  /** This process's (the load generator's) CPU time over the window's wall time, % of one core. */
  loadPct: number[];
  /** The server's CPU busy over the window with anything (idmint and any other work), % (unpinned: all CPUs). */
  corePct: number[];
  /** The load generator's CPU busy over the window with anything, % (pinned only). */
  loadCorePct: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface HttpResult {
  ok: boolean;
  /** The table as printed: header first. */
  rows: string[][];
  notes: string[];
}

async function http(o: Options): Promise<HttpResult> {
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  let idmint: Server | undefined;
  const problems: string[] = [];
  const cases: { order: Order; name: string; tag: string; permute?: Width }[] = o.orders.flatMap((order) => [
    { order, name: 'plain', tag: `bench.${order}.plain` },
    ...o.permutes.map((w, i) => ({ order, name: `permute ${label(w)}`, tag: `bench.${order}.p${i}`, permute: w })),
  ]);
  const rows: HttpRow[] = cases.map((c) => ({
    order: c.order,
    name: c.name,
    rps: [],
    p99: [],
    cpuUs: [],
    serverPct: [],
    loadPct: [],
    corePct: [],
    loadCorePct: [],
  }));
  try {
    idmint = await startServer('idmint', ['src/cli.ts', 'serve'], {
      env: idmintEnv(names, `bench-${id}`),
      cpu: o.pin ? 1 : undefined,
      nodeFlags: o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProf}`] : undefined,
    });
    for (const c of cases) {
      await createTag(idmint.url, {
        tag: c.tag,
        order: c.order,
        ...(c.permute ? { permute: { [c.permute.unit]: c.permute.width } } : {}),
      });
      await fetch(`${idmint.url}/v1/id/${c.tag}`);
    }
    const check = { kind: 'strings', pattern: /^[1-9]\d{0,18}$/ } as const;
    for (let round = 1; round <= o.rounds; round++) {
      for (const [i, c] of cases.entries()) {
        const url = `${idmint.url}/v1/id/${c.tag}`;
        if (o.warmup > 0) await runLoad(url, o.connections, o.warmup, check);
        const cpu0 = procCpuSeconds(idmint.pid);
        const self0 = selfCpuSeconds();
        const busy0 = busySeconds(o.pin ? 1 : undefined);
        const loadBusy0 = o.pin ? busySeconds(0) : NaN;
        const t0 = performance.now();
        const r = await runLoad(url, o.connections, o.duration, check);
        const wall = (performance.now() - t0) / 1000;
        const serverS = procCpuSeconds(idmint.pid) - cpu0;
        rows[i].cpuUs.push((serverS / Math.max(1, r.ok)) * 1e6);
        rows[i].serverPct.push((serverS / wall) * 100);
        rows[i].loadPct.push(((selfCpuSeconds() - self0) / wall) * 100);
        rows[i].loadCorePct.push(((busySeconds(0) - loadBusy0) / wall) * 100);
        rows[i].corePct.push(((busySeconds(o.pin ? 1 : undefined) - busy0) / wall / (o.pin ? 1 : cpus().length)) * 100);
        const bad = r.non2xx + r.errors + r.timeouts + r.violations;
        if (bad > 0)
          problems.push(
            `${c.order} ${c.name} round ${round}: ${bad} failed or malformed answers ${r.examples.join(' | ')}`,
          );
        const dup = countRepeats(r.strings);
        if (dup > 0) problems.push(`${c.order} ${c.name} round ${round}: ${dup} duplicate IDs`);
        rows[i].rps.push(r.rps);
        rows[i].p99.push(r.p99);
        console.log(
          `${c.order} ${c.name} (round ${round}): ${fmt(r.rps)} req/s, p99 ${fmt(r.p99, 3)} ms, server ${fmt(rows[i].cpuUs.at(-1), 1)} µs/req ` +
            `(${fmt(rows[i].serverPct.at(-1))}% of a core), load generator ${fmt(rows[i].loadPct.at(-1))}%, cores ${fmt(rows[i].corePct.at(-1))}% / ${fmt(rows[i].loadCorePct.at(-1))}% busy, ` +
            `${fmt(r.strings.length)} IDs distinct`,
        );
      }
    }
  } finally {
    await idmint?.stop(10_000).catch(() => undefined);
    await cleanup(names).catch((err: Error) => console.error(`cleanup of ${names.db} failed: ${err.message}`));
  }
  const table = [
    [
      'order',
      'case',
      'req/s',
      'p99 ms',
      'server µs/req',
      'server CPU %',
      'load generator CPU %',
      'server core busy %',
      'load generator core busy %',
      'req/s ÷ plain',
      'plain µs ÷ case µs',
      'target',
    ],
  ];
  const notes: string[] = [];
  for (const order of o.orders) {
    const base = rows.find((r) => r.order === order && r.name === 'plain') as HttpRow;
    for (const r of rows.filter((x) => x.order === order)) {
      // The ratio of each round, then the median of those: the rounds are interleaved.
      const ratio = median(r.rps.map((v, i) => v / base.rps[i]));
      // The same ratio from CPU time: the rate the server could sustain on one core.
      const cpuRatio = median(r.cpuUs.map((v, i) => base.cpuUs[i] / v));
      const target = r === base ? '' : ratio >= 0.9 ? 'PASS (>= 0.9)' : 'MISS (< 0.9)';
      table.push([
        order,
        r.name,
        fmt(median(r.rps)),
        fmt(median(r.p99), 3),
        fmt(median(r.cpuUs), 1),
        fmt(median(r.serverPct)),
        fmt(median(r.loadPct)),
        fmt(median(r.corePct)),
        fmt(median(r.loadCorePct)),
        fmt(ratio, 3),
        fmt(cpuRatio, 3),
        target,
      ]);
      if (r !== base)
        notes.push(`order ${order}, ${r.name}: ${fmt(ratio, 3)}× the plain tag's req/s (target 0.9): ${target}`);
    }
    notes.push(
      `order ${order}, plain: ${limit(median(base.serverPct), median(base.loadPct), median(base.corePct), median(base.loadCorePct))}`,
    );
  }
  console.log(
    `\nGET /v1/id/:tag, ${o.connections} connections, ${o.duration} s x ${o.rounds} rounds after ${o.warmup} s of warm-up each (medians)`,
  );
  console.log(textTable(table));
  for (const p of problems) console.error(`FAIL ${p}`);
  notes.push(...problems.map((p) => `FAIL ${p}`));
  return { ok: problems.length === 0, rows: table, notes };
}

const loadNow = () =>
  loadavg()
    .map((v) => fmt(v, 2))
    .join(' ');

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  const recorder = startRun('permute');
  if (o.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  console.log(
    `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'}), load average before: ${loadNow()}`,
  );
  const pinned = o.pin
    ? 'pinned: idmint on CPU 1, the load generator (this process) and the micro part on CPU 0'
    : 'not pinned';
  let ok = true;
  const written: (() => void)[] = [];
  if (o.parts.includes('micro')) {
    const rows = micro(o);
    written.push(() =>
      recorder.finish({
        bench: 'permute-micro',
        rows,
        ratio: { column: 'single ÷ plain', baseline: PLAIN },
        notes: [`best of 3 passes of 200,000 consecutive counters per figure; ${pinned}`],
      }),
    );
  }
  if (o.parts.includes('http')) {
    const r = await http(o);
    ok = r.ok;
    written.push(() =>
      recorder.finish({
        bench: 'permute-http',
        rows: r.rows,
        labelColumns: 2,
        ratio: { column: 'req/s ÷ plain', baseline: 'plain (of the same order)' },
        notes: [
          ...r.notes,
          `${o.connections} connections, ${o.duration} s x ${o.rounds} interleaved rounds, ${o.warmup} s warm-up before each; ${pinned}`,
        ],
      }),
    );
  }
  // Recorded at the end, so that each run's load average after is the run's.
  for (const w of written) w();
  console.log(`load average after: ${loadNow()}`);
  return ok ? 0 : 1;
}
runMain(main);
