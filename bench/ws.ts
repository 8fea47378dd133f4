// Websocket stream benchmark, run by `npm run bench:ws`.
//
// In one run, over loopback, one take per case and round, timed from sending the take to its
// "done" (IDs per second):
//   raw      a bare `ws` server (bench/ws/raw-server.ts, a process of its own) answering
//            the same take message with binary frames of consecutive u64 counters, with the
//            same per-socket buffer bound: the baseline
//   binary   idmint's GET /v1/stream, format "binary", segment tag (plain layout)
//   ranges   the same, format "ranges"
//   json     the same, format "json", each block decoded into bigints by the shipped client's
//            decoder (idmint/client, decodeIdsBlock)
//   json-parse  the same take read with plain JSON.parse (informational: V8 interns every
//            string of up to ten characters, which caps it near 2-3M IDs/s for short IDs)
// idmint runs as a child process against the real Redis and MySQL/MariaDB, with a database and
// key prefix of its own, removed at the end. The client (this process) reads every ID of
// binary frames and every message of the others, and checks the answers: counts exact, IDs
// ascending within a take. A failed check fails the run (exit code 1); a missed goal is
// reported as MISS and does not.
//
// Goals: binary >= 0.7 x raw, ranges >= 100M IDs/s, json >= 2M IDs/s.
// Flags: --rounds N (default 5; the table shows medians)  --binary N  --json N  --ranges N
//        (IDs per take; defaults 50M, 10M, 2G)  --block N (IDs per binary/json block, default
//        50000)  --no-write (do not update bench/results/ws-latest.md)
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { decodeIdsBlock } from '../src/client/frames.js';
import { startTsx, type Child } from '../tools/child.js';
import { procCpuSeconds, selfCpuSeconds } from '../tools/cpu.js';
import { cleanup, testNames } from '../tools/env.js';
import { createTag, spawnNode, type ChildNode } from '../tools/node.js';
import { fmt, markdownTable } from '../tools/table.js';
import { readBenchOptions } from './common-options.js';
import { startRun } from './record.js';
import { medianOrNaN as median } from './stats.js';

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
import { BUFFER_BYTES } from './ws/raw-server.js';
const RANGES_BLOCK = 100_000;

async function spawnRaw(): Promise<Child & { url: string }> {
  const raw = startTsx(['bench/ws/raw-server.ts'], { name: 'raw server' });
  const m = /\{"port":(\d+)\}/.exec(await raw.waitForLine((l) => /\{"port":(\d+)\}/.test(l), 30_000))!;
  return Object.assign(raw, { url: `ws://127.0.0.1:${m[1]}` });
}

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  rounds: number;
  binary: number;
  json: number;
  ranges: number;
  block: number;
  write: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    rounds: 5,
    binary: 50_000_000,
    json: 10_000_000,
    ranges: 2_000_000_000,
    block: 50_000,
    write: true,
  };
  const usage = 'npm run bench:ws -- [--rounds N] [--binary N] [--json N] [--ranges N] [--block N] [--no-write]';
  readBenchOptions(argv, usage, { rounds: [1], write: true }, o, (a) => {
    switch (a.flag) {
      case '--binary':
        o.binary = a.whole(1);
        break;
      case '--json':
        o.json = a.whole(1);
        break;
      case '--ranges':
        o.ranges = a.whole(1);
        break;
      case '--block':
        o.block = a.whole(1);
        break;
      default:
        return false;
    }
    return true;
  });
  return o;
}

// ---------------------------------------------------------------------------------------------
// The client side of one take

type CaseName = 'raw' | 'binary' | 'ranges' | 'json' | 'json-parse';
interface Measured {
  readonly ids: number;
  readonly seconds: number;
  readonly bytes: number;
  readonly frames: number;
  /** CPU seconds of the server process during the take. */
  readonly serverCpu: number;
  /** CPU seconds of this (client) process during the take. */
  readonly clientCpu: number;
}

