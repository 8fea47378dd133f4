// UDP benchmark, run by `npm run bench:udp`: the setup id_server published, 4 client processes
// each sending N sequential `get` requests and waiting for each reply. In one run it measures:
//   echo    a bare Node dgram server that parses the JSON and echoes it (the baseline)
//   node    idmint's UDP `get` for a rule tag with order "node"
//   global  idmint's UDP `get` for a rule tag with order "global"
// idmint runs as a child process against the real Redis and MySQL with a database and key
// prefix of its own, removed at the end. Every reply is checked (code 0 and a 9-digit ID for
// idmint); all IDs of a case must be distinct.
//
// Flags: --requests N (per client, default 200000)  --clients N (default 4)  --no-write
// Results: bench/results/udp-latest.md
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ADMIN_TOKEN, cleanup, testEnv, testNames } from '../test/helpers/env.js';
import { freePort } from '../test/helpers/redis-server.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const args = process.argv.slice(2);
const flag = (name: string, def: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : def);
const REQUESTS = flag('--requests', 200_000);
const CLIENTS = flag('--clients', 4);

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
  const kids = Array.from({ length: CLIENTS }, () => startChild('client', [String(port), rule, String(REQUESTS), collect ? '1' : '0']));
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

async function main(): Promise<void> {
  console.log(`UDP benchmark: ${CLIENTS} clients x ${REQUESTS} sequential requests per case`);
  const rows: { name: string; tps: number; avgMs: number; fail: number }[] = [];

  const echo = startChild('echo');
  const { port: echoPort } = await echo.ready;
  console.log('echo (baseline)');
  const base = await runClients(echoPort, 'o2o', false);
  rows.push({ name: 'echo (baseline)', ...base });
  echo.proc.kill();

  const names = testNames();
  const [udpPort, httpPort] = [await freePort(), await freePort()];
  const idmint = await startIdmint(names, udpPort, httpPort);
  let ok = true;
  try {
    for (const order of ['node', 'global'] as const) {
      const tag = `o2o_${order}`;
      const res = await fetch(`http://127.0.0.1:${httpPort}/v1/admin/tags`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        // Six counter digits: the id_server template, wide enough for the 800k IDs of a run.
        body: JSON.stringify({ tag, mode: 'rule', order, template: '{year%10}{MM}{dd}{counter:6}', min_counter: 0, max_counter: 999_999, reset_seconds: 86400, step: 10000, min_step: 1000, node_block: 1000 }),
      });
      if (res.status !== 201) throw new Error(`creating ${tag}: ${res.status} ${await res.text()}`);
      console.log(`idmint ${order}`);
      const r = await runClients(udpPort, tag, true);
      const distinct = new Set(r.ids).size;
      if (distinct !== r.ids.length || r.fail > 0) {
        ok = false;
        console.log(`  FAILED: ${r.ids.length - distinct} duplicate IDs, ${r.fail} failed requests`);
      }
      rows.push({ name: `idmint get, order ${order}`, tps: r.tps, avgMs: r.avgMs, fail: r.fail });
    }
  } finally {
    idmint.kill('SIGTERM');
    await new Promise((r) => idmint.once('exit', r));
    await cleanup(names);
  }

  const b = rows[0];
  const lines = [
    '| case | TPS | avg latency (ms) | TPS ÷ echo | latency ÷ echo | failed |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.name} | ${Math.round(r.tps).toLocaleString('en-US')} | ${r.avgMs.toFixed(3)} | ${(r.tps / b.tps).toFixed(2)} | ${(r.avgMs / b.avgMs).toFixed(2)} | ${r.fail} |`),
  ];
  const goals = [
    ['order node TPS ≥ 0.9 × echo', rows[1].tps / b.tps >= 0.9],
    ['order global TPS ≥ 0.6 × echo', rows[2].tps / b.tps >= 0.6],
    ['avg latency ≤ 1.2 × echo (node)', rows[1].avgMs / b.avgMs <= 1.2],
  ] as const;
  const verdicts = goals.map(([g, pass]) => `- ${g}: ${pass ? 'PASS' : 'MISS'}`);
  const md = [
    '# idmint UDP benchmark (latest run)',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${cpus().length} CPUs`,
    `- ${CLIENTS} client processes x ${REQUESTS} sequential requests (send, wait for the reply) per case`,
    `- command: npm run bench:udp${args.length ? ` -- ${args.join(' ')}` : ''}`,
    '',
    ...lines,
    '',
    ...verdicts,
    '',
  ].join('\n');
  console.log(`\n${lines.join('\n')}\n\n${verdicts.join('\n')}`);
  if (!args.includes('--no-write')) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}udp-latest.md`, md);
  }
  if (!ok) process.exitCode = 1;
}

const role = process.argv[2];
if (role === 'echo') void echoServer();
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
