// The load generator of `npm run bench:udp`: client processes in C (bench/udp-client/udp-client.c),
// built with the system gcc into .tools/ (bench/c-build.ts), so that the clients are not the limit
// of what they measure. While they run, the CPU of the server and of the clients is read every
// WINDOW_MS from /proc (each thread's schedstat, in ns): a server that is the limit runs at
// nearly all of its core in every window; one that does not was waiting for its clients, or
// for its CPU while another process of the (shared) machine ran there. The second shows in the
// time its main thread spent runnable on the run queue (schedstat's second field): the
// server's demand is that time plus its running time, and a server whose demand fills the
// window never waited for its clients.
import { spawn } from 'node:child_process';
import { schedstatNs, threadIds } from '../../tools/threads.js';
import { buildC } from '../c-build.js';

/** The length of one CPU window. */
export const WINDOW_MS = 500;

/** Builds the client (bench/c-build.ts); answers its path. */
export const buildClient = (): string => buildC('bench/udp-client/udp-client.c');

/** A sample whose clock reads lie further apart than this was preempted between them, ns. */
const SAMPLE_GAP_NS = 200_000n;

/**
 * A thread's time running or runnable (schedstat, ns) and the monotonic clock at that read.
 * This process shares CPU 0 with the clients, and a preemption between the read and the
 * clock's (tens of ms) would move time from one window to the next (one at 89%, the next at
 * 107%); so the clock is read on both sides and the read taken again (up to 5 times) while
 * they lie further apart than SAMPLE_GAP_NS.
 */
function demandAt(pid: number, tid: number): { at: bigint; demand: number } {
  let sample = { at: 0n, demand: NaN };
  for (let tries = 0; tries < 5; tries++) {
    const before = process.hrtime.bigint();
    const [run, wait] = schedstatNs(pid, tid);
    const after = process.hrtime.bigint();
    sample = { at: (before + after) / 2n, demand: run + wait };
    if (after - before <= SAMPLE_GAP_NS) break;
  }
  return sample;
}

/** CPU ns a process has used, all its threads (schedstat); NaN when it cannot be read. */
export function cpuNs(pid: number): number {
  const tids = threadIds(pid);
  // A thread that ended while the list was read gives NaN, as the process that is gone does.
  return tids.length === 0 ? NaN : tids.reduce((ns, tid) => ns + schedstatNs(pid, tid)[0], 0);
}

export type Workload = 'idserver' | 'reuse';

export interface ClientResult {
  readonly total: number;
  readonly fail: number;
  readonly min: number;
  readonly max: number;
  readonly avg: number;
  readonly seconds: number;
  /** When its last reply came: CLOCK_MONOTONIC, ns (process.hrtime.bigint()'s clock). */
  readonly endedNs: bigint;
  /** The IDs collected, by app name (each app name its own counter). */
  readonly ids: Map<string, string[]>;
}

export interface LoadRun {
  readonly clients: ClientResult[];
  /**
   * Per full window while every client was still asking (the first, its start, left out, and
   * each that ended after the first client's last reply): % of one core.
   */
  readonly serverPct: number[];
  /** The same windows: the server's main thread running or runnable, % of the window. */
  readonly demandPct: number[];
  /** The same windows: the client processes together, % of one core. */
  readonly clientPct: number[];
}

export interface LoadOptions {
  readonly port: number;
  readonly rule: string;
  readonly requests: number;
  readonly clients: number;
  /** Requests each client keeps outstanding (1: one at a time, as id_server's client). */
  readonly inFlight: number;
  readonly workload: Workload;
  readonly collect: boolean;
  /** Run the clients on this CPU only (taskset). */
  readonly cpu?: number;
  /** The server whose CPU is read in each window. */
  readonly serverPid: number;
}

/** The result a client prints: "app id" per reply (collect), then "# total fail min max avg seconds ended". */
function parseOutput(text: string): ClientResult {
  const lines = text.trimEnd().split('\n');
  const last = lines.pop() ?? '';
  const f = last.split(' ');
  if (f[0] !== '#' || f.length !== 8) throw new Error(`the UDP client printed no summary: ${last}`);
  const [total, fail, min, max, avg, seconds] = f.slice(1, 7).map(Number);
  const [wholeSeconds, fraction = ''] = f[7].split('.');
  const endedNs = BigInt(wholeSeconds) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0').slice(0, 9));
  const ids = new Map<string, string[]>();
  for (const line of lines) {
    const [app, id] = line.split(' ');
    const list = ids.get(app);
    if (list === undefined) ids.set(app, [id]);
    else list.push(id);
  }
  return { total, fail, min, max, avg, seconds, endedNs, ids };
}

/** Runs the clients to their end, reading the CPU of the server and of the clients in windows. */
export async function runClients(binary: string, o: LoadOptions): Promise<LoadRun> {
  const kids = Array.from({ length: o.clients }, (_, i) => {
    const argv = [
      binary,
      String(o.port),
      o.rule,
      String(o.requests),
      String(i),
      o.workload,
      o.collect ? '1' : '0',
      String(o.inFlight),
    ];
    const [cmd, ...rest] = o.cpu === undefined ? argv : ['taskset', '-c', String(o.cpu), ...argv];
    const proc = spawn(cmd, rest, { stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    proc.stdout.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise<ClientResult>((resolve, reject) =>
      proc.once('close', (code) =>
        code === 0
          ? resolve(parseOutput(Buffer.concat(chunks).toString()))
          : reject(new Error(`UDP client ${i} exited with ${code}`)),
      ),
    );
    return { proc, done, running: true };
  });
  for (const k of kids) void k.done.finally(() => (k.running = false)).catch(() => undefined);
  const windows: { endedNs: bigint; server: number; demand: number; client: number }[] = [];
  const sample = () => {
    // The server's main thread: its tid is its pid.
    const { at, demand } = demandAt(o.serverPid, o.serverPid);
    return {
      at,
      server: cpuNs(o.serverPid),
      demand,
      client: kids.reduce((s, k) => s + cpuNs(k.proc.pid ?? 0), 0),
    };
  };
  let last = sample();
  let first = true;
  const timer = setInterval(() => {
    if (kids.some((k) => !k.running)) return;
    const now = sample();
    const wall = Number(now.at - last.at);
    // The first window holds the clients' start; a window a client did not live through is not full.
    if (!first && Number.isFinite(now.client))
      windows.push({
        endedNs: now.at,
        server: ((now.server - last.server) / wall) * 100,
        demand: ((now.demand - last.demand) / wall) * 100,
        client: ((now.client - last.client) / wall) * 100,
      });
    first = false;
    last = now;
  }, WINDOW_MS);
  try {
    const clients = await Promise.all(kids.map((k) => k.done));
    // A window that ended after a client had its last reply held fewer clients asking: the end
    // of a run, not the load it measures.
    const firstEnd = clients.reduce((end, c) => (c.endedNs < end ? c.endedNs : end), clients[0].endedNs);
    const full = windows.filter((w) => w.endedNs <= firstEnd);
    return {
      clients,
      serverPct: full.map((w) => w.server),
      demandPct: full.map((w) => w.demand),
      clientPct: full.map((w) => w.client),
    };
  } finally {
    clearInterval(timer);
  }
}
