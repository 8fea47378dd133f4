// The command line of `npm run bench:udp` (bench/udp.ts): what it reads and its defaults.
import { readBenchOptions } from '../common-options.js';
import type { Workload } from './c-client.js';

export interface UdpOptions {
  /** Sequential requests per client and case. */
  requests: number;
  clients: number;
  /** Requests each client keeps outstanding, each on a socket of its own (idserver workload). */
  inFlight: number;
  rounds: number;
  /** Rounds of every case run before the measured ones, printed and left out of the medians. */
  warmupRounds: number;
  write: boolean;
  workload: Workload;
  /** taskset: the servers on CPU 1, the clients on CPU 0. */
  pin: boolean;
  /** Where idmint and each baseline server write their .cpuprofile ('' for none). */
  cpuProf: string;
  /**
   * The CPU the run's own redis-server is pinned to (taskset), or 'any' (not pinned: the
   * scheduler moves it between the CPUs). 1 by default with --pin, beside the servers.
   */
  redisCpu: RedisCpu;
}

export type RedisCpu = 0 | 1 | 'any';

function redisCpuOf(c: string): RedisCpu {
  if (c === '0' || c === '1') return Number(c) as 0 | 1;
  if (c === 'any') return c;
  throw new Error(`--redis-cpu is 0, 1 or any, not ${c}`);
}

function workloadOf(w: string): Workload {
  if (w !== 'idserver' && w !== 'reuse') throw new Error(`--workload is idserver or reuse, not ${w}`);
  return w;
}

/**
 * Requests each client process keeps outstanding by default: with one each, 16 or 32 processes
 * on one core kept an echo server answering 60k requests a second waiting in every window (their
 * wake-ups cost as much as the server's answers); with four or eight, in some windows; with
 * twelve it ran at 97% or more of its core. With sixteen, 256 datagrams at once overflowed the
 * server's socket buffer (the kernel's default): requests were lost and the run failed.
 */
export const DEFAULT_IN_FLIGHT = 12;

/** Reads argv (the arguments after the script's name). */
export function readUdpOptions(argv: readonly string[]): UdpOptions {
  const opts: UdpOptions = {
    requests: 200_000,
    clients: 16,
    inFlight: 0,
    rounds: 1,
    warmupRounds: 1,
    write: true,
    workload: 'idserver',
    pin: false,
    cpuProf: '',
    redisCpu: 'any',
  };
  let redisCpu: RedisCpu | undefined;
  const usage =
    'npm run bench:udp -- [--requests N] [--clients N] [--in-flight N] [--rounds N] [--warmup-rounds N] [--workload idserver|reuse] [--pin] [--redis-cpu 0|1|any] [--cpu-prof DIR] [--no-write]';
  readBenchOptions(argv, usage, { requests: [1], rounds: [1], pin: true, write: true }, opts, (a) => {
    if (a.flag === '--workload') opts.workload = workloadOf(a.text());
    else if (a.flag === '--cpu-prof') opts.cpuProf = a.text();
    else if (a.flag === '--clients') opts.clients = a.whole(1, 64);
    else if (a.flag === '--warmup-rounds') opts.warmupRounds = a.whole(0, 10);
    else if (a.flag === '--in-flight') opts.inFlight = a.whole(1, 256);
    else if (a.flag === '--redis-cpu') redisCpu = redisCpuOf(a.text());
    else return false;
    return true;
  });
  // One client is the one-request-at-a-time case; several keep DEFAULT_IN_FLIGHT each outstanding.
  if (opts.inFlight === 0) opts.inFlight = opts.clients === 1 || opts.workload !== 'idserver' ? 1 : DEFAULT_IN_FLIGHT;
  if (opts.inFlight > 1 && opts.workload !== 'idserver')
    throw new Error('--in-flight applies to the idserver workload (a socket per request) only');
  if (opts.inFlight > 1 && opts.clients === 1)
    throw new Error('--clients 1 is the case of one request at a time: --in-flight 1');
  if (redisCpu !== undefined && redisCpu !== 'any' && !opts.pin)
    throw new Error('--redis-cpu 0 or 1 pins Redis beside the pinned processes: it needs --pin');
  opts.redisCpu = redisCpu ?? (opts.pin ? 1 : 'any');
  return opts;
}
