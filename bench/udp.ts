// UDP benchmark, run by `npm run bench:udp`: the setup id_server published, 4 client processes
// each sending N sequential `get` requests and waiting for each reply. In one run it measures:
//   echo    a bare Node dgram server that parses the JSON and echoes it (the baseline)
//   node    idmint's UDP `get` for a rule tag with order "node"
//   global  idmint's UDP `get` for a rule tag with order "global"
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (code 0 and a 9-digit ID for
// idmint); all IDs of a case must be distinct.
//
// Flags: --requests N (per client, default 200000)  --clients N (default 4)  --rounds N
//        (repeat the cases N times, interleaved; medians)  --no-write
// Results: bench/results/udp-latest.md
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ADMIN_TOKEN, REDIS_URL, cleanup, testEnv, testNames } from '../test/helpers/env.js';
import { freePort } from '../test/helpers/redis-server.js';
import { readOptions } from './args.js';
import { medianOrNaN as median } from './stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);
/** Set from the command line by main (child processes get what they need as arguments). */
const opts = { requests: 200_000, clients: 4, rounds: 1, write: true };

function parseArgs(argv: readonly string[]): void {
  readOptions(argv, 'npm run bench:udp -- [--requests N] [--clients N] [--rounds N] [--no-write]', (a) => {
    switch (a.flag) {
      case '--requests': opts.requests = a.whole(1); break;
      case '--clients': opts.clients = a.whole(1, 64); break;
      case '--rounds': opts.rounds = a.whole(1); break;
      case '--no-write': opts.write = false; break;
      default: return false;
    }
    return true;
  });
}

interface ClientResult { readonly total: number; readonly fail: number; readonly min: number; readonly max: number; readonly avg: number; readonly ids: string[]; readonly seconds: number }

// ---- child roles -------------------------------------------------------------------------

async function echoServer(): Promise<void> {
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let reply: Buffer;
    try {
      const req = JSON.parse(msg.toString()) as Record<string, unknown>;
      reply = Buffer.from(JSON.stringify({ ...req, code: 0, message: 'success', data: '1' }));
    } catch {
      reply = Buffer.from('{"code":-2}');
    }
    sock.send(reply, r.port, r.address);
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

/**
 * The Redis baseline: the echo server, plus one raw Redis INCR per request (no script, no
 * coalescing) whose value is the reply's data. It shows what a Redis round trip per request
 * costs on this machine, the floor under every `order: global` request.
 */
async function redisEchoServer(key: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  const sock = createSocket('udp4');
  sock.on('message', (msg, r) => {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(msg.toString()) as Record<string, unknown>;
    } catch {
      sock.send('{"code":-2}', r.port, r.address);
      return;
    }
    redis.incr(key).then(
      (n) => sock.send(JSON.stringify({ ...req, code: 0, message: 'success', data: String(n) }), r.port, r.address),
      () => sock.send(JSON.stringify({ ...req, code: -5, message: 'redis' }), r.port, r.address),
    );
  });
  sock.bind(0, '127.0.0.1', () => process.send!({ port: sock.address().port }));
}

