// Keeps every CPU of the machine awake for a latency benchmark: one spinning shell per CPU at
// the lowest priority Linux has (SCHED_IDLE, `chrt -i 0`), pinned to it. On a virtual machine
// whose CPUs halt when idle (no cpuidle driver: each idle CPU runs HLT and the hypervisor takes
// it away), a request that arrives at an idle CPU waits for the host to give the CPU back, a
// wait of milliseconds at the host's will; a CPU kept busy by other work never pays it. Without
// the spinners a case with little work on the servers' CPU (a server alone at a modest rate)
// pays those waits and a case with much (the same server beside a bulk stream) does not, so a
// ratio of the two p99s flatters the busier case. The spinners give way to any other process at
// once (a task of any other policy preempts a SCHED_IDLE one on wake-up, and it gets a tiny
// share beside them), so every case is measured on a CPU that is awake.
import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { readStat } from '../tools/cpu.js';

/**
 * A spinner's loop: it spins while this process lives (chrt and taskset exec the shell, so its
 * parent is this process), so a benchmark killed by a signal leaves no spinner behind.
 */
const SPIN = 'while kill -0 $PPID 2>/dev/null; do :; done';

/** SCHED_IDLE, as /proc/<pid>/stat's policy field shows it. */
const SCHED_IDLE = 5;

/** A process's command name and scheduling policy, or undefined once it is gone. */
function commAndPolicy(pid: number): { comm: string; policy: number } | undefined {
  try {
    const { comm, fields } = readStat(pid);
    // Fields after the command name start at field 3; the policy is field 41.
    return { comm, policy: Number(fields[41 - 3]) };
  } catch {
    return undefined;
  }
}

export interface Spinners {
  /** The spinners' process ids, the one of CPU n at n. */
  readonly pids: readonly number[];
  stop(): void;
}

/**
 * Starts one SCHED_IDLE spinner on each CPU and waits until each runs (its shell exec'd under
 * that policy); throws when one cannot start. The spinners are killed by stop() and when this
 * process exits.
 */
export async function keepCpusAwake(): Promise<Spinners> {
  const count = cpus().length;
  const children: ChildProcess[] = [];
  const stop = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', stop);
  for (let cpu = 0; cpu < count; cpu++)
    children.push(spawn('chrt', ['-i', '0', 'taskset', '-c', String(cpu), 'sh', '-c', SPIN], { stdio: 'ignore' }));
  const until = Date.now() + 10_000;
  for (const child of children) {
    for (;;) {
      const seen = child.pid === undefined ? undefined : commAndPolicy(child.pid);
      if (seen?.comm === 'sh' && seen.policy === SCHED_IDLE) break;
      if (child.exitCode !== null || Date.now() > until) {
        stop();
        throw new Error(
          `a spinner to keep the CPUs awake did not start at SCHED_IDLE (chrt -i 0 taskset -c N sh): ${child.exitCode === null ? 'not running after 10 s' : `exited with ${child.exitCode}`}`,
        );
      }
      await sleep(20);
    }
  }
  return { pids: children.map((child) => child.pid!), stop };
}
