// What an idempotency key costs on `GET /v1/id/:tag`, run by `npm run bench:idempotency`.
//
// The promise measured (docs/GUARANTEES.md#idempotency-keys): a request without a key is served
// as before; a keyed request with a new key to a segment tag of order global costs the same one
// script call as the unkeyed one (idem-takes-4.lua looks the key up, takes and keeps the answer,
// for the keyed requests of one event-loop turn together);
// to a tag served from memory (order node) two calls more than the unkeyed one (the claim,
// idem-claim-3.lua, before the take; the record, idem-record-3.lua, after it); a replay one call
// in all (which finds the kept answer). In one run, with keep-alive clients over loopback (autocannon, in this
// process) at 1 client (latency) and at --connections clients (throughput), it measures, in
// interleaved rounds after an uncounted warm-up of every case:
//   bare route                     a bare Fastify route answering a constant (bench/bare-server.ts)
//   bare route + one Redis INCR    the same route doing one INCR per request: minus the bare
//                                  route, the cost of one Redis round trip on this machine
//   <order>, unkeyed               GET /v1/id/:tag as most callers send it (the pre-router path)
//   <order>, unkeyed, before keys  with --before COMMIT: the unkeyed request to idmint as it was at
//                                  that commit (exported with git archive), served in the same
//                                  rounds: whether requests without a key are unchanged
//   <order>, unkeyed, router       the same with an empty query ("?"), which Fastify's router
//                                  serves, as it serves every keyed request
//   <order>, keyed, new key        a fresh Idempotency-Key per request (order global: taken and
//                                  kept in one call; order node: claimed, taken, recorded)
//   <order>, keyed, replay         the same key every time (the one call finds the kept answer)
// for a segment tag of order global and one of order node. Apart, on a private redis-server
// (nothing else on it), Redis's own time per call (INFO commandstats) of INCR, the take and the
// key scripts (a new key's one call of order global; its claim and record of order node; a
// replay's claim), as idmint sends them for one ID. "extra µs" is the case's cost over the unkeyed request of its tag (over the bare route for the INCR route), per round: at 1
// client the difference of the p50 latencies, at N clients the difference of the wall time per
// request (1/throughput); "÷ round trip" divides it by the INCR route's extra of the same round
// and client count, so 1.00 is exactly one more round trip. Figures are medians of the rounds.
// Every answer is checked (IDs increasing per connection and never twice; a replay's answer the
// kept one); any error or broken check fails the run.
//
// Flags: --duration S (per case and round, default 3)  --warmup S (per case, default 1)
//        --rounds N (default 5)  --connections N (default 50)  --pin (idmint and the bare routes
//        on CPU 1, this process on CPU 0)  --cpu-prof (write idmint's .cpuprofile to
//        bench/results/profiles/)  --no-write (print only, record no run)
//        --before COMMIT (also idmint at COMMIT, e.g. the commit before idempotency keys)
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { encodeIds, fingerprintOf } from '../src/core/idempotency-key.js';
import { claimCharge } from '../src/service/idempotency.js';
import type { RedisClient } from '../src/store/redis/connection.js';
import { Keys } from '../src/store/redis/keys.js';
import { scriptText } from '../src/store/redis/lua.js';
import { SegmentStore } from '../src/store/redis/segments.js';
import { readOptions } from '../tools/args.js';
import { ROOT } from '../tools/child.js';
import { cpuWindow, machineBusySeconds, pinProcess, readProcs } from '../tools/cpu.js';
import { countRepeats, IdList } from '../tools/duplicates.js';
import { ADMIN_TOKEN, REDIS_URL, cleanup, mysqlUrlFor, type TestNames } from '../tools/env.js';
import { createTag } from '../tools/node.js';
import { RedisServer } from '../tools/redis-server.js';
import { commandStat } from '../tools/redis-stats.js';
import { fmt, textTable } from '../tools/table.js';
import { autocannon, type AutocannonOptions } from './load.js';
import { startRun } from './record.js';
import { runMain, startServer, type Server } from './server.js';
import { medianOrNaN } from './stats.js';

