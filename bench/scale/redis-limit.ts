// What Redis can do with idmint's take script alone: redis-benchmark sending the take (one ID
// per call) with the keys and arguments idmint itself sends (seen with MONITOR), and the no-op
// script (`return 1` with the same keys and arguments) to compare a take's usec with.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { takenOf } from '../../src/store/redis/segments.js';
import { cpuWindow, machineBusySeconds, readProcs, reapedChildrenSeconds, type CpuWindow } from '../../tools/cpu.js';
import { redisCounters, usecPerEvalsha } from '../../tools/redis-stats.js';

const COMMANDS = fileURLToPath(new URL('../../src/store/redis/commands/', import.meta.url));

export interface RedisLimit {
  script: string;
  command: string;
  calls: number;
  clients: number;
  rps: number;
  p50?: number;
  p99?: number;
  takenAdvance: number;
  cpu: CpuWindow;
  redisCpu: number;
}

/** The take script's file (named take-<number of keys>.lua, as the loader wants). */
export function takeScript(): { file: string; numKeys: number; lua: string } {
  const file = readdirSync(COMMANDS).find((f) => /^take-\d+\.lua$/.test(f));
  if (!file) throw new Error(`no take-<keys>.lua in ${COMMANDS}`);
  return { file, numKeys: Number(/\d+/.exec(file)![0]), lua: readFileSync(COMMANDS + file, 'utf8') };
}

/** The keys and arguments of the take script as idmint sends it for `tag`, seen with MONITOR while `trigger` runs. */
export async function captureTake(
  r: Redis,
  sha: string | undefined,
  numKeys: number,
  tag: string,
  trigger: () => Promise<unknown>,
): Promise<{ sha: string; keys: string[]; args: string[] }> {
  const mon = await r.monitor();
  try {
    const seen = new Promise<{ sha: string; keys: string[]; args: string[] }>((resolve) => {
      mon.on('monitor', (_time: string, a: string[]) => {
        const cmd = String(a[0]).toLowerCase();
        if (cmd !== 'evalsha' || (sha !== undefined && String(a[1]).toLowerCase() !== sha) || Number(a[2]) !== numKeys)
          return;
        const keys = a.slice(3, 3 + numKeys);
        if (keys[0]?.includes(`{${tag}}:seg:`))
          resolve({ sha: String(a[1]).toLowerCase(), keys, args: a.slice(3 + numKeys) });
      });
    });
    await trigger();
    return await Promise.race([
      seen,
      sleep(5000).then(() => Promise.reject(new Error(`no take of ${tag} with script ${sha} seen within 5 s`))),
    ]);
  } finally {
    mon.disconnect();
  }
}

/**
 * The no-op script's Redis usec per EVALSHA in this run: `return 1` with the keys and
 * arguments of a take, `calls` times, 8 in flight (as in bench/take-cpu.ts).
 */
export async function noopUsec(
  r: Redis,
  keys: readonly string[],
  args: readonly string[],
  calls = 20_000,
): Promise<number> {
  const sha = (await r.script('LOAD', 'return 1')) as string;
  const c0 = await redisCounters(r);
  for (let i = 0; i < calls; i += 8)
    await Promise.all(
      Array.from({ length: Math.min(8, calls - i) }, () => r.evalsha(sha, keys.length, ...keys, ...args)),
    );
  return usecPerEvalsha(c0, await redisCounters(r));
}

