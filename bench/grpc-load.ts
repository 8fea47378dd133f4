// The gRPC benchmark's load: a process of its own (started by bench/grpc.ts) that keeps
// `concurrency` unary Next calls in flight over `channels` HTTP/2 connections for a warm-up and
// then a measured window, and prints one JSON line with the throughput, latency percentiles
// and the checks of what it received: no error, every answer one ID, and for numeric tags all
// IDs distinct, increasing per caller loop, with their minimum and maximum (the orchestrator
// compares them with batches taken before and after). For the baseline every ID must be "1".
//
// Flags: --port N --tag T [--app A] --duration S --warmup S --concurrency N --channels N [--constant]
import { setTimeout as sleep } from 'node:timers/promises';
import { credentials, loadPackageDefinition, Metadata, type Client, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { findProtoRoot, LOADER_OPTIONS, PROTO_FILE } from '../src/api/grpc/proto.js';
import { selfCpuSeconds } from '../tools/cpu.js';
import { readBenchOptions } from './common-options.js';

interface Stub extends Client {
  Next(
    req: Record<string, unknown>,
    md: Metadata,
    cb: (err: ServiceError | null, res: { ids: string[] }) => void,
  ): void;
}

const o = { port: 0, tag: '', app: '', duration: 10, warmup: 2, concurrency: 50, channels: 2, constant: false };
const usage =
  'grpc-load --port N --tag T [--app A] [--duration S] [--warmup S] [--concurrency N] [--channels N] [--constant]';
readBenchOptions(
  process.argv.slice(2),
  usage,
  { duration: [0.1], warmup: [0], concurrency: [1], channels: [1] },
  o,
  (a) => {
    switch (a.flag) {
      case '--port':
        o.port = a.whole(1, 65535);
        break;
      case '--tag':
        o.tag = a.text();
        break;
      case '--app':
        o.app = a.text();
        break;
      case '--constant':
        o.constant = true;
        break;
      default:
        return false;
    }
    return true;
  },
);

const def = loadSync(PROTO_FILE, { ...LOADER_OPTIONS, includeDirs: [findProtoRoot()] });
const Ids = (
  loadPackageDefinition(def) as unknown as {
    idmint: { v1: { Ids: new (a: string, c: ReturnType<typeof credentials.createInsecure>, o: object) => Stub } };
  }
).idmint.v1.Ids;
// A subchannel pool of its own per client: each channel is a connection of its own.
const stubs = Array.from(
  { length: o.channels },
  () => new Ids(`127.0.0.1:${o.port}`, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
);
const md = new Metadata();
const req: Record<string, unknown> = { tag: o.tag, ...(o.app ? { app: o.app } : {}) };

let measuring = false;
let stopped = false;
const lat: number[] = [];
let ok = 0;
let errors = 0;
let violations = 0;
const examples: string[] = [];
const seen = new Set<string>();
let min: bigint | undefined;
let max: bigint | undefined;
const note = (what: string) => {
  if (examples.length < 5) examples.push(what);
};

const call = (stub: Stub): Promise<string[] | undefined> =>
  new Promise((resolve) =>
    stub.Next(req, md, (err, res) => {
      if (err) {
        errors++;
        note(`${err.code} ${err.details}`);
        resolve(undefined);
      } else resolve(res.ids);
    }),
  );

async function loop(i: number): Promise<void> {
  const stub = stubs[i % stubs.length];
  let last: bigint | undefined;
  while (!stopped) {
    const t0 = performance.now();
    const ids = await call(stub);
    const ms = performance.now() - t0;
    if (!measuring || stopped || ids === undefined) continue;
    lat.push(ms);
    ok++;
    if (ids.length !== 1) {
      violations++;
      note(`answer of ${ids.length} IDs`);
      continue;
    }
    const id = ids[0];
    if (o.constant) {
      if (id !== '1') {
        violations++;
        note(`constant answer ${id}`);
      }
      continue;
    }
    if (seen.has(id)) {
      violations++;
      note(`duplicate ${id}`);
    }
    seen.add(id);
    if (o.app) continue; // rule IDs: strings, distinct only
    const v = BigInt(id);
    if (last !== undefined && !(v > last)) {
      violations++;
      note(`not increasing on one caller: ${last} then ${v}`);
    }
    last = v;
    if (min === undefined || v < min) min = v;
    if (max === undefined || v > max) max = v;
  }
}

const loops = Array.from({ length: o.concurrency }, (_, i) => loop(i));
await sleep(o.warmup * 1000);
const cpu0 = selfCpuSeconds();
const t0 = performance.now();
measuring = true;
await sleep(o.duration * 1000);
measuring = false;
const wall = (performance.now() - t0) / 1000;
const cpu1 = selfCpuSeconds() - cpu0;
stopped = true;
await Promise.all(loops);
for (const s of stubs) s.close();
lat.sort((a, b) => a - b);
const pct = (p: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] : NaN);
process.stdout.write(
  `${JSON.stringify({
    ok,
    errors,
    violations,
    examples,
    rps: ok / wall,
    wall,
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
    max: lat[lat.length - 1] ?? NaN,
    clientCpu: (cpu1 / wall) * 100,
    distinct: seen.size,
    min: min?.toString(),
    maxId: max?.toString(),
  })}\n`,
);
process.exit(0);