interface Options {
  duration: number;
  warmup: number;
  rounds: number;
  connections: number;
  pin: boolean;
  cpuProf: boolean;
  write: boolean;
  before?: string;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { duration: 3, warmup: 1, rounds: 5, connections: 50, pin: false, cpuProf: false, write: true };
  const usage = 'npm run bench:idempotency -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--pin] [--cpu-prof] [--no-write] [--before COMMIT]';
  readOptions(argv, usage, (a) => {
    if (a.flag === '--duration') o.duration = a.number(1);
    else if (a.flag === '--warmup') o.warmup = a.number(0);
    else if (a.flag === '--rounds') o.rounds = a.whole(1);
    else if (a.flag === '--connections') o.connections = a.whole(2);
    else if (a.flag === '--pin') o.pin = true;
    else if (a.flag === '--cpu-prof') o.cpuProf = true;
    else if (a.flag === '--no-write') o.write = false;
    else if (a.flag === '--before') o.before = a.text();
    else return false;
    return true;
  });
  return o;
}

type Order = 'global' | 'node';
type Kind = 'bare' | 'incr' | 'unkeyed' | 'before' | 'router' | 'fresh' | 'replay';
const TAGS: Record<Order, string> = { global: 'idem.global', node: 'idem.node' };
const KINDS: readonly Kind[] = ['unkeyed', 'before', 'router', 'fresh', 'replay'];
const LABELS: Record<Kind, string> = {
  bare: 'bare route',
  incr: 'bare route + one Redis INCR',
  unkeyed: 'unkeyed',
  before: 'unkeyed, before keys',
  router: 'unkeyed, router',
  fresh: 'keyed, new key',
  replay: 'keyed, replay',
};

interface Case {
  readonly kind: Kind;
  readonly order?: Order;
  readonly clients: number;
  readonly name: string;
}

interface Measured {
  readonly rps: number;
  readonly p50us: number;
  readonly p99us: number;
  readonly serverUsPerReq: number;
  readonly client: number;
  readonly redis: number;
  readonly other: number;
}

const HIST_MAX_US = 200_000;
const pct = (hist: Uint32Array, total: number, q: number): number => {
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let us = 0; us <= HIST_MAX_US; us++) if ((seen += hist[us]) >= rank) return us;
  return HIST_MAX_US;
};

interface Target {
  readonly server: Server;
  readonly path: string;
  /** The Idempotency-Key of each request (undefined: none). */
  readonly key: () => string | undefined;
  /** Checks one 2xx body of a connection; answers a problem or undefined. */
  readonly check: (conn: object, body: string) => string | undefined;
}

