// The command line of `npm run bench:idempotency` (bench/idempotency.ts): what it reads and its defaults.
import { readBenchOptions } from '../common-options.js';

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
  const usage =
    'npm run bench:idempotency -- [--duration S] [--warmup S] [--rounds N] [--connections N] [--pin] [--cpu-prof] [--no-write] [--before COMMIT]';
  readBenchOptions(
    argv,
    usage,
    { duration: [1], warmup: [0], rounds: [1], connections: [2], pin: true, write: true },
    o,
    (a) => {
      if (a.flag === '--cpu-prof') o.cpuProf = true;
      else if (a.flag === '--before') o.before = a.text();
      else return false;
      return true;
    },
  );
  return o;
}