function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Runs one take on a socket and checks it: count exact, IDs ascending. */
function runTake(
  ws: WebSocket,
  pid: number,
  msg: { req: number; tag: string; count: number; block: number; format: string },
  plainParse = false,
): Promise<Measured> {
  return new Promise((resolve, reject) => {
    let ids = 0;
    let bytes = 0;
    let frames = 0;
    let last = 0n;
    let touch = 0;
    const fail = (why: string) => {
      ws.removeAllListeners('message');
      reject(new Error(`${msg.format} take: ${why}`));
    };
    const ascending = (first: bigint, lastOfBlock: bigint): boolean => {
      if (first <= last || lastOfBlock < first) return false;
      last = lastOfBlock;
      return true;
    };
    const cpu0 = procCpuSeconds(pid);
    const own0 = selfCpuSeconds();
    const t0 = process.hrtime.bigint();
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      frames++;
      bytes += data.length;
      if (isBinary) {
        const n = data.readUInt32LE(4);
        if (data.readUInt32LE(0) !== msg.req || data.length !== 8 + 8 * n) return fail('malformed binary frame');
        // Read every ID (the low words), as a consumer would.
        const u32 =
          (data.byteOffset & 3) === 0
            ? new Uint32Array(data.buffer, data.byteOffset + 8, 2 * n)
            : new Uint32Array(Uint8Array.from(data.subarray(8)).buffer);
        for (let i = 0; i < u32.length; i += 2) touch = (touch + u32[i]) | 0;
        if (!ascending(data.readBigUInt64LE(8), data.readBigUInt64LE(data.length - 8)))
          return fail('IDs not ascending');
        ids += n;
        return;
      }
      if (msg.format === 'json' && !plainParse) {
        const b = decodeIdsBlock(data);
        if (b) {
          if (b.req !== msg.req || !ascending(b.ids[0], b.ids[b.ids.length - 1])) return fail('IDs not ascending');
          ids += b.ids.length;
          return;
        }
      }
      const m = JSON.parse(data.toString()) as {
        op: string;
        req: number;
        ids?: string[];
        ranges?: [string, string][];
        message?: string;
      };
      if (m.op === 'done') {
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        ws.removeAllListeners('message');
        if (ids !== msg.count) return reject(new Error(`${msg.format} take: ${ids} IDs of ${msg.count}`));
        if (touch === 0.5) console.log(touch); // keeps the read loop from being optimised away
        return resolve({
          ids,
          seconds,
          bytes,
          frames,
          serverCpu: procCpuSeconds(pid) - cpu0,
          clientCpu: selfCpuSeconds() - own0,
        });
      }
      if (m.op !== 'block') return fail(`${m.op}: ${m.message ?? ''}`);
      if (m.ids) {
        if (!ascending(BigInt(m.ids[0]), BigInt(m.ids[m.ids.length - 1]))) return fail('IDs not ascending');
        ids += m.ids.length;
      } else if (m.ranges) {
        for (const [a, b] of m.ranges) {
          const first = BigInt(a);
          const end = BigInt(b);
          if (!ascending(first, end)) return fail('ranges not ascending');
          ids += Number(end - first) + 1;
        }
      }
    });
    ws.send(JSON.stringify({ op: 'take', ...msg }));
  });
}

// ---------------------------------------------------------------------------------------------
// Main

