// The options the benchmarks share, read the same way by each: the whole numbers --rounds N, --connections N,
// --requests N, --seconds N, --concurrency N and --channels N, the numbers --duration S and --warmup S (each checked
// against the range its script gives it), the switches --pin (sets pin) and --no-write (clears write), and --env
// KEY=VALUE (repeatable, into env). A script names the ones it takes, with their ranges; every other option goes to the
// script's own reader, through tools/args.ts, so the usage, the errors and the unknown options are as readOptions has
// them.
import { readOptions, type Option } from '../tools/args.js';

/** A number option's range: from min, up to max when there is one. */
export type Range = readonly [min: number, max?: number];

/** The whole-number options, each with the field it sets. */
const WHOLE = {
  '--rounds': 'rounds',
  '--connections': 'connections',
  '--requests': 'requests',
  '--seconds': 'seconds',
  '--concurrency': 'concurrency',
  '--channels': 'channels',
} as const;
/** The options that take any number (in their range), each with the field it sets. */
const NUMBER = { '--duration': 'duration', '--warmup': 'warmup' } as const;

type NumberField = (typeof WHOLE)[keyof typeof WHOLE] | (typeof NUMBER)[keyof typeof NUMBER];

/** The shared options a script takes: a range per number option; pin for --pin, write for --no-write, env for --env. */
export type SharedOptions = { readonly [F in NumberField]?: Range } & {
  readonly pin?: true;
  readonly write?: true;
  readonly env?: true;
};

/** The fields the shared options of S set: a number per number option, a boolean per switch, env's settings. */
export type SharedValues<S extends SharedOptions> = {
  -readonly [F in keyof S]: F extends 'pin' | 'write' ? boolean : F extends 'env' ? Record<string, string> : number;
};

const fieldOf = (flag: string, table: Readonly<Record<string, NumberField>>): NumberField | undefined =>
  Object.hasOwn(table, flag) ? table[flag] : undefined;

/** Reads one option into o when it is one of the shared options of shared; answers whether it was. */
export function takeShared<S extends SharedOptions>(a: Option, shared: S, o: SharedValues<S>): boolean {
  const values = o as Record<string, number | boolean> & { env?: Record<string, string> };
  const ranges = shared as SharedOptions;
  if (a.flag === '--pin' && ranges.pin) values.pin = true;
  else if (a.flag === '--no-write' && ranges.write) values.write = false;
  else if (a.flag === '--env' && ranges.env && values.env) {
    const [k, v] = a.keyValue();
    values.env[k] = v;
  } else {
    const whole = fieldOf(a.flag, WHOLE);
    const field = whole ?? fieldOf(a.flag, NUMBER);
    const range = field && ranges[field];
    if (!field || !range) return false;
    values[field] = whole ? a.whole(...range) : a.number(...range);
  }
  return true;
}

/**
 * readOptions (tools/args.ts) with the shared options of shared read into o; take gets every
 * other option and answers false for one it does not know either.
 */
export function readBenchOptions<S extends SharedOptions>(
  argv: readonly string[],
  usage: string,
  shared: S,
  o: SharedValues<S>,
  take: (a: Option) => boolean = () => false,
): void {
  readOptions(argv, usage, (a) => takeShared(a, shared, o) || take(a));
}
