// The command line of `npm run bench:idempotency` (bench/idempotency.ts): what it reads and its defaults.
import { readOptions } from '../../tools/args.js';

export interface Options {
  /** Seconds per case and round. */
  duration: number;
  /** Seconds of the uncounted warm-up, per case. */
  warmup: number;
  rounds: number;
  /** The clients of the throughput cases. */
  connections: number;
  /** idmint and the bare routes on CPU 1, this process on CPU 0. */
  pin: boolean;
  /** idmint writes its .cpuprofile to bench/results/profiles/. */
  cpuProf: boolean;
  write: boolean;
  /** Also idmint at this commit, for the unkeyed request before keys. */
  before?: string;
}

/** Reads argv (the arguments after the script's name). */
export function readIdempotencyOptions(argv: string[]): Options {
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
