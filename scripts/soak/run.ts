// `npm run soak -- --minutes N`: idmint under a steady mixed load for N minutes, to show that its
// memory and latency stay flat. One idmint child process (its own database and Redis prefix),
// every transport on every mode (drivers/), admin changes every few seconds (admin-churn.ts), a
// sample every few seconds (sampler.ts); then every ID checked for duplicates, the order of
// global tags checked, the verdict (verdict.ts) printed with a Markdown summary, the samples
// written as JSON and the chart as SVG. Exit code 0 when the verdict passes, 1 when it fails, 3
// when the run was too short to judge the memory (verdict.ts, SOAK_EXIT). Targets only
// 127.0.0.1; stops by itself; removes its database and keys.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { machineBusySeconds } from '../../tools/cpu.js';
import { AdminChurn } from './admin-churn.js';
import { httpBatchLoop, httpSingleLoop } from './drivers/http.js';
import { grpcNextLoop, grpcTakeLoop } from './drivers/grpc.js';
import { udpLoop } from './drivers/udp.js';
import { wsLoop } from './drivers/ws.js';
import { LoadContext } from './load-context.js';
import { soakOptions } from './options.js';
import { progressLine, summary, verdictLine } from './report.js';
import { KINDS, Sampler, type Sample } from './sampler.js';
import { startServer, stopServer } from './server.js';
import { chartSvg } from './svg.js';
import { TAGS } from './tags.js';
import { judgeSeries, SOAK_EXIT, verdict, warmupEnd, warmupSeconds } from './verdict.js';

const o = soakOptions(process.argv.slice(2));
const runS = o.minutes * 60;
const minWarmupS = warmupSeconds(runS);
console.log(
  `soak: ${o.minutes} min, a sample every ${o.every} s, an admin cycle every ${o.adminEvery} s, rate x${o.rate}; warm-up at least ${minWarmupS} s; ` +
    `samples to ${o.out}`,
);

const server = await startServer();
console.log(
  `soak: idmint pid ${server.node.pid} at ${server.at.url}, UDP ${server.at.udpPort}, gRPC ${server.at.grpcPort}, database ${server.names.db}, Redis prefix ${server.names.prefix}`,
);
const ctx = new LoadContext(server.at, o.rate);
let interrupted = false;
process.once('SIGINT', () => {
  interrupted = true;
  ctx.stop();
});

// Requests per second of each loop (times --rate).
const churn = new AdminChurn(ctx);
const loops = [
  httpSingleLoop(ctx, 'http-1', 250),
  httpSingleLoop(ctx, 'http-2', 250),
  httpBatchLoop(ctx, 'http-batch', 40, 100),
  udpLoop(ctx, 'udp-1', 250),
  udpLoop(ctx, 'udp-2', 250),
  grpcNextLoop(ctx, 'grpc-1', 250),
  grpcNextLoop(ctx, 'grpc-2', 250),
  grpcTakeLoop(ctx, 'grpc-take', 4),
  wsLoop(ctx, 'ws', 4),
  churn.run(o.adminEvery),
];

