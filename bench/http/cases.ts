// The cases of the HTTP benchmark (`npm run bench`) and its command line.
import { pick } from '../../tools/args.js';
import { readBenchOptions } from '../common-options.js';

export type CaseName = 'baseline' | 'node' | 'global' | 'snowflake' | 'rule' | 'rule-global';
export const ALL_CASES: CaseName[] = ['baseline', 'node', 'global', 'snowflake', 'rule', 'rule-global'];

export interface IdCase {
  /** The tag the case creates and measures. */
  readonly tag: string;
  /** Appended to the measured path, e.g. "?app=bench". */
  readonly query: string;
  /** The rest of the tag's definition (POST /v1/admin/tags). */
  readonly create: Record<string, unknown>;
  /** Rule IDs: the shape every ID must have (they are strings, checked for being distinct). */
  readonly pattern?: RegExp;
}

/** The idmint cases: the tag each one creates and the request it measures. */
export const ID_CASES: Record<Exclude<CaseName, 'baseline'>, IdCase> = {
  node: { tag: 'bench.node', query: '', create: { mode: 'segment', order: 'node' } },
  global: { tag: 'bench.global', query: '', create: { mode: 'segment', order: 'global' } },
  snowflake: { tag: 'bench.sf', query: '', create: { mode: 'snowflake' } },
  // Rule IDs are strings: checked against their pattern and for being distinct.
  rule: {
    tag: 'bench.rule',
    query: '?app=bench',
    create: {
      mode: 'rule',
      order: 'node',
      template: 'B{yyyy}{MM}{dd}{counter:9}',
      min_counter: 1,
      max_counter: 999_999_999,
      reset_seconds: 86400,
    },
    pattern: /^B\d{17}$/,
  },
  // The same with order "global": every ID from a coalesced Redis take of the app's counter.
  'rule-global': {
    tag: 'bench.ruleg',
    query: '?app=bench',
    create: {
      mode: 'rule',
      order: 'global',
      template: 'G{yyyy}{MM}{dd}{counter:9}',
      min_counter: 1,
      max_counter: 999_999_999,
      reset_seconds: 86400,
    },
    pattern: /^G\d{17}$/,
  },
};

export interface Options {
  duration: number;
  warmup: number;
  connections: number;
  rounds: number;
  cases: CaseName[];
  env: Record<string, string>;
  cpuProf: boolean;
  /** Pin the server under test to CPU 1 and the load generator to CPU 0 (taskset). */
  pin: boolean;
  write: boolean;
  /**
   * Instead of the cases: one sequential client, order global against the INCR and take routes (http/one-client.ts).
   */
  oneClient: boolean;
}

export function parseArgs(argv: string[]): Options {
  const o: Options = {
    duration: 10,
    warmup: 2,
    connections: 50,
    rounds: 1,
    cases: [...ALL_CASES],
    env: {},
    cpuProf: false,
    write: true,
    pin: false,
    oneClient: false,
  };
  const usage =
    'npm run bench -- [--duration S] [--warmup S] [--connections N] [--rounds N] [--cases baseline,node,global,snowflake,rule,rule-global] [--env KEY=VALUE] [--cpu-prof] [--no-write] [--pin] [--one-client]';
  readBenchOptions(
    argv,
    usage,
    { duration: [1], warmup: [0], connections: [1], rounds: [1], env: true, write: true, pin: true },
    o,
    (a) => {
      switch (a.flag) {
        case '--cases':
          o.cases = pick(a.flag, a.list(), ALL_CASES);
          break;
        case '--cpu-prof':
          o.cpuProf = true;
          break;
        case '--one-client':
          o.oneClient = true;
          break;
        default:
          return false;
      }
      return true;
    },
  );
  return o;
}
