// CPU time of processes and of the machine, read from /proc (Linux), for figures such as "the
// server used 80% of a core": sample before and after a window, divide the difference by the
// wall time. Off Linux the readings are NaN (a table prints them as "-").
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Clock ticks per second of /proc's figures (USER_HZ). */
export const TICK = 100;

/**
 * A process's /proc/<pid>/stat: its command name and the fields after it (field 3 onwards, at
 * index 0). Throws when it cannot be read (the process ended).
 */
export function readStat(pid: number | 'self'): { comm: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const close = stat.lastIndexOf(')');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
}

/**
 * The times of /proc/stat's line `label` ("cpu": all CPUs; "cpu1": one), in ticks: user, nice,
 * system, idle, iowait, irq, softirq, steal; undefined when there is no such line.
 */
function cpuTicks(label: string): number[] | undefined {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${label} `));
  return line?.trim().split(/\s+/).slice(1, 9).map(Number);
}

/** CPU seconds (user + system) a process has used; NaN when it cannot be read. */
export function procCpuSeconds(pid: number): number {
  try {
    const f = readStat(pid).fields;
    return (Number(f[11]) + Number(f[12])) / TICK; // utime, stime
  } catch {
    return NaN;
  }
}

/** CPU seconds this process has used (user + system). */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds of this process's children that ended and were waited for. */
export function reapedChildrenSeconds(): number {
  const f = readStat('self').fields;
  return (Number(f[13]) + Number(f[14])) / TICK; // cutime, cstime
}

/** CPU seconds all CPUs of the machine spent busy (not idle, not waiting on I/O); NaN when unknown. */
export function machineBusySeconds(): number {
  try {
    const f = cpuTicks('cpu');
    return f === undefined ? NaN : (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / TICK;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds the hypervisor took from a virtual machine's CPU (steal: runnable, but the host ran
 * something else), of one CPU or, without one, of all; NaN when unknown.
 */
export function stealSeconds(cpu?: number): number {
  try {
    const f = cpuTicks(cpu === undefined ? 'cpu' : `cpu${cpu}`);
    return f === undefined ? NaN : f[7] / TICK;
  } catch {
    return NaN;
  }
}

export interface ProcCpu {
  readonly comm: string;
  readonly ppid: number;
  /** CPU ticks used so far (user + system). */
  readonly ticks: number;
}

/** Every process of the machine with its CPU ticks so far. */
export function readProcs(): Map<number, ProcCpu> {
  const out = new Map<number, ProcCpu>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const { comm, fields: f } = readStat(Number(name));
      out.set(Number(name), {
        comm,
        ppid: Number(f[1]),
        ticks: Number(f[11]) + Number(f[12]),
      });
    } catch {
      // the process ended while the list was read
    }
  }
  return out;
}

/** The pid and every descendant of it. */
export function processTree(procs: Map<number, ProcCpu>, root: number): Set<number> {
  const out = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, p] of procs)
      if (!out.has(pid) && out.has(p.ppid)) {
        out.add(pid);
        grew = true;
      }
  }
  return out;
}

/**
 * Puts every thread of a running process on one CPU (`taskset -a -p -c`): the benchmarks' --pin
 * (the server under test on one CPU, the load on the other). Answers whether taskset did it.
 */
export function pinProcess(pid: number, cpu: number): boolean {
  return setAffinity(pid, String(cpu));
}

/** The CPUs a process may run on, as taskset lists them ("0,1", "0-3"); undefined when unknown. */
export function affinityOf(pid: number): string | undefined {
  const out = spawnSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' });
  const list = out.status === 0 ? out.stdout.split(':').at(-1)?.trim() : undefined;
  return list === '' ? undefined : list;
}

/** Puts every thread of a running process on the CPUs of `list` ("0,1"); answers whether taskset did it. */
export function setAffinity(pid: number, list: string): boolean {
  return spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' }).status === 0;
}

/**
 * Waits (up to maxS) for a second in which the machine was busy less than 10% of a core; returns the last second's %.
 */
export async function waitQuiet(maxS: number): Promise<number> {
  const until = Date.now() + maxS * 1000;
  for (;;) {
    const b0 = machineBusySeconds();
    await sleep(1000);
    const busy = (machineBusySeconds() - b0) * 100;
    if (busy < 10 || Date.now() >= until) return busy;
  }
}

export interface CpuWindow {
  /** % of one core over the window. */
  server: number;
  client: number;
  redis: number;
  other: number;
  /** The busiest other processes, "name pid: %". */
  busiest: string[];
}

/**
 * Who used the CPU between two readProcs(): the server's process tree, this process (the load
 * generator, plus extraClientS CPU seconds of one that ran as a child and ended), Redis, and
 * the rest of the machine (from machineBusySeconds over the window, busyS).
 */
export function cpuWindow(
  before: Map<number, ProcCpu>,
  after: Map<number, ProcCpu>,
  wallS: number,
  busyS: number,
  serverRoot: number | undefined,
  redisPid: number | undefined,
  extraClientS = 0,
): CpuWindow {
  const pct = (ticks: number) => (ticks / TICK / wallS) * 100;
  const delta = (pid: number) =>
    Math.max(0, (after.get(pid)?.ticks ?? 0) - (before.get(pid)?.ticks ?? after.get(pid)?.ticks ?? 0));
  const servers = serverRoot === undefined ? new Set<number>() : processTree(after, serverRoot);
  let server = 0;
  for (const pid of servers) server += delta(pid);
  const client = delta(process.pid) + extraClientS * TICK;
  const redis = redisPid === undefined ? 0 : delta(redisPid);
  const others: { name: string; pct: number }[] = [];
  for (const [pid, p] of after) {
    if (servers.has(pid) || pid === process.pid || pid === redisPid) continue;
    const d = delta(pid);
    if (d > 0) others.push({ name: `${p.comm} ${pid}`, pct: pct(d) });
  }
  others.sort((a, b) => b.pct - a.pct);
  // The machine's total also holds processes that started and ended inside the window.
  const other = Math.max(0, (busyS / wallS) * 100 - pct(server) - pct(client) - pct(redis));
  return {
    server: pct(server),
    client: pct(client),
    redis: pct(redis),
    other,
    busiest: others
      .slice(0, 3)
      .filter((o) => o.pct >= 1)
      .map((o) => `${o.name}: ${o.pct.toFixed(0)}%`),
  };
}
