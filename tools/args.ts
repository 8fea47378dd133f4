// The command-line options of the benchmarks and the soak: `--name value` or `--name=value`;
// numbers are checked against their range; -h or --help prints the usage and exits; an unknown
// option or a missing or malformed value is an error that names the option and shows the usage.

export interface Option {
  /** The option as written, without its `=value`. */
  readonly flag: string;
  /** The option's value: what follows `=`, or the next argument. */
  text(): string;
  /** The value as a number from min to max. */
  number(min: number, max?: number): number;
  /** The value as a whole number from min to max. */
  whole(min: number, max?: number): number;
  /** The value as a comma-separated list (blank items dropped). */
  list(): string[];
  /** The value as KEY=VALUE (a key of at least one character). */
  keyValue(): [string, string];
}

/**
 * Calls take for each option in argv; take answers false for an option it does not know.
 * usage: the command and its options, e.g. `npm run bench -- [--rounds N]`.
 */
export function readOptions(argv: readonly string[], usage: string, take: (o: Option) => boolean): void {
  const fail = (message: string): never => {
    throw new Error(`${message}\nusage: ${usage}`);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      console.log(`usage: ${usage}`);
      process.exit(0);
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    let inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const text = (): string => {
      const v = inline ?? argv[++i];
      inline = undefined;
      return v === undefined ? fail(`${flag} needs a value`) : v;
    };
    const number = (min: number, max = Number.POSITIVE_INFINITY): number => {
      const v = text();
      const n = Number(v);
      if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
        fail(
          `${flag} needs a number ${max < Number.POSITIVE_INFINITY ? `from ${min} to ${max}` : `>= ${min}`}, got "${v}"`,
        );
      }
      return n;
    };
    const whole = (min: number, max = Number.POSITIVE_INFINITY): number => {
      const n = number(min, max);
      return Number.isSafeInteger(n) ? n : fail(`${flag} needs a whole number, got ${n}`);
    };
    const list = (): string[] =>
      text()
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    const keyValue = (): [string, string] => {
      const kv = text();
      const at = kv.indexOf('=');
      return at > 0 ? [kv.slice(0, at), kv.slice(at + 1)] : fail(`${flag} needs KEY=VALUE, got "${kv}"`);
    };
    if (!take({ flag, text, number, whole, list, keyValue })) fail(`unknown option ${arg}`);
  }
}

/** The names in list, each checked to be one of all, in the order of all. */
export function pick<T extends string>(flag: string, list: readonly string[], all: readonly T[]): T[] {
  for (const c of list)
    if (!all.includes(c as T)) throw new Error(`${flag}: unknown case "${c}" (cases: ${all.join(', ')})`);
  return all.filter((c) => list.includes(c));
}