const sampler = new Sampler(server.node.pid, ctx);
const samples: Sample[] = [];
const started = performance.now();
const machine = { cpus: availableParallelism(), loadStart: loadavg()[0], busyStart: machineBusySeconds() };
let answers = 0;
let code: number;
try {
  for (let k = 1; !interrupted && server.node.proc.exitCode === null; k++) {
    const due = started + Math.min(k * o.every, runS) * 1000;
    // A reading of /metrics a second between samples.
    for (let next = performance.now() + 1000; !interrupted && next < due; next += 1000) {
      await sleep(Math.max(0, next - performance.now()));
      if (!interrupted) await sampler.read();
    }
    if (!interrupted) await sleep(Math.max(0, due - performance.now()));
    if (interrupted) break;
    const s = await sampler.sample();
    samples.push(s);
    answers += KINDS.reduce((n, kind) => n + s.latency[kind].n, 0);
    for (const w of ctx.orders) w.flush();
    console.log(progressLine(s));
    if (performance.now() - started >= runS * 1000) break;
  }
  ctx.stop();
  // Each loop ends after its request in flight (every request has a timeout).
  await Promise.race([
    Promise.all(loops),
    sleep(30000).then(() => console.error('soak: a load loop did not stop within 30 s')),
  ]);
  for (const w of ctx.orders) w.flush();
  if (server.node.proc.exitCode !== null)
    console.error(
      `soak: idmint exited with ${server.node.proc.exitCode}:\n${server.node.output.slice(-20).join('\n')}`,
    );

  const warmupS = warmupEnd(samples, runS);
  const t0 = performance.now();
  const checks = ctx.ids.check();
  console.log(
    `soak: duplicates checked over ${checks.reduce((n, c) => n + c.runs, 0)} runs in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  const judge = (v: (s: Sample) => number) =>
    judgeSeries(
      samples.map((s) => ({ t: s.t, v: v(s) })),
      warmupS,
      o.band,
      o.maxSlope,
    );
  const whole = judge((s) => s.wholeMb);
  const heap = judge((s) => s.heapMb);
  const rss = judge((s) => s.rssMb);
  const served = new Set(checks.filter((c) => c.ids > 0n).map((c) => c.tag));
  const v = verdict(
    { whole, heap, rss },
    {
      ids: checks.reduce((n, c) => n + c.ids, 0n),
      duplicates: checks.reduce((n, c) => n + c.duplicates, 0n),
      orderChecked: ctx.orders.reduce((n, w) => n + w.checked, 0),
      orderViolations: ctx.orders.reduce((n, w) => n + w.violations, 0),
      failed: ctx.failed(),
      silentTags: TAGS.map((t) => t.tag).filter((t) => !served.has(t)),
    },
    o.band,
    o.maxSlope,
  );
  const reasons = interrupted ? [...v.reasons, 'interrupted'] : v.reasons;
  const broken = interrupted || server.node.proc.exitCode !== null;
  const final = { ...v, ok: v.ok && !broken, outcome: broken ? ('fail' as const) : v.outcome, reasons };
  for (const e of [...ctx.failureExamples, ...ctx.orders.flatMap((w) => w.examples)]) console.log(`soak: ${e}`);
  const wallS = (performance.now() - started) / 1000;
  const facts = {
    minutes: o.minutes,
    every: o.every,
    samples: samples.length,
    answers,
    adminCycles: churn.cycles,
    cpus: machine.cpus,
    loadStart: machine.loadStart,
    loadEnd: loadavg()[0],
    machineBusy: ((machineBusySeconds() - machine.busyStart) / wallS / machine.cpus) * 100,
    serverCpu:
      samples.reduce((n, s) => n + s.cpu * s.windowS, 0) /
      Math.max(
        1e-9,
        samples.reduce((n, s) => n + s.windowS, 0),
      ),
  };
  const md = summary(facts, samples, warmupS, checks, final);
  const line = verdictLine(final, o.band, o.maxSlope);

  mkdirSync(dirname(o.out), { recursive: true });
  const svgPath = o.out.replace(/\.json$/, '') + '.svg';
  const json = {
    started: new Date(Date.now() - (performance.now() - started)).toISOString(),
    options: o,
    warmupSeconds: warmupS,
    facts,
    verdict: {
      ...final,
      checks: { ...final.checks, ids: String(final.checks.ids), duplicates: String(final.checks.duplicates) },
    },
    failures: Object.fromEntries(ctx.failures),
    tags: checks.map((c) => ({ ...c, ids: String(c.ids), duplicates: String(c.duplicates) })),
    samples,
  };
  // One line a sample.
  const head = JSON.stringify({ ...json, samples: [] }, null, 1);
  writeFileSync(
    o.out,
    `${head.replace('"samples": []', `"samples": [\n${samples.map((s) => JSON.stringify(s)).join(',\n')}\n ]`)}\n`,
  );
  writeFileSync(
    svgPath,
    chartSvg(
      `idmint soak, ${o.minutes} min: RSS, RSS with V8's pages whole, heap committed and heap used`,
      [
        {
          name: "RSS, V8's pages whole",
          color: '#2ca02c',
          points: samples.map((s) => ({ t: s.t, v: s.wholeMb })),
          plateau: whole.plateau,
        },
        { name: 'RSS', color: '#1f77b4', points: samples.map((s) => ({ t: s.t, v: s.rssMb })), plateau: rss.plateau },
        {
          name: 'heap committed by V8',
          color: '#9edae5',
          points: samples.map((s) => ({ t: s.t, v: s.heapCommittedMb })),
          plateau: NaN,
        },
        {
          name: 'heap after GC (old gen.)',
          color: '#d62728',
          points: samples.map((s) => ({ t: s.t, v: s.heapMb })),
          plateau: heap.plateau,
        },
        {
          name: 'heap used, peak per sample',
          color: '#f4a6a6',
          points: samples.map((s) => ({ t: s.t, v: s.heapPeakMb })),
          plateau: NaN,
        },
      ],
      warmupS,
    ),
  );
  console.log(`\n${md}\n`);
  console.log(`soak: samples in ${o.out}, chart in ${svgPath}`);
  console.log(line);
  code = SOAK_EXIT[final.outcome];
} finally {
  ctx.stop();
  await stopServer(server).catch((err: Error) =>
    console.error(`soak: cleanup of ${server.names.db} failed: ${err.message}`),
  );
}
process.exit(code);
