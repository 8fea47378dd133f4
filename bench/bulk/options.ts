// bench:bulk-single's command line (bench/single-beside-bulk.ts lists its flags), and the name a
// run is recorded under: one serving process as it ships is `bulk-single`; several processes,
// the bulk consumer apart, node flags of the run's own or a bulk share other than the default
// each record under a name of their own, so their runs sit beside the default's and never
// replace its latest; a gRPC bulk consumer adds its own to the name (--consumer grpc: -grpc,
// --consumer grpc-ids: -grpc-ids).
import { DEFAULT_BULK_SHARE_PERCENT, loadConfig } from '../../src/config.js';
import { readBenchOptions } from '../common-options.js';

/** Requests due in the first second of a case are sent but not counted (connections warm up). */
export const WARMUP_S = 1;

export const CONSUMERS = ['ws', 'grpc', 'grpc-ids'] as const;
export type Consumer = (typeof CONSUMERS)[number];
/** The transport a consumer takes over: the websocket stream or gRPC Take. */
export type Transport = 'ws' | 'grpc';
export const transportOf = (consumer: Consumer): Transport => (consumer === 'ws' ? 'ws' : 'grpc');

export interface BulkSingleOptions {
  rate: number;
  seconds: number;
  connections: number;
  rounds: number;
  warmupRounds: number;
  take: number;
  block: number;
  pin: boolean;
  write: boolean;
  processes: number;
  apart: boolean;
  awake: boolean;
  /** Node flags idmint is started with beyond (or instead of) the ones it serves with (--node-flag). */
  nodeFlags: string[];
  /**
   * BULK_SHARE_PERCENT idmint is started with: --bulk-share, else the environment's, else the
   * default. Of each 5 ms window, what bulk takes may use while single requests are served.
   */
  bulkShare: number;
  /**
   * The bulk consumer (--consumer): the websocket stream's binary takes, gRPC Take's runs of
   * consecutive IDs (TakeBlock.ranges), or gRPC Take's decimal string per ID (TakeBlock.ids).
   */
  consumer: Consumer;
  /** The benchmark's name in bench/results. */
  bench: string;
}

const USAGE =
  'npm run bench:bulk-single -- [--rate N] [--seconds N] [--connections N] [--rounds N] [--warmup-rounds N] [--take N] [--block N] [--pin] [--processes N] [--bulk-apart] [--let-idle] [--node-flag=FLAG] [--bulk-share N] [--consumer ws|grpc|grpc-ids] [--no-write]';

/** The options of a run from its arguments and environment (BULK_SHARE_PERCENT); throws on a bad or clashing one. */
export function readBulkSingleOptions(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): BulkSingleOptions {
  const opts = {
    rate: 2000,
    seconds: 10,
    connections: 8,
    rounds: 3,
    warmupRounds: 2,
    take: 10_000_000,
    block: 50_000,
    pin: false,
    write: true,
    processes: 1,
    apart: false,
    awake: true,
    nodeFlags: [] as string[],
    consumer: 'ws' as Consumer,
  };
  let shareFlag: number | undefined;
  readBenchOptions(
    args,
    USAGE,
    { seconds: [WARMUP_S + 1, 600], connections: [1, 256], rounds: [1], pin: true, write: true },
    opts,
    (a) => {
      switch (a.flag) {
        case '--rate':
          opts.rate = a.whole(1, 100_000);
          break;
        case '--take':
          opts.take = a.whole(1);
          break;
        case '--block':
          opts.block = a.whole(1);
          break;
        case '--processes':
          opts.processes = a.whole(1, 16);
          break;
        case '--bulk-apart':
          opts.apart = true;
          break;
        case '--let-idle':
          opts.awake = false;
          break;
        case '--bulk-share':
          shareFlag = a.whole(1, 100);
          break;
        case '--consumer': {
          const given = a.text();
          const consumer = CONSUMERS.find((c) => c === given);
          if (consumer === undefined) throw new Error(`--consumer takes one of ${CONSUMERS.join(', ')}: ${given}`);
          opts.consumer = consumer;
          break;
        }
        case '--warmup-rounds':
          opts.warmupRounds = a.whole(0, 10);
          break;
        case '--node-flag': {
          const flag = a.text();
          if (!flag.startsWith('--'))
            throw new Error(`--node-flag takes a node flag (--node-flag=--no-single-threaded-gc): ${flag}`);
          opts.nodeFlags.push(flag);
          break;
        }
        default:
          return false;
      }
      return true;
    },
  );
  if (opts.apart && opts.processes > 1)
    throw new Error('--bulk-apart serves the bulk consumer from a process of its own: give it without --processes');
  // The environment's share read as idmint reads it (an empty one is the default).
  const bulkShare = shareFlag ?? loadConfig({ BULK_SHARE_PERCENT: env.BULK_SHARE_PERCENT }).bulkSharePercent;
  const ownShare = bulkShare !== DEFAULT_BULK_SHARE_PERCENT;
  if (ownShare && (opts.apart || opts.processes > 1 || opts.nodeFlags.length > 0))
    throw new Error(
      'a bulk share of its own (--bulk-share, BULK_SHARE_PERCENT) is measured with one serving process: give it without --bulk-apart, --processes or --node-flag',
    );
  const name = opts.apart
    ? 'bulk-single-apart'
    : opts.processes > 1
      ? `bulk-single-p${opts.processes}`
      : opts.nodeFlags.length > 0
        ? 'bulk-single-node-flags'
        : ownShare
          ? `bulk-single-share${bulkShare}`
          : 'bulk-single';
  // A gRPC consumer's runs sit beside the websocket consumer's of the same setup.
  const bench = opts.consumer === 'ws' ? name : `${name}-${opts.consumer}`;
  return { ...opts, bulkShare, bench };
}
