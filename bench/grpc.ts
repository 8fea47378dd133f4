// gRPC benchmark of unary Next, run by `npm run bench:grpc`.
//
// In one run, for a fixed duration per case after an uncounted warm-up, a load process of its
// own (bench/grpc-load.ts: grpc-js, C calls in flight over K HTTP/2 connections) measures:
//   baseline  a bare grpc-js server of the same proto answering a constant ID (bench/grpc-bare-server.ts)
//   node      Next of a segment tag with order "node"   (IDs from process memory)
//   global    Next of a segment tag with order "global" (coalesced Redis takes)
//   snowflake Next of a snowflake tag
// The baseline and idmint each run as a child process of their own; idmint runs against the
// real Redis and MySQL/MariaDB with a database and key prefix of its own, removed at the end.
// Rounds are interleaved, and within a round every idmint case is measured right after a
// baseline measurement of its own (baseline, node, baseline, global, ...), so that the two
// sides of a ratio share the state of the (shared, busy) machine; a case's ratio is the median
// over rounds of these paired ratios.
//
// Besides speed it checks the answers: no call fails, every answer is one ID, IDs of a case
// are distinct, increase on each caller loop, and lie between a batch fetched (over HTTP)
// just before the case and one just after it. A failed check fails the run (exit code 1); a
// missed speed goal is reported as MISS and does not.
//
// Flags: --duration S (default 10)  --warmup S (default 2)  --concurrency N (calls in flight,
//        default 50)  --channels N (connections, default 2)  --rounds N (default 3)
//        --cases baseline,node,global,snowflake  --pin (taskset: the server under test on
//        CPU 1, the load process on CPU 0)  --no-write (do not update bench/results/grpc-latest.md)
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { freePort, startTsx, type Child } from '../tools/child.js';
import { machineBusySeconds, pinProcess, procCpuSeconds } from '../tools/cpu.js';
import { ADMIN_TOKEN, REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { createTag, fetchIds } from '../tools/node.js';
import { fmt, markdownTable } from '../tools/table.js';
import { startRun } from './record.js';
import { pick } from '../tools/args.js';
import { readBenchOptions } from './common-options.js';
import { median } from './stats.js';
import { runMain } from './server.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

type CaseName = 'baseline' | 'node' | 'global' | 'snowflake';
const ALL_CASES: CaseName[] = ['baseline', 'node', 'global', 'snowflake'];
const ID_CASES: Record<Exclude<CaseName, 'baseline'>, { tag: string; create: Record<string, unknown> }> = {
  node: { tag: 'bench.node', create: { mode: 'segment', order: 'node' } },
  global: { tag: 'bench.global', create: { mode: 'segment', order: 'global' } },
  snowflake: { tag: 'bench.sf', create: { mode: 'snowflake' } },
};
/** Goals: req/s of the case ÷ the bare server's, per round, median over rounds. */
const GOALS: Partial<Record<CaseName, number>> = { node: 0.9, snowflake: 0.9 };

const o = {
  duration: 10,
  warmup: 2,
  concurrency: 50,
  channels: 2,
  rounds: 3,
  cases: [...ALL_CASES],
  pin: false,
  write: true,
};
readBenchOptions(
  process.argv.slice(2),
  'npm run bench:grpc -- [--duration S] [--warmup S] [--concurrency N] [--channels N] [--rounds N] [--cases baseline,node,global,snowflake] [--pin] [--no-write]',
  { duration: [1], warmup: [0], concurrency: [1], channels: [1], rounds: [1], pin: true, write: true },
  o,
  (a) => {
    if (a.flag !== '--cases') return false;
    o.cases = pick(a.flag, a.list(), ALL_CASES);
    return true;
  },
);

/** `node --import tsx <args>`, on CPU `cpu` with --pin. */
function spawnNode(name: string, args: string[], env: Record<string, string>, cpu: number): Child {
  return startTsx(args, { name, env: { ...process.env, ...env }, cpu: o.pin ? cpu : undefined });
}

const batch = (url: string, tag: string): Promise<bigint[]> => fetchIds(url, tag, 10);

interface LoadOut {
  ok: number;
  errors: number;
  violations: number;
  examples: string[];
  rps: number;
  wall: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  clientCpu: number;
  distinct: number;
  min?: string;
  maxId?: string;
}
interface Run extends LoadOut {
  name: CaseName;
  round: number;
  serverCpu: number;
  /** What the rest of the machine (Redis, MariaDB, other processes) used meanwhile, % of one core. */
  otherCpu: number;
  /** The baseline measured right before this case, in the same round. */
  pair?: Run;
}

async function main(): Promise<number> {
  const recorder = startRun('grpc');
  if (o.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  const loadBefore = loadavg()[0];
  console.log(
    `idmint gRPC bench: unary Next, ${o.concurrency} calls in flight over ${o.channels} connections, ${o.duration} s per case after ${o.warmup} s warm-up, ` +
      `${o.rounds} rounds; node ${process.version}, ${cpus().length} CPUs${o.pin ? ', pinned' : ''}; load average ${loadBefore.toFixed(2)}`,
  );
  const children: Child[] = [];
  const runs: Run[] = [];
  const problems: string[] = [];
  try {
    const barePort = await freePort();
    const bare = spawnNode('bare gRPC server', ['bench/grpc-bare-server.ts'], { GRPC_PORT: String(barePort) }, 1);
    children.push(bare);
    const httpPort = await freePort();
    const grpcPort = await freePort();
    const idmint = spawnNode(
      'idmint',
      ['src/cli.ts', 'serve'],
      {
        REDIS_URL,
        MYSQL_URL: names.mysqlUrl,
        REDIS_PREFIX: names.prefix,
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(httpPort),
        UDP_PORT: '0',
        GRPC_PORT: String(grpcPort),
        NODE_ID: `bench-grpc-${id}`,
      },
      1,
    );
    children.push(idmint);
    await bare.waitForLine((l) => l.startsWith('listening'), 30_000);
    const url = `http://127.0.0.1:${httpPort}`;
    await idmint.waitUntil(async () => (await fetch(`${url}/healthz`)).ok, 30_000);
    for (const c of Object.values(ID_CASES)) {
      await createTag(url, { tag: c.tag, ...c.create });
      await batch(url, c.tag);
    }

    const measure = async (name: CaseName, round: number): Promise<Run> => {
      const idCase = name === 'baseline' ? undefined : ID_CASES[name];
      const label = `${name} (round ${round})`;
      const before = idCase ? await batch(url, idCase.tag) : [];
      const server = idCase ? idmint : bare;
      const load = spawnNode(
        `${label} load`,
        [
          'bench/grpc-load.ts',
          '--port',
          String(idCase ? grpcPort : barePort),
          '--tag',
          idCase?.tag ?? 'bench',
          '--duration',
          String(o.duration),
          '--warmup',
          String(o.warmup),
          '--concurrency',
          String(o.concurrency),
          '--channels',
          String(o.channels),
          ...(idCase ? [] : ['--constant']),
        ],
        {},
        0,
      );
      const s0 = procCpuSeconds(server.proc.pid!);
      const m0 = machineBusySeconds();
      // CPU over the load's whole life (warm-up included) divided by its wall time.
      const t0 = performance.now();
      const line = await load.waitForLine((l) => l.startsWith('{"ok"'), (o.duration + o.warmup) * 1000 + 60_000);
      const wall = (performance.now() - t0) / 1000;
      const serverCpu = ((procCpuSeconds(server.proc.pid!) - s0) / wall) * 100;
      const busy = ((machineBusySeconds() - m0) / wall) * 100;
      await load.stop(10_000);
      const r = JSON.parse(line) as LoadOut;
      if (r.errors + r.violations > 0)
        problems.push(`${label}: ${r.errors} failed calls, ${r.violations} broken checks: ${r.examples.join(' | ')}`);
      if (idCase) {
        const after = await batch(url, idCase.tag);
        const lo = before[before.length - 1];
        const hi = after[0];
        if (r.distinct !== r.ok) problems.push(`${label}: ${r.ok} answers but ${r.distinct} distinct IDs`);
        if (r.min !== undefined && !(BigInt(r.min) > lo && BigInt(r.maxId!) < hi))
          problems.push(`${label}: IDs ${r.min}..${r.maxId} not within (${lo}, ${hi})`);
      }
      const otherCpu = Math.max(0, busy - serverCpu - r.clientCpu);
      console.log(
        `${label}: ${fmt(r.rps)} calls/s, p50 ${fmt(r.p50, 3)} ms, p99 ${fmt(r.p99, 3)} ms, server CPU ${fmt(serverCpu)}%, load CPU ${fmt(r.clientCpu)}%, rest of the machine ${fmt(otherCpu)}%`,
      );
      return { ...r, name, round, serverCpu, otherCpu };
    };
    const withBase = o.cases.includes('baseline');
    for (let round = 1; round <= o.rounds; round++) {
      for (const name of o.cases) {
        if (name === 'baseline') continue;
        const pair = withBase ? await measure('baseline', round) : undefined;
        if (pair) runs.push(pair);
        runs.push({ ...(await measure(name, round)), pair });
      }
      if (withBase && o.cases.length === 1) runs.push(await measure('baseline', round));
    }
  } finally {
    for (const c of children) await c.stop(10_000).catch(() => undefined);
    await cleanup(names).catch((err: Error) => console.error(`cleanup of ${names.db} failed: ${err.message}`));
  }

  const base = (r: Run) => (r.name === 'baseline' ? r : r.pair);
  const rows = o.cases.map((name) => {
    const rs = runs.filter((r) => r.name === name);
    const ratio = median(
      rs.map((r) => {
        const b = base(r);
        return b ? r.rps / b.rps : undefined;
      }),
    );
    const p99Ratio = median(
      rs.map((r) => {
        const b = base(r);
        return b ? r.p99 / b.p99 : undefined;
      }),
    );
    return {
      name,
      ratio,
      p99Ratio,
      rps: median(rs.map((r) => r.rps)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      serverCpu: median(rs.map((r) => r.serverCpu)),
      usPerCall: median(rs.map((r) => (r.serverCpu * 1e4) / r.rps)),
      clientCpu: median(rs.map((r) => r.clientCpu)),
      calls: rs.reduce((a, r) => a + r.ok, 0),
    };
  });
  // Server CPU per call moves less with the machine's other load than calls/s does.
  const head = [
    'case',
    'calls/s',
    'p50 ms',
    'p99 ms',
    'calls/s ÷ bare',
    'p99 ÷ bare',
    'server CPU %',
    'server µs/call',
    'load CPU %',
    'calls checked',
  ];
  const body = rows.map((r) => [
    r.name,
    fmt(r.rps),
    fmt(r.p50, 3),
    fmt(r.p99, 3),
    fmt(r.ratio, 3),
    fmt(r.p99Ratio, 3),
    fmt(r.serverCpu),
    fmt(r.usPerCall, 1),
    fmt(r.clientCpu),
    fmt(r.calls),
  ]);
  const perRound = runs.map((r) => {
    const b = base(r);
    return [
      r.name,
      String(r.round),
      fmt(r.rps),
      fmt(r.p99, 3),
      b ? fmt(r.rps / b.rps, 3) : '-',
      fmt(r.serverCpu),
      fmt((r.serverCpu * 1e4) / r.rps, 1),
      fmt(r.clientCpu),
      fmt(r.otherCpu),
    ];
  });
  const goals = rows.flatMap((r) =>
    GOALS[r.name] !== undefined && r.ratio !== undefined
      ? [{ name: `${r.name} calls/s ≥ ${GOALS[r.name]} × bare`, value: r.ratio, pass: r.ratio >= GOALS[r.name]! }]
      : [],
  );
  const ok = problems.length === 0;
  const md = (rs: string[][], h: string[]) => markdownTable([h, ...rs]);
  console.log(`\n${md(body, head)}\n`);
  for (const g of goals) console.log(`${g.pass ? 'PASS' : 'MISS'}  ${g.name}: ${fmt(g.value, 3)}`);
  for (const p of problems) console.log(`FAIL: ${p}`);
  console.log(ok ? 'bench OK (answers correct, no errors)' : 'bench FAILED');
  if (o.write && o.cases.length === ALL_CASES.length) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(
      `${RESULTS}grpc-latest.md`,
      [
        '# idmint gRPC benchmark (latest run)',
        '',
        `- date: ${new Date().toISOString()}`,
        `- node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})${o.pin ? '; pinned: servers on CPU 1, load on CPU 0' : ''}`,
        `- command: \`npm run bench:grpc -- ${process.argv.slice(2).join(' ')}\``,
        `- unary Next, ${o.concurrency} calls in flight over ${o.channels} HTTP/2 connections (grpc-js client in a process of its own), ${o.duration} s per case after ${o.warmup} s warm-up, ${o.rounds} interleaved rounds, each case right after a baseline measurement of its own (medians; a ratio is the median over rounds of these paired ratios)`,
        `- servers: \`idmint serve\` (real Redis and MariaDB) and a bare grpc-js server of the same proto answering a constant ID, each a process of its own`,
        `- 1-minute load average before the run: ${loadBefore.toFixed(2)} (the machine is shared)`,
        `- result: ${ok ? 'OK (answers correct, no errors)' : 'FAILED'}`,
        '',
        md(body, head),
        '',
        '| goal | value | verdict |',
        '| --- | ---: | --- |',
        ...goals.map((g) => `| ${g.name} | ${fmt(g.value, 3)} | ${g.pass ? 'PASS' : 'MISS'} |`),
        '',
        'Every round (CPU in % of one core over the case, warm-up included; "rest" is what the rest of the',
        'machine used meanwhile: Redis, MariaDB and other processes; well above 0 disturbs the figures):',
        '',
        md(perRound, [
          'case',
          'round',
          'calls/s',
          'p99 ms',
          'calls/s ÷ bare',
          'server CPU %',
          'server µs/call',
          'load CPU %',
          'rest CPU %',
        ]),
        '',
        ...problems.map((p) => `- FAIL: ${p}`),
        '',
      ].join('\n'),
    );
    console.log('written: bench/results/grpc-latest.md');
    recorder.finish({
      rows: [head, ...body],
      ratio: { column: 'calls/s ÷ bare', baseline: 'baseline' },
      notes: goals.map((g) => `${g.name}: ${fmt(g.value, 3)} ${g.pass ? 'PASS' : 'MISS'}`),
    });
  }
  return ok ? 0 : 1;
}

runMain(main);