async function client(port: number, rule: string, n: number, collect: boolean): Promise<ClientResult> {
  const sock = createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  const ids: string[] = [];
  let fail = 0;
  let min = Infinity;
  let max = 0;
  let sum = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const msg = Buffer.from(JSON.stringify({ action: 'get', rule_name: rule, app_name: 'bench', seq: String(i) }));
    const t0 = process.hrtime.bigint();
    const reply = await new Promise<Buffer | undefined>((resolve) => {
      const timer = setTimeout(() => {
        sock.off('message', on);
        resolve(undefined);
      }, 2000);
      const on = (m: Buffer) => {
        clearTimeout(timer);
        sock.off('message', on);
        resolve(m);
      };
      sock.on('message', on);
      sock.send(msg, port, '127.0.0.1');
    });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (s < min) min = s;
    if (s > max) max = s;
    sum += s;
    if (!reply) {
      fail++;
      continue;
    }
    const r = JSON.parse(reply.toString()) as { code: number; data?: string; seq?: string };
    if (r.code !== 0 || r.seq !== String(i)) fail++;
    else if (collect) ids.push(String(r.data));
  }
  sock.close();
  return { total: n, fail, min, max, avg: sum / n, ids, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

// ---- orchestration -----------------------------------------------------------------------

function startChild(role: string, extra: string[] = []): { proc: ChildProcess; ready: Promise<{ port: number }> } {
  const proc = fork(fileURLToPath(import.meta.url), [role, ...extra], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return { proc, ready: new Promise((resolve) => proc.once('message', (m) => resolve(m as { port: number }))) };
}

async function runClients(port: number, rule: string, collect: boolean): Promise<{ tps: number; avgMs: number; fail: number; ids: string[] }> {
  const kids = Array.from({ length: opts.clients }, () => startChild('client', [String(port), rule, String(opts.requests), collect ? '1' : '0']));
  const results = await Promise.all(kids.map((k) => k.ready as unknown as Promise<ClientResult>));
  const seconds = Math.max(...results.map((r) => r.seconds));
  const total = results.reduce((s, r) => s + r.total, 0);
  for (const r of results) console.log(`  total:${r.total} fail:${r.fail} min:${r.min.toFixed(6)} max:${r.max.toFixed(6)} avg:${r.avg.toFixed(6)}`);
  return {
    tps: total / seconds,
    avgMs: (results.reduce((s, r) => s + r.avg, 0) / results.length) * 1000,
    fail: results.reduce((s, r) => s + r.fail, 0),
    ids: results.flatMap((r) => r.ids),
  };
}

async function startIdmint(names: ReturnType<typeof testNames>, udpPort: number, httpPort: number): Promise<ChildProcess> {
  const env = { ...process.env, ...testEnv(names, { PORT: String(httpPort), UDP_PORT: String(udpPort), LOG_LEVEL: 'warn' }) };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], { cwd: ROOT, env, stdio: 'inherit' });
  const until = Date.now() + 30000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${httpPort}/healthz`)).ok) return proc;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error('idmint did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Row { readonly name: string; readonly tps: number; readonly avgMs: number; readonly fail: number; readonly ratioTps: number; readonly ratioLatency: number }

async function main(): Promise<void> {
  parseArgs(args);
  console.log(`UDP benchmark: ${opts.clients} clients x ${opts.requests} sequential requests per case, ${opts.rounds} round(s)`);
  const echo = startChild('echo');
  const redisKey = `idmint:bench:udp:${process.pid}`;
  const redisEcho = startChild('redis-echo', [redisKey]);
  const [{ port: echoPort }, { port: redisPort }] = await Promise.all([echo.ready, redisEcho.ready]);

  const names = testNames();
  const [udpPort, httpPort] = [await freePort(), await freePort()];
  const idmint = await startIdmint(names, udpPort, httpPort);
  let ok = true;
  // Per case, one measurement per round; each round runs every case once, in the same order,
  // so a slow spell of the machine hits a round rather than one case.
  const measured = new Map<string, { tps: number; avgMs: number; fail: number }[]>();
  try {
    for (const order of ['node', 'global'] as const) {
      const tag = `o2o_${order}`;
      const res = await fetch(`http://127.0.0.1:${httpPort}/v1/admin/tags`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        // Six counter digits: the id_server template, wide enough for the IDs of a run.
        body: JSON.stringify({ tag, mode: 'rule', order, template: '{year%10}{MM}{dd}{counter:6}', min_counter: 0, max_counter: 999_999, reset_seconds: 86400, step: 10000, min_step: 1000, node_block: 1000 }),
      });
      if (res.status !== 201) throw new Error(`creating ${tag}: ${res.status} ${await res.text()}`);
    }
    const cases: { name: string; port: number; rule: string; idmint: boolean }[] = [
      { name: 'echo (baseline)', port: echoPort, rule: 'o2o', idmint: false },
      { name: 'echo + one Redis INCR', port: redisPort, rule: 'o2o', idmint: false },
      { name: 'idmint get, order node', port: udpPort, rule: 'o2o_node', idmint: true },
      { name: 'idmint get, order global', port: udpPort, rule: 'o2o_global', idmint: true },
    ];
    const seen = new Map<string, Set<string>>();
    for (let round = 1; round <= opts.rounds; round++) {
      for (const c of cases) {
        console.log(`${c.name}${opts.rounds > 1 ? ` (round ${round})` : ''}`);
        const r = await runClients(c.port, c.rule, c.idmint);
        if (c.idmint) {
          // Every ID of a case, over all rounds, must be distinct (the counter never restarts).
          const all = seen.get(c.name) ?? new Set<string>();
          const before = all.size;
          for (const id of r.ids) all.add(id);
          seen.set(c.name, all);
          if (all.size - before !== r.ids.length || r.fail > 0) {
            ok = false;
            console.log(`  FAILED: ${r.ids.length - (all.size - before)} duplicate IDs, ${r.fail} failed requests`);
          }
        }
        const list = measured.get(c.name) ?? [];
        list.push({ tps: r.tps, avgMs: r.avgMs, fail: r.fail });
        measured.set(c.name, list);
      }
    }
  } finally {
    idmint.kill('SIGTERM');
    echo.proc.kill();
    redisEcho.proc.kill();
    await new Promise((r) => idmint.once('exit', r));
    await cleanup(names);
  }

  // Medians over rounds; each ratio is the median of the per-round ratios to that round's echo.
  const base = measured.get('echo (baseline)')!;
  const rows: Row[] = [...measured].map(([name, ms]) => ({
    name,
    tps: median(ms.map((m) => m.tps)),
    avgMs: median(ms.map((m) => m.avgMs)),
    fail: ms.reduce((s, m) => s + m.fail, 0),
    ratioTps: median(ms.map((m, i) => m.tps / base[i].tps)),
    ratioLatency: median(ms.map((m, i) => m.avgMs / base[i].avgMs)),
  }));
  const row = (name: string) => rows.find((r) => r.name === name)!;
  const lines = [
    '| case | TPS | avg latency (ms) | TPS ÷ echo | latency ÷ echo | failed |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.name} | ${Math.round(r.tps).toLocaleString('en-US')} | ${r.avgMs.toFixed(3)} | ${r.ratioTps.toFixed(2)} | ${r.ratioLatency.toFixed(2)} | ${r.fail} |`),
  ];
  const node = row('idmint get, order node');
  const glob = row('idmint get, order global');
  const goals = [
    ['order node TPS ≥ 0.9 × echo', node.ratioTps >= 0.9],
    ['order global TPS ≥ 0.6 × echo', glob.ratioTps >= 0.6],
    ['avg latency ≤ 1.2 × echo (node)', node.ratioLatency <= 1.2],
  ] as const;
  const verdicts = goals.map(([g, pass]) => `- ${g}: ${pass ? 'PASS' : 'MISS'}`);
  const md = [
    '# idmint UDP benchmark (latest run)',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${cpus().length} CPUs`,
    `- ${opts.clients} client processes x ${opts.requests} sequential requests (send, wait for the reply) per case${opts.rounds > 1 ? `, ${opts.rounds} interleaved rounds (medians; ratios are medians of the per-round ratios)` : ''}`,
    `- command: npm run bench:udp${args.length ? ` -- ${args.join(' ')}` : ''}`,
    '',
    ...lines,
    '',
    ...verdicts,
    '',
  ].join('\n');
  console.log(`\n${lines.join('\n')}\n\n${verdicts.join('\n')}`);
  if (opts.write) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}udp-latest.md`, md);
  }
  if (!ok) process.exitCode = 1;
}

const role = process.argv[2];
if (role === 'echo') void echoServer();
else if (role === 'redis-echo') void redisEchoServer(process.argv[3]);
else if (role === 'client') {
  const [, , , port, rule, n, collect] = process.argv;
  void client(Number(port), rule, Number(n), collect === '1').then((r) => {
    // Disconnect only once the (large) message is written, or it may never arrive.
    process.send!(r, undefined, {}, () => process.disconnect());
  });
} else {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
