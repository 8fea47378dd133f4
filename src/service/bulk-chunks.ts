// What a bulk take is, and the chunks its IDs come in: counter runs with their packing (a few
// numbers whatever their count) or one string per ID. A chunk sends itself as blocks through
// the transport's sink, which writes each block in the take's format: no transport asks what
// kind of chunk, or of tag, it holds. Which chunks a tag's take is made of is its kind's
// (kinds/*.ts); the take itself is run by bulk-take.ts.
import { RangeQueue, type Range } from '../core/ranges.js';
import type { Packing } from '../core/layout.js';
import { invalid } from '../errors.js';
import type { Issued } from './segment-mode.js';

export type BulkFormat = 'json' | 'binary' | 'ranges';
export const BULK_FORMATS: readonly BulkFormat[] = ['json', 'binary', 'ranges'];

/** A validated bulk take. */
export interface BulkTake {
  readonly tag: string;
  readonly count: number;
  /** Most IDs per block. */
  readonly block: number;
  /** How the blocks carry IDs: the format decides which tags it suits. */
  readonly format: BulkFormat;
  /** Sharded segment tags. */
  readonly key?: string;
  /** Rule tags. */
  readonly app?: string;
  readonly salt?: string;
  /** A client token, for tags that have tokens. */
  readonly token?: string;
  /**
   * An idempotency key: the take's IDs are the answer kept for the key (at most 1000 IDs),
   * taken as one list and sent in the take's format.
   */
  readonly idempotencyKey?: string;
}

/**
 * Where a transport writes a chunk's blocks, each in the take's format; a block's answer is the
 * reason to stop (the socket gone, the call cancelled), or undefined to go on.
 */
export interface BlockSink<S> {
  /** `count` IDs as ascending counter runs and how they pack into IDs (a format's block is written from them). */
  runs(runs: Range[], count: number, packing: Packing): Promise<S | undefined>;
  /**
   * The IDs ids[start, end) as strings. Their take's format suits them (checked before the
   * take began): formatted IDs come with format "json" only.
   */
  ids(ids: readonly string[], start: number, end: number): Promise<S | undefined>;
}

/** IDs of one take, taken together from the store. */
export interface Chunk {
  /** Sends the chunk as blocks of at most `block` IDs; the sink's reason to stop, if any. */
  send<S>(block: number, sink: BlockSink<S>): Promise<S | undefined>;
}

/** Counter runs of a segment tag whose IDs are a line of its counter (not permuted). */
export class RunsChunk implements Chunk {
  constructor(
    readonly runs: Range[],
    readonly count: number,
    readonly packing: Packing,
  ) {}

  async send<S>(block: number, sink: BlockSink<S>): Promise<S | undefined> {
    const queue = new RangeQueue();
    for (const run of this.runs) queue.push(run);
    while (queue.size > 0) {
      const count = Math.min(block, queue.size);
      const stop = await sink.runs(queue.take(count), count, this.packing);
      if (stop !== undefined) return stop;
    }
    return undefined;
  }
}

/** IDs one string each: snowflake and permuted IDs (decimal integers), rule IDs (formatted). */
export class IdsChunk implements Chunk {
  constructor(readonly ids: string[]) {}

  async send<S>(block: number, sink: BlockSink<S>): Promise<S | undefined> {
    for (let start = 0; start < this.ids.length; start += block) {
      const stop = await sink.ids(this.ids, start, Math.min(this.ids.length, start + block));
      if (stop !== undefined) return stop;
    }
    return undefined;
  }
}

export interface ChunkSource {
  /** Exactly `count` IDs, or a coded error. */
  next(count: number): Promise<Chunk>;
  /** Chunks are counter runs (a few numbers whatever their size), not one string per ID. */
  readonly compact: boolean;
  /** The whole take is one chunk (a keyed take: its answer is one request's). */
  readonly whole?: boolean;
}

/** A take's requests of the door, for its kind to make its chunks of. */
export interface BulkIssue {
  /** `count` IDs as strings. */
  ids(count: number): Promise<string[]>;
  /** `count` IDs of a segment tag as counter runs, with the definition and shard they were taken under. */
  runs(count: number): Promise<Issued>;
}

/** Chunks of IDs one string each, one request of the door per chunk. */
export const idsChunks = (issue: BulkIssue): ChunkSource => ({
  compact: false,
  next: async (n) => new IdsChunk(await issue.ids(n)),
});

export const ruleFormatOnly = (tag: string, format: string) =>
  invalid(
    `tag "${tag}" is a rule tag: its IDs are formatted strings, sent with format "json" only ("${format}" carries 64-bit integers)`,
  );

export const noRanges = (tag: string, why: string) =>
  invalid(
    `tag "${tag}" is ${why}: the IDs of consecutive counters are not consecutive integers, so format "ranges" cannot carry them; use "binary" or "json"`,
  );