const mIds = (v: number) => `${fmt(v / 1e6, 1)}M`;

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const recorder = startRun('ws');
  const loadBefore = loadavg()[0];
  const names = testNames();
  let node: ChildNode | undefined;
  let raw: Awaited<ReturnType<typeof spawnRaw>> | undefined;
  let failed = false;
  const results: Record<CaseName, Measured[]> = { raw: [], binary: [], ranges: [], json: [], 'json-parse': [] };
  try {
    raw = await spawnRaw();
    node = await spawnNode(names, {
      STREAM_MAX_COUNT: String(Math.max(o.binary, o.json, o.ranges)),
      STREAM_MAX_BUFFER_BYTES: String(BUFFER_BYTES),
    });
    // Large segments: a refill is a MySQL transaction, and the fastest format eats 100M IDs in well under a second.
    for (const tag of ['bin', 'rng', 'jsn'])
      await createTag(node.url, {
        tag,
        step: 50_000_000,
        min_step: 1_000_000,
        max_step: 100_000_000,
        target_seconds: 60,
      });
    const wsIdmint = await open(`${node.url.replace(/^http/, 'ws')}/v1/stream`);
    const wsRaw = await open(raw.url);
    let req = 1;
    const plan: [CaseName, () => Promise<Measured>][] = [
      [
        'raw',
        () =>
          runTake(wsRaw, raw!.proc.pid!, { req: req++, tag: 'raw', count: o.binary, block: o.block, format: 'binary' }),
      ],
      [
        'binary',
        () =>
          runTake(wsIdmint, node!.pid, { req: req++, tag: 'bin', count: o.binary, block: o.block, format: 'binary' }),
      ],
      [
        'ranges',
        () =>
          runTake(wsIdmint, node!.pid, {
            req: req++,
            tag: 'rng',
            count: o.ranges,
            block: RANGES_BLOCK,
            format: 'ranges',
          }),
      ],
      [
        'json',
        () => runTake(wsIdmint, node!.pid, { req: req++, tag: 'jsn', count: o.json, block: o.block, format: 'json' }),
      ],
      [
        'json-parse',
        () =>
          runTake(wsIdmint, node!.pid, { req: req++, tag: 'jsn', count: o.json, block: o.block, format: 'json' }, true),
      ],
    ];
    // Warm-up: code paths, the first segments, the raw server's JIT.
    await runTake(wsRaw, raw.proc.pid!, { req: req++, tag: 'raw', count: 1_000_000, block: o.block, format: 'binary' });
    for (const [tag, format] of [
      ['bin', 'binary'],
      ['rng', 'ranges'],
      ['jsn', 'json'],
    ]) {
      await runTake(wsIdmint, node.pid, {
        req: req++,
        tag,
        count: 1_000_000,
        block: Math.min(o.block, RANGES_BLOCK),
        format,
      });
    }
    for (let round = 1; round <= o.rounds; round++) {
      for (const [name, fn] of plan) {
        const m = await fn();
        results[name].push(m);
        console.log(
          `round ${round} ${name.padEnd(10)} ${mIds(m.ids / m.seconds).padStart(9)} IDs/s  (${fmt(m.ids)} IDs in ${fmt(m.seconds, 3)} s, ${fmt(m.bytes / m.seconds / 1e6)} MB/s, server CPU ${fmt((100 * m.serverCpu) / m.seconds)}%, client CPU ${fmt((100 * m.clientCpu) / m.seconds)}%)`,
        );
        await sleep(200);
      }
    }
    wsIdmint.close();
    wsRaw.close();
  } catch (err) {
    failed = true;
    console.error(`FAILED: ${(err as Error).message}`);
    if (node) console.error(node.output.slice(-20).join('\n'));
  } finally {
    await raw?.stop();
    await node?.stop();
    await cleanup(names).catch(() => undefined);
  }
  if (failed) process.exit(1);

  const rate = (c: CaseName) => median(results[c].map((m) => m.ids / m.seconds));
  const rows = (['raw', 'binary', 'ranges', 'json', 'json-parse'] as CaseName[]).map((c) => {
    const ms = results[c];
    const secs = ms.reduce((s, m) => s + m.seconds, 0);
    const cpu = ms.reduce((s, m) => s + m.serverCpu, 0);
    const clientCpu = ms.reduce((s, m) => s + m.clientCpu, 0);
    return {
      c,
      rate: rate(c),
      ids: ms[0].ids,
      mbps: median(ms.map((m) => m.bytes / m.seconds / 1e6)),
      cpu: (100 * cpu) / secs,
      clientCpu: (100 * clientCpu) / secs,
      frames: ms[0].frames,
    };
  });
  const targets = [
    {
      name: 'binary ≥ 0.7 × raw',
      value: rate('binary') / rate('raw'),
      shown: fmt(rate('binary') / rate('raw'), 3),
      pass: rate('binary') >= 0.7 * rate('raw'),
    },
    { name: 'ranges ≥ 100M IDs/s', value: rate('ranges'), shown: mIds(rate('ranges')), pass: rate('ranges') >= 100e6 },
    { name: 'json ≥ 2M IDs/s', value: rate('json'), shown: mIds(rate('json')), pass: rate('json') >= 2e6 },
  ];
  console.log('');
  for (const r of rows) console.log(`${r.c.padEnd(10)} ${mIds(r.rate).padStart(9)} IDs/s (median of ${o.rounds})`);
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.shown}`);

  if (o.write) {
    mkdirSync(RESULTS, { recursive: true });
    const table = [
      ['case', 'IDs per take', 'IDs/s', 'MB/s on the wire', 'frames per take', 'server CPU %', 'client CPU %'],
      ...rows.map((r) => [r.c, fmt(r.ids), mIds(r.rate), fmt(r.mbps), fmt(r.frames), fmt(r.cpu), fmt(r.clientCpu)]),
    ];
    const md = [
      '# idmint websocket stream benchmark (latest run)',
      '',
      `- date: ${new Date().toISOString()}`,
      `- node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})`,
      `- command: \`npm run bench:ws\` (${o.rounds} rounds, medians; one take per case and round; binary and raw blocks of ${fmt(o.block)} IDs, json ${fmt(o.block)}, ranges ${fmt(RANGES_BLOCK)})`,
      `- servers: idmint (\`idmint serve\`, real Redis and MariaDB, STREAM_MAX_BUFFER_BYTES ${BUFFER_BYTES}) and a bare \`ws\` server, each a process of its own; the client is one more process that reads every binary ID, decodes every json block into bigints with the shipped client's decoder (json-parse: with JSON.parse, informational) and parses every ranges message`,
      `- load average (1 min) before / after the run: ${fmt(loadBefore, 2)} / ${fmt(loadavg()[0], 2)} on ${cpus().length} CPUs`,
      '',
      markdownTable(table),
      '',
      '| goal | value | verdict |',
      '| --- | ---: | --- |',
      ...targets.map((t) => `| ${t.name} | ${t.shown} | ${t.pass ? 'PASS' : 'MISS'} |`),
      '',
      'CPU % is of one core, averaged over the measured takes (server: /proc ticks of its process).',
      '',
    ].join('\n');
    writeFileSync(`${RESULTS}ws-latest.md`, md);
    console.log(`\nwrote ${RESULTS}ws-latest.md`);
    recorder.finish({
      rows: table,
      ratio: { of: 'IDs/s', baseline: 'raw' },
      notes: targets.map((t) => `${t.name}: ${t.shown} ${t.pass ? 'PASS' : 'MISS'}`),
    });
  }
}

await main();
