// The command line of `npm run bench:udp` (bench/udp.ts): what it reads and its defaults.
import { readBenchOptions } from '../common-options.js';
import type { Workload } from './c-client.js';

export interface UdpOptions {
  /** Sequential requests per client and case. */
  requests: number;
  clients: number;
  rounds: number;
  write: boolean;
  workload: Workload;
  /** taskset: the servers on CPU 1, the clients on CPU 0. */
  pin: boolean;
  /** Where idmint and each baseline server write their .cpuprofile ('' for none). */
  cpuProf: string;
}

function workloadOf(w: string): Workload {
  if (w !== 'idserver' && w !== 'reuse') throw new Error(`--workload is idserver or reuse, not ${w}`);
  return w;
}

/** Reads argv (the arguments after the script's name). */
export function readUdpOptions(argv: readonly string[]): UdpOptions {
  const opts: UdpOptions = {
    requests: 200_000,
    clients: 16,
    rounds: 1,
    write: true,
    workload: 'idserver',
    pin: false,
    cpuProf: '',
  };
  const usage =
    'npm run bench:udp -- [--requests N] [--clients N] [--rounds N] [--workload idserver|reuse] [--pin] [--cpu-prof DIR] [--no-write]';
  readBenchOptions(argv, usage, { requests: [1], rounds: [1], pin: true, write: true }, opts, (a) => {
    if (a.flag === '--workload') opts.workload = workloadOf(a.text());
    else if (a.flag === '--cpu-prof') opts.cpuProf = a.text();
    else if (a.flag === '--clients') opts.clients = a.whole(1, 64);
    else return false;
    return true;
  });
  return opts;
}
