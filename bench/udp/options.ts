// The command line of `npm run bench:udp` (bench/udp.ts): what it reads and its defaults.
import { readOptions } from '../../tools/args.js';
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

/** Reads argv (the arguments after the script's name). */
export function readUdpOptions(argv: readonly string[]): UdpOptions {
  const opts: UdpOptions = { requests: 200_000, clients: 8, rounds: 1, write: true, workload: 'idserver', pin: false, cpuProf: '' };
  readOptions(argv, 'npm run bench:udp -- [--requests N] [--clients N] [--rounds N] [--workload idserver|reuse] [--pin] [--cpu-prof DIR] [--no-write]', (a) => {
    switch (a.flag) {
      case '--workload': {
        const w = a.text();
        if (w !== 'idserver' && w !== 'reuse') throw new Error(`--workload is idserver or reuse, not ${w}`);
        opts.workload = w;
        break;
      }
      case '--pin':
        opts.pin = true;
        break;
      case '--cpu-prof':
        opts.cpuProf = a.text();
        break;
      case '--requests':
        opts.requests = a.whole(1);
        break;
      case '--clients':
        opts.clients = a.whole(1, 64);
        break;
      case '--rounds':
        opts.rounds = a.whole(1);
        break;
      case '--no-write':
        opts.write = false;
        break;
      default:
        return false;
    }
    return true;
  });
  return opts;
}