/** redis-benchmark of the take script against the segment key of `tag` (one ID per call). */
export async function redisLimit(
  r: Redis,
  redisUrl: string,
  tag: string,
  trigger: () => Promise<unknown>,
  calls: number,
  clients: number,
  pid: number | undefined,
  serverRoot: number,
): Promise<RedisLimit> {
  const script = takeScript();
  await r.script('LOAD', script.lua);
  // The script idmint runs: take-<keys>.lua, or on a single Redis 7 server its pinned copy.
  const { sha, keys, args } = await captureTake(r, undefined, script.numKeys, tag, trigger);
  const key = keys[0];
  // ARGV[1] is n, the IDs wanted (see the script's header): one per call here. ARGV[2] is the
  // call's token: a call that repeats the token of the latest call of its answer field is
  // answered again and moves nothing, so every call gets its own (redis-benchmark replaces
  // __rand_int__ with a random 12-digit number per call, given -r).
  const benchArgs = ['EVALSHA', sha, String(keys.length), ...keys, '1', 'bench__rand_int__', ...args.slice(2)];
  const url = new URL(redisUrl);
  const takenBefore = takenOf(await r.hgetall(key));
  const [seg0, end0] = (await r.hmget(key, 'cur', 'end')).map(Number);
  if (!(end0 - seg0 > calls))
    throw new Error(`the segment of ${key} holds ${end0 - seg0 + 1} IDs, fewer than ${calls} calls`);
  const before = readProcs();
  const b0 = machineBusySeconds();
  const c0 = await redisCounters(r);
  const k0 = reapedChildrenSeconds();
  const t0 = performance.now();
  const res = spawnSync(
    'redis-benchmark',
    [
      '-h',
      url.hostname,
      '-p',
      url.port || '6379',
      '-n',
      String(calls),
      '-c',
      String(clients),
      '-r',
      '100000000000',
      '--csv',
      ...benchArgs,
    ],
    {
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  const wallS = (performance.now() - t0) / 1000;
  const c1 = await redisCounters(r);
  const cpu = cpuWindow(
    before,
    readProcs(),
    wallS,
    machineBusySeconds() - b0,
    serverRoot,
    pid,
    reapedChildrenSeconds() - k0,
  );
  if (res.status !== 0) throw new Error(`redis-benchmark failed (${res.status}): ${res.stderr}`);
  const takenAdvance = takenOf(await r.hgetall(key)) - takenBefore;
  // --csv: a header line, then "name","rps","avg","min","p50","p95","p99","max" (7.x).
  const rows = res.stdout
    .trim()
    .split('\n')
    .map((l) => l.split(',').map((c) => c.replace(/"/g, '')));
  const head = rows[0];
  const row = rows[rows.length - 1];
  const col = (name: string) => {
    const i = head.indexOf(name);
    return i >= 0 ? Number(row[i]) : undefined;
  };
  const rps = col('rps') ?? Number(row[1]);
  return {
    script: script.file,
    command: benchArgs.join(' '),
    calls,
    clients,
    rps,
    p50: col('p50_latency_ms'),
    p99: col('p99_latency_ms'),
    takenAdvance,
    cpu,
    redisCpu: ((c1.cpuSeconds - c0.cpuSeconds) / wallS) * 100,
  };
}

/**
 * The no-op script sent one at a time, about once a millisecond, while a case runs: it meets
 * Redis as the takes do (woken for each call, its caches shared with the rest of the machine),
 * which calls sent back to back do not. It runs as EVAL, so commandstats count it apart from
 * the takes' EVALSHA (usecPerEval over the case's window). `stop()` ends it, waits for the
 * call in flight and answers how many calls it made (not the case's own Redis calls).
 */
export function pacedNoop(r: Redis, keys: readonly string[], args: readonly string[]): { stop(): Promise<number> } {
  let running = true;
  let failed: Error | undefined;
  let calls = 0;
  const loop = (async () => {
    while (running) {
      await r.eval('return 1', keys.length, ...keys, ...args);
      calls++;
      await sleep(1);
    }
  })().catch((err: Error) => {
    // Kept for stop(): a rejection nobody awaits yet would end the bench before its cleanup.
    failed = err;
  });
  return {
    stop: async () => {
      running = false;
      await loop;
      if (failed) throw new Error(`the paced no-op script failed: ${failed.message}`);
      return calls;
    },
  };
}