/** One load run of a case: latency histogram, throughput, CPU of the server, this process, Redis and the rest. */
async function load(t: Target, clients: number, seconds: number, redisPid: number | undefined, problems: string[], label: string): Promise<Measured> {
  const hist = new Uint32Array(HIST_MAX_US + 1);
  let n = 0;
  let conn: object = {};
  let status = 0;
  const p0 = readProcs();
  const b0 = machineBusySeconds();
  const t0 = performance.now();
  const opts: AutocannonOptions & { requests: unknown[] } = {
    url: t.server.url + t.path,
    connections: clients,
    duration: seconds,
    pipelining: 1,
    timeout: 10,
    // Every case builds each request the same way, so the load generator's work is alike.
    requests: [
      {
        setupRequest: (req: { headers?: Record<string, string> }) => {
          const key = t.key();
          return { ...req, headers: key === undefined ? { ...req.headers } : { ...req.headers, 'idempotency-key': key } };
        },
      },
    ],
    verifyBody: (body) => {
      if (status < 200 || status > 299) {
        if (problems.length < 20) problems.push(`${label}: HTTP ${status} ${body.slice(0, 200)}`);
        return true;
      }
      const problem = t.check(conn, body);
      if (problem && problems.length < 20) problems.push(`${label}: ${problem}`);
      return true;
    },
  };
  const res = await new Promise<{ '2xx': number; non2xx: number; errors: number; timeouts: number }>((resolve, reject) => {
    const inst = autocannon(opts, (err, r) => (err ? reject(err) : resolve(r)));
    inst.on('response', (c, s, _b, ms) => {
      conn = c;
      status = s;
      if (s >= 200 && s <= 299) {
        hist[Math.min(HIST_MAX_US, Math.round(ms * 1000))]++;
        n++;
      }
    });
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuWindow(p0, readProcs(), wall, machineBusySeconds() - b0, t.server.pid, redisPid);
  if (res.non2xx + res.errors + res.timeouts > 0) problems.push(`${label}: ${res.non2xx} non-2xx, ${res.errors} errors, ${res.timeouts} timeouts`);
  return {
    rps: res['2xx'] / wall,
    p50us: pct(hist, n, 0.5),
    p99us: pct(hist, n, 0.99),
    serverUsPerReq: ((cpu.server / 100) * wall * 1e6) / Math.max(1, res['2xx']),
    client: cpu.client,
    redis: cpu.redis,
    other: cpu.other,
  };
}

/** Checks {"id":"<n>"} bodies: increasing on each connection, none twice in the case. */
function idsCheck(): { check: Target['check']; repeats: () => number } {
  const last = new WeakMap<object, bigint>();
  const ids = new IdList();
  return {
    check(conn, body) {
      const m = /^\{"id":"([1-9]\d{0,18})"\}$/.exec(body);
      if (!m) return `unexpected body ${body.slice(0, 100)}`;
      const id = BigInt(m[1]);
      const prev = last.get(conn);
      last.set(conn, id);
      ids.push(id);
      return prev !== undefined && !(id > prev) ? `id ${id} after ${prev} on one connection` : undefined;
    },
    repeats: () => countRepeats(ids.values),
  };
}

/**
 * idmint as it was at `commit`, exported (git archive) into a directory of its own that uses this
 * checkout's node_modules, started by startServer from there: for the unkeyed request before keys.
 */
async function startAt(commit: string, dir: string, env: Record<string, string>, cpu: number | undefined): Promise<Server> {
  const tar = join(dir, 'src.tar');
  execFileSync('git', ['archive', '--format=tar', '-o', tar, commit], { cwd: ROOT });
  execFileSync('tar', ['-xf', tar, '-C', dir]);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return startServer(`idmint at ${commit}`, ['src/cli.ts', 'serve'], { cwd: dir, cpu, env });
}

type AloneCall = 'incr' | 'take' | 'inKey' | 'claim' | 'record' | 'replay';

/**
 * Redis's own µs per call of INCR, of the take and of the key scripts as idmint sends them for
 * one ID: the take, a new key's one call (the take with the key's lookup and answer), the claim
 * of a new key, the record over that claim, and the claim of a kept key (a replay's only call),
 * on a private server: medians of `rounds` windows of `calls` sequential calls.
 */
async function redisAlone(rounds: number, calls: number): Promise<Record<AloneCall, number>> {
  const server = await RedisServer.start();
  const r = new Redis(server.url, { maxRetriesPerRequest: 1 });
  try {
    const claimSha = String(await r.script('LOAD', scriptText('idem-claim-3')));
    const recordSha = String(await r.script('LOAD', scriptText('idem-record-3')));
    const takeSha = String(await r.script('LOAD', scriptText('take-2')));
    const inKeySha = String(await r.script('LOAD', scriptText('idem-takes-4')));
    // A counter in its steady state, as install-2.lua leaves it with a segment far from its end.
    const segments = new SegmentStore({ default: r as unknown as RedisClient }, new Keys('b'));
    const ref = { tag: 't', epoch: 1, shard: 0 };
    const cold = await segments.take(ref, 1, 0.5);
    await segments.install(ref, cold.gen, [1, 1e12], 0.5);
    const segment = segments.key(ref);
    // As idmint sends them for GET /v1/id of one ID, kept a day, under the bench's bound.
    const fingerprint = fingerprintOf({ count: 1, shape: 'one' });
    const answer = encodeIds(['1000001']);
    const claim = (key: string) =>
      r.evalsha(
        claimSha,
        3,
        `idem:{t}:${key}`,
        'idem-index:{t}',
        'idem-bytes:{t}',
        key,
        fingerprint,
        'owner',
        30_000,
        100_000_000,
        1024 ** 4,
        claimCharge(1, key, fingerprint),
      );
    const record = (key: string) =>
      r.evalsha(recordSha, 3, `idem:{t}:${key}`, 'idem-index:{t}', 'idem-bytes:{t}', key, 'owner', fingerprint, answer, 86_400_000);
    // One request per call, as a lone request's call is (under load a call carries several).
    const inKey = (key: string) =>
      r.evalsha(
        inKeySha,
        4,
        segment,
        'idem-index:{t}',
        'idem-bytes:{t}',
        'b:{t}:moved',
        'idem:{t}:',
        30_000,
        100_000_000,
        1024 ** 4,
        1,
        86_400_000,
        1,
        0,
        key,
        fingerprint,
        'owner',
        claimCharge(1, key, fingerprint),
        1,
      );
    await claim('kept');
    await record('kept');
    let claimed = 0;
    let recorded = 0;
    let taken = 0;
    let call = 0;
    const calls_: Record<AloneCall, () => Promise<unknown>> = {
      incr: () => r.incr('incr'),
      take: () => r.evalsha(takeSha, 2, segment, 'b:{t}:moved', 1, `g${call++}`, 0.5, 1),
      inKey: () => inKey(`t${taken++}`),
      claim: () => claim(`k${claimed++}`),
      // Each round's records go over the claims of the same round.
      record: () => record(`k${recorded++}`),
      replay: () => claim('kept'),
    };
    const kinds = ['incr', 'take', 'inKey', 'claim', 'record', 'replay'] as const;
    const out: Record<AloneCall, number[]> = { incr: [], take: [], inKey: [], claim: [], record: [], replay: [] };
    for (let round = 0; round < rounds; round++)
      for (const kind of kinds) {
        await r.config('RESETSTAT');
        for (let i = 0; i < calls; i++) await calls_[kind]();
        const s = await commandStat(r, kind === 'incr' ? 'incr' : 'evalsha');
        out[kind].push(s.usec / s.calls);
      }
    return {
      incr: medianOrNaN(out.incr),
      take: medianOrNaN(out.take),
      inKey: medianOrNaN(out.inKey),
      claim: medianOrNaN(out.claim),
      record: medianOrNaN(out.record),
      replay: medianOrNaN(out.replay),
    };
  } finally {
    r.disconnect();
    await server.stop();
  }
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const recorder = startRun('idempotency');
  const loadBefore = loadavg();
  if (opts.pin) {
    if (cpus().length < 2) throw new Error('--pin needs 2 CPUs');
    pinProcess(process.pid, 0);
  }
  const cpu = opts.pin ? 1 : undefined;
  const id = randomBytes(4).toString('hex');
  const db = `idmint_b_${id}`;
  const names: TestNames = { db, prefix: `b${id}`, mysqlUrl: mysqlUrlFor(db) };
  const beforeNames: TestNames = { db: `${db}_before`, prefix: `b${id}before`, mysqlUrl: mysqlUrlFor(`${db}_before`) };
  const beforeDir = opts.before === undefined ? undefined : mkdtempSync(join(tmpdir(), 'idmint-before-'));
  const beforeCommit = opts.before === undefined ? undefined : execFileSync('git', ['rev-parse', '--short', opts.before], { cwd: ROOT }).toString().trim();
  const profDir = fileURLToPath(new URL('./results/profiles/', import.meta.url));
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });
  console.log(
    `idmint idempotency-key bench: 1 and ${opts.connections} clients, ${opts.duration} s per case after ${opts.warmup} s warm-up, ${opts.rounds} interleaved rounds; ` +
      `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? '?'})${opts.pin ? ', servers on CPU 1, load on CPU 0' : ''}`,
  );
  console.log(`load average before: ${loadBefore.map((v) => v.toFixed(2)).join(' ')}`);

  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const redisPid = Number(/^process_id:(\d+)/m.exec(await redis.info('server'))?.[1]) || undefined;
  const children: Server[] = [];
  const problems: string[] = [];
  const rows: string[][] = [];
  const notes: string[] = [];
  try {
    const bare = await startServer('bare route', ['bench/bare-server.ts'], { cpu });
    children.push(bare);
    const incr = await startServer('bare route + INCR', ['bench/bare-server.ts'], {
      cpu,
      env: { BARE_INCR_REDIS: REDIS_URL, BARE_INCR_KEY: `${names.prefix}:bare-incr` },
    });
    children.push(incr);
    const idmintEnv = (n: TestNames, node: string) => ({
      REDIS_URL,
      MYSQL_URL: n.mysqlUrl,
      REDIS_PREFIX: n.prefix,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      UDP_PORT: '0',
      GRPC_PORT: '0',
      NODE_ID: node,
      // Every new-key request keeps a key: the bound must not refuse the run's keys.
      IDEMPOTENCY_MAX_KEYS: '100000000',
    });
    const idmint = await startServer('idmint', ['src/cli.ts', 'serve'], {
      cpu,
      nodeFlags: opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
      env: idmintEnv(names, `bench-${id}`),
    });
    children.push(idmint);
    const before = beforeCommit && beforeDir ? await startAt(beforeCommit, beforeDir, idmintEnv(beforeNames, `bench-${id}-before`), cpu) : undefined;
    if (before) {
      children.push(before);
      for (const order of ['global', 'node'] as const) await createTag(before.url, { tag: TAGS[order], mode: 'segment', order });
      notes.push(`unkeyed, before keys: idmint at commit ${beforeCommit}, in the same rounds`);
    }

    // The kept answer each replay case asks for again.
    const kept: Partial<Record<Order, string>> = {};
    for (const order of ['global', 'node'] as const) {
      await createTag(idmint.url, { tag: TAGS[order], mode: 'segment', order });
      const res = await fetch(`${idmint.url}/v1/id/${TAGS[order]}`, { headers: { 'idempotency-key': `${id}-replay-${order}` } });
      kept[order] = await res.text();
      if (res.status !== 200) throw new Error(`first keyed request of ${TAGS[order]}: ${res.status} ${kept[order]}`);
    }

    const cases: Case[] = [];
    for (const clients of [1, opts.connections]) {
      for (const kind of ['bare', 'incr'] as const) cases.push({ kind, clients, name: LABELS[kind] });
      for (const order of ['global', 'node'] as const)
        for (const kind of KINDS) if (kind !== 'before' || before) cases.push({ kind, order, clients, name: `order ${order}, ${LABELS[kind]}` });
    }
    let seq = 0;
    const target = (c: Case): Target & { repeats: () => number } => {
      if (c.kind === 'bare' || c.kind === 'incr') {
        const ids = idsCheck();
        const server = c.kind === 'bare' ? bare : incr;
        return {
          server,
          path: '/v1/id/bench',
          key: () => undefined,
          check: c.kind === 'bare' ? (_c, b) => (b === '{"id":"1"}' ? undefined : `body ${b}`) : ids.check,
          repeats: c.kind === 'bare' ? () => 0 : ids.repeats,
        };
      }
      const order = c.order as Order;
      const path = `/v1/id/${TAGS[order]}${c.kind === 'router' ? '?' : ''}`;
      if (c.kind === 'replay') {
        const key = `${id}-replay-${order}`;
        const answer = kept[order];
        return {
          server: idmint,
          path,
          key: () => key,
          check: (_c, b) => (b === answer ? undefined : `replay answered ${b}, kept ${answer}`),
          repeats: () => 0,
        };
      }
      const ids = idsCheck();
      return { server: c.kind === 'before' ? before! : idmint, path, key: c.kind === 'fresh' ? () => `${id}-${seq++}` : () => undefined, ...ids };
    };

    const run = async (c: Case, seconds: number, label: string) => {
      const t = target(c);
      const m = await load(t, c.clients, seconds, redisPid, problems, label);
      const dup = t.repeats();
      if (dup > 0) problems.push(`${label}: ${dup} IDs answered twice`);
      return m;
    };
    if (opts.warmup > 0) {
      process.stdout.write('warm-up...');
      for (const c of cases) await run(c, opts.warmup, `${c.name}, ${c.clients} (warm-up)`);
      console.log(' done');
    }
    const results = new Map<Case, Measured[]>(cases.map((c) => [c, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      process.stdout.write(`round ${round}/${opts.rounds}...`);
      for (const c of cases) results.get(c)!.push(await run(c, opts.duration, `${c.name}, ${c.clients} (round ${round})`));
      console.log(' done');
    }

    // Per round: what a case costs over its reference (its tag's unkeyed request; the bare route for the INCR route).
    const cost = (m: Measured, clients: number) => (clients === 1 ? m.p50us : 1e6 / m.rps);
    const find = (kind: Kind, clients: number, order?: Order) => cases.find((c) => c.kind === kind && c.clients === clients && c.order === order)!;
    const extraOver = (c: Case, ref: Case, round: number) => cost(results.get(c)![round], c.clients) - cost(results.get(ref)![round], c.clients);
    const rounds = [...Array(opts.rounds).keys()];
    const roundTrip = (clients: number, r: number) => extraOver(find('incr', clients), find('bare', clients), r);
    rows.push([
      'case',
      'clients',
      'req/s',
      'p50 ms',
      'p99 ms',
      'server µs/req',
      'extra µs',
      '÷ round trip',
      'extra µs over router',
      'load CPU %',
      'Redis CPU %',
      'other CPU %',
      'Redis µs/call',
    ]);
    for (const c of cases) {
      const ms = results.get(c)!;
      const med = (f: (m: Measured) => number) => medianOrNaN(ms.map(f));
      // What is compared: the INCR route with the bare one; the unkeyed request now with the same
      // request before keys; every other case with its tag's unkeyed request.
      const pair: [Case, Case] | undefined =
        c.kind === 'incr'
          ? [c, find('bare', c.clients)]
          : c.kind === 'before'
            ? [find('unkeyed', c.clients, c.order), c]
            : c.order && c.kind !== 'unkeyed'
              ? [c, find('unkeyed', c.clients, c.order)]
              : undefined;
      const extra = pair ? medianOrNaN(rounds.map((r) => extraOver(...pair, r))) : NaN;
      const trips = pair ? medianOrNaN(rounds.map((r) => extraOver(...pair, r) / roundTrip(c.clients, r))) : NaN;
      const overRouter = c.kind === 'fresh' || c.kind === 'replay' ? medianOrNaN(rounds.map((r) => extraOver(c, find('router', c.clients, c.order), r))) : NaN;
      rows.push([
        c.name,
        String(c.clients),
        fmt(med((m) => m.rps)),
        fmt(med((m) => m.p50us) / 1000, 3),
        fmt(med((m) => m.p99us) / 1000, 3),
        fmt(
          med((m) => m.serverUsPerReq),
          1,
        ),
        fmt(extra, 1),
        fmt(trips, 2),
        fmt(overRouter, 1),
        fmt(med((m) => m.client)),
        fmt(med((m) => m.redis)),
        fmt(med((m) => m.other)),
        '-',
      ]);
    }
    const alone = await redisAlone(opts.rounds, 20_000);
    const aloneRow = (name: string, us: number) => [name, '1', ...Array<string>(rows[0].length - 3).fill('-'), fmt(us, 2)];
    rows.push(
      aloneRow('Redis alone: INCR', alone.incr),
      aloneRow('Redis alone: take script (unkeyed, order global)', alone.take),
      aloneRow('Redis alone: take in the key’s call, new key (order global)', alone.inKey),
      aloneRow('Redis alone: claim script, new key (order node)', alone.claim),
      aloneRow('Redis alone: record script, over the claim', alone.record),
      aloneRow('Redis alone: claim script, kept key (replay)', alone.replay),
    );
    const rt = (clients: number) => medianOrNaN(rounds.map((r) => roundTrip(clients, r)));
    const bareRps = medianOrNaN(results.get(find('bare', opts.connections))!.map((m) => m.rps));
    const idmintRps = Math.max(...cases.filter((c) => c.order && c.clients === opts.connections).map((c) => medianOrNaN(results.get(c)!.map((m) => m.rps))));
    notes.push(
      `one Redis round trip (bare route + INCR minus bare route): ${fmt(rt(1), 1)} µs at 1 client (p50 latency), ${fmt(rt(opts.connections), 1)} µs of wall time per request at ${opts.connections} clients`,
      `load generator: the bare route reached ${fmt(bareRps)} req/s at ${opts.connections} clients, ${fmt(bareRps / idmintRps, 2)}× the fastest idmint case, with the same generator`,
    );
    const worst = Math.max(
      ...cases
        .filter((c) => c.kind === 'fresh' || c.kind === 'replay')
        .map((c) => medianOrNaN(rounds.map((r) => extraOver(c, find('unkeyed', c.clients, c.order), r) / roundTrip(c.clients, r)))),
    );
    notes.push(
      `Redis's own time per call on a private server: INCR ${fmt(alone.incr, 2)} µs; the take ${fmt(alone.take, 2)} µs; a new key's one call of order global ${fmt(alone.inKey, 2)} µs; of order node its claim script ${fmt(alone.claim, 2)} µs and record script ${fmt(alone.record, 2)} µs; a replay's claim script ${fmt(alone.replay, 2)} µs`,
    );
    // The goals of docs/GUARANTEES.md#idempotency-keys: throughput at N clients over the tag's unkeyed request, median of the per-round ratios.
    for (const order of ['global', 'node'] as const)
      for (const [kind, goal] of [
        ['fresh', 0.8],
        ['replay', 0.9],
      ] as const) {
        const ratio = medianOrNaN(
          rounds.map((r) => results.get(find(kind, opts.connections, order))![r].rps / results.get(find('unkeyed', opts.connections, order))![r].rps),
        );
        notes.push(
          `order ${order}, ${LABELS[kind]}: ${fmt(ratio, 2)}x the unkeyed throughput at ${opts.connections} clients (goal ${goal}x${order === 'global' ? `: ${ratio >= goal ? 'pass' : 'below'}` : ', stated for order global'})`,
        );
      }
    notes.push(`keyed requests: at most ${fmt(worst, 2)} round trips over the unkeyed request of their tag (median of the rounds)`);
  } finally {
    for (const c of children) await c.stop(10000).catch(() => undefined);
    redis.disconnect();
    for (const n of beforeDir ? [names, beforeNames] : [names])
      await cleanup(n).catch((err: Error) => console.error(`cleanup of ${n.db} / ${n.prefix} failed: ${err.message}`));
    if (beforeDir) rmSync(beforeDir, { recursive: true, force: true });
  }
  const loadAfter = loadavg();
  console.log();
  console.log(textTable(rows, 2));
  console.log();
  for (const n of notes) console.log(`- ${n}`);
  console.log(`load average before: ${loadBefore.map((v) => v.toFixed(2)).join(' ')}; after: ${loadAfter.map((v) => v.toFixed(2)).join(' ')}`);
  for (const p of problems) console.error(`PROBLEM ${p}`);
  const ok = problems.length === 0;
  console.log(ok ? 'result: OK (every answer checked, no errors)' : `result: FAILED (${problems.length} problems)`);
  if (ok && opts.write) recorder.finish({ rows, labelColumns: 2, ratio: { column: '÷ round trip', baseline: `${LABELS.incr}, 1` }, notes });
  return ok ? 0 : 1;
}

runMain(main);
