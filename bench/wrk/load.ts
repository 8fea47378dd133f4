// One measured window of bench:wrk: wrk (the C load generator, one thread, on CPU 0) against one
// server for a fixed duration, and who used the CPU in the steady part of it (from /proc: the
// server's process tree, wrk itself, Redis, this process and the rest of the machine), sampled
// from 1 s after wrk starts to 1 s before it ends, so the connecting and the closing are left out.
import { setTimeout as sleep } from 'node:timers/promises';
import { startChild } from '../../tools/child.js';
import { machineBusySeconds, processTree, readProcs, TICK, type ProcCpu } from '../../tools/cpu.js';
import { parseWrkSummary, type WrkSummary } from './summary.js';

export interface WrkOptions {
  readonly connections: number;
  readonly threads: number;
  /** Seconds; at least 3, so that the CPU window holds a second. */
  readonly duration: number;
  /** The CPU wrk runs on (taskset -c). */
  readonly cpu?: number;
  /** The Lua file holding WRK_DONE_SCRIPT. */
  readonly script: string;
}

export interface CpuShare {
  /** % of one core over the steady window. */
  readonly server: number;
  readonly wrk: number;
  readonly redis: number;
  /** The rest of the machine (this process included: it sleeps meanwhile). */
  readonly other: number;
  /** The busiest other processes, "name pid: %". */
  readonly busiest: readonly string[];
}

export interface Window {
  readonly summary: WrkSummary;
  readonly rps: number;
  readonly cpu: CpuShare;
}

interface Sample {
  readonly t: number;
  readonly procs: Map<number, ProcCpu>;
  readonly busy: number;
}

const sample = (): Sample => ({ t: performance.now(), procs: readProcs(), busy: machineBusySeconds() });

function share(a: Sample, b: Sample, serverPid: number, wrkPid: number, redisPid: number | undefined): CpuShare {
  const wall = (b.t - a.t) / 1000;
  const pct = (ticks: number) => (ticks / TICK / wall) * 100;
  const delta = (pid: number) =>
    Math.max(0, (b.procs.get(pid)?.ticks ?? 0) - (a.procs.get(pid)?.ticks ?? b.procs.get(pid)?.ticks ?? 0));
  const servers = processTree(b.procs, serverPid);
  let server = 0;
  for (const pid of servers) server += delta(pid);
  const wrk = delta(wrkPid);
  const redis = redisPid === undefined ? 0 : delta(redisPid);
  const others: { name: string; pct: number }[] = [];
  for (const [pid, p] of b.procs) {
    if (servers.has(pid) || pid === wrkPid || pid === redisPid) continue;
    const d = delta(pid);
    if (d > 0) others.push({ name: `${p.comm} ${pid}`, pct: pct(d) });
  }
  others.sort((x, y) => y.pct - x.pct);
  const total = ((b.busy - a.busy) / wall) * 100;
  return {
    server: pct(server),
    wrk: pct(wrk),
    redis: pct(redis),
    other: Math.max(0, total - pct(server) - pct(wrk) - pct(redis)),
    busiest: others
      .slice(0, 3)
      .filter((o) => o.pct >= 1)
      .map((o) => `${o.name}: ${o.pct.toFixed(0)}%`),
  };
}

/** Runs wrk against url for opts.duration seconds; fails when wrk fails or prints no summary. */
export async function runWrk(url: string, opts: WrkOptions, serverPid: number, redisPid?: number): Promise<Window> {
  const args = [
    '-t',
    String(opts.threads),
    '-c',
    String(opts.connections),
    '-d',
    `${opts.duration}s`,
    '--timeout',
    '5s',
    '-s',
    opts.script,
    url,
  ];
  const wrk = startChild('wrk', args, { name: 'wrk', cpu: opts.cpu });
  const start = performance.now();
  const at = async (s: number) => {
    const wait = start + s * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    return sample();
  };
  const a = await at(1);
  const b = await at(opts.duration - 1);
  const code = await wrk.exited;
  // The summary may still be on its way through the pipe at exit.
  const line = await wrk.waitForLine((l) => l.startsWith('{"wrk":1,'), 5000).catch(() => undefined);
  const summary = line ? parseWrkSummary([line]) : undefined;
  if (code !== 0 || !summary)
    throw new Error(`wrk ${args.join(' ')} exited with ${code}:\n${wrk.output.slice(-20).join('\n')}`);
  return {
    summary,
    rps: summary.requests / (summary.durationUs / 1e6),
    cpu: share(a, b, serverPid, wrk.pid, redisPid),
  };
}
