// The cases of the scaling benchmark (`npm run bench:scale`) and its command line.
import { pick } from '../../tools/args.js';
import { readBenchOptions } from '../common-options.js';

export type CaseName = 'bare' | 'incr' | 'shared' | 'node' | 'global' | 'alt';
export const ALL_CASES: CaseName[] = ['bare', 'incr', 'shared', 'node', 'global'];
/** The cases a bare Fastify route serves (no idmint). */
export const BARE_CASES: readonly CaseName[] = ['bare', 'incr', 'shared'];
/** The cases whose answers are numbers a Redis counter handed out (checked above a value read before). */
export const COUNTED_CASES: readonly CaseName[] = ['incr', 'shared', 'global', 'alt'];
/** The cases of the order-global tag: on the idmint of the run, and (--alt-env) on one with other settings. */
export const GLOBAL_CASES: readonly CaseName[] = ['global', 'alt'];

/** The tags idmint serves: one per idmint case, and the one redis-benchmark takes from. */
export const TAGS = { node: 'scale.node', global: 'scale.global', redis: 'scale.redis' } as const;

export interface Options {
  duration: number;
  warmup: number;
  connections: number;
  processesList: number[];
  cases: CaseName[];
  redisRequests: number;
  maxOther: number;
  retries: number;
  waitQuiet: number;
  rounds: number;
  settle: number;
  /** Requests per second over all connections for every measured case (0: as fast as answered). */
  rate: number;
  /** Settings of the idmint serving the `alt` case (--alt-env K=V,...; empty: no such case). */
  altEnv: Record<string, string>;
  write: boolean;
  privateRedis: boolean;
  pin: boolean;
}

export function parseArgs(argv: string[]): Options {
  const o: Options = {
    duration: 5,
    warmup: 1,
    connections: 50,
    processesList: [1, 2, 4],
    cases: [...ALL_CASES],
    redisRequests: 300_000,
    maxOther: 15,
    retries: 2,
    waitQuiet: 0,
    rounds: 1,
    settle: 3,
    rate: 0,
    altEnv: {},
    write: true,
    privateRedis: false,
    pin: false,
  };
  const usage =
    'npm run bench:scale -- [--private-redis] [--pin] [--duration S] [--warmup S] [--connections N] [--processes-list 1,2,4] [--cases bare,incr,shared,node,global] [--redis-requests N] [--max-other PCT] [--retries N] [--wait-quiet S] [--rounds N] [--settle S] [--rate R] [--alt-env K=V,...] [--no-write]';
  const shared = {
    duration: [1, 120],
    warmup: [0, 60],
    connections: [1, 1000],
    rounds: [1, 20],
    write: true,
    pin: true,
  } as const;
  readBenchOptions(argv, usage, shared, o, (a) => {
    switch (a.flag) {
      case '--processes-list': {
        const list = a.list().map(Number);
        if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n < 1 || n > 16))
          throw new Error(`--processes-list needs whole numbers from 1 to 16, e.g. 1,2,4`);
        o.processesList = list;
        break;
      }
      case '--cases':
        o.cases = pick(a.flag, a.list(), ALL_CASES);
        break;
      case '--redis-requests':
        o.redisRequests = a.whole(0, 10_000_000);
        break;
      case '--max-other':
        o.maxOther = a.number(0);
        break;
      case '--retries':
        o.retries = a.whole(0, 10);
        break;
      case '--wait-quiet':
        o.waitQuiet = a.number(0, 600);
        break;
      case '--settle':
        o.settle = a.number(0, 120);
        break;
      case '--rate':
        o.rate = a.whole(0, 10_000_000);
        break;
      case '--alt-env':
        for (const kv of a.list()) {
          const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(kv);
          if (!m) throw new Error(`--alt-env needs NAME=value pairs, got "${kv}"`);
          o.altEnv[m[1]] = m[2];
        }
        break;
      case '--private-redis':
        o.privateRedis = true;
        break;
      default:
        return false;
    }
    return true;
  });
  if (Object.keys(o.altEnv).length > 0 && o.cases.includes('global')) o.cases.push('alt');
  return o;
}
