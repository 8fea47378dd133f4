// Scheduler times of a process's threads, read from /proc/<pid>/task/<tid>/schedstat (Linux):
// how long each thread ran on a CPU and how long it was ready to run and waited for one. A
// server's serving thread (the process's first, tid = pid) waiting while its own other threads
// (V8's compiler and garbage collector helpers, libuv's pool) run on the same CPU is time every
// request that came meanwhile waits too. Off Linux the readings are empty.
import { readdirSync, readFileSync } from 'node:fs';

/** One thread's times so far, seconds. */
export interface ThreadTimes {
  /** On a CPU. */
  readonly runS: number;
  /** Ready to run, waiting for a CPU. */
  readonly waitS: number;
}

/** The threads of `pid` (their tids); empty when they cannot be read (the process ended). */
export function threadIds(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
}

/** A thread's ns on a CPU and ns ready to run and waiting for one, so far; NaNs when it cannot be read (it ended). */
export function schedstatNs(pid: number, tid: number): [runNs: number, waitNs: number] {
  try {
    const f = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
    return [Number(f[0]), Number(f[1])];
  } catch {
    return [NaN, NaN];
  }
}

/** The times of each thread of `pid` (by tid); empty when they cannot be read. */
export function threadTimes(pid: number): Map<number, ThreadTimes> {
  const out = new Map<number, ThreadTimes>();
  for (const tid of threadIds(pid)) {
    const [run, wait] = schedstatNs(pid, tid);
    // NaN: the thread ended while the list was read.
    if (!Number.isNaN(run)) out.set(tid, { runS: run / 1e9, waitS: wait / 1e9 });
  }
  return out;
}

/** Between two readings of processes' threads (pid → threadTimes), what the serving threads met. */
export interface ServingThreads {
  /** Seconds the serving threads (tid = pid) were ready to run and waited for a CPU. */
  readonly servingWaitS: number;
  /** CPU seconds of every other thread of the processes (a thread that started meanwhile counts from zero). */
  readonly othersRunS: number;
}

/** What the serving threads of `after`'s processes met since `before`. */
export function servingThreads(
  before: Map<number, Map<number, ThreadTimes>>,
  after: Map<number, Map<number, ThreadTimes>>,
): ServingThreads {
  let servingWaitS = 0;
  let othersRunS = 0;
  for (const [pid, threads] of after) {
    const was = before.get(pid) ?? new Map<number, ThreadTimes>();
    for (const [tid, now] of threads) {
      const then = was.get(tid) ?? { runS: 0, waitS: 0 };
      if (tid === pid) servingWaitS += now.waitS - then.waitS;
      else othersRunS += now.runS - then.runS;
    }
  }
  return { servingWaitS, othersRunS };
}
