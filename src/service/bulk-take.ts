// Bulk takes, for consumers that want IDs by the hundred thousand (the websocket stream and
// gRPC Take; docs/STREAM.md): what such a take asks for, whether its format suits the tag, and
// where its IDs come from, a chunk at a time: segment tags as counter runs with their packing
// (one `runs` request of the ID service per chunk), snowflake tags as decimal strings, rule tags as rendered
// strings. Before anything is taken, the service checks that the tag exists and that the
// token and parameters fit it. Transports parse a take into a BulkTake and encode its chunks.
import { packing, type Packing } from '../core/layout.js';
import type { Range } from '../core/ranges.js';
import { IdmintError, invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import type { IdOptions, IdService } from './id-service.js';

export type BulkFormat = 'json' | 'binary' | 'ranges';
export const BULK_FORMATS: readonly BulkFormat[] = ['json', 'binary', 'ranges'];

/** Block size when a take names none. */
export const DEFAULT_BLOCK = 10_000;

/** The largest count and block a take may ask for (STREAM_MAX_COUNT, STREAM_MAX_BLOCK). */
export interface BulkLimits {
  readonly maxCount: number;
  readonly maxBlock: number;
}

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

export type Chunk =
  /** Segment tags: ascending counter runs and how they pack into IDs. */
  | { readonly kind: 'runs'; readonly runs: Range[]; readonly count: number; readonly packing: Packing }
  /** Snowflake tags: IDs as decimal strings, ascending. */
  | { readonly kind: 'decimals'; readonly ids: string[] }
  /** Rule tags: formatted IDs. */
  | { readonly kind: 'strings'; readonly ids: string[] };

export interface ChunkSource {
  /** Exactly n IDs, or a coded error. */
  next(n: number): Promise<Chunk>;
  /** Chunks are counter runs (a few numbers whatever their size), not one string per ID. */
  readonly compact: boolean;
  /** The whole take is one chunk (a keyed take: its answer is one request's). */
  readonly whole?: boolean;
}

/**
 * The chunks of one take of t.count IDs. Counter runs cost nothing per ID, so segment chunks
 * hold up to max(t.block, chunkIds) IDs (few store round trips); snowflake and rule chunks hold
 * a string per ID and stay one block. The next chunk is taken while the caller sends this one,
 * unless stopped() says the caller is gone (nothing more is taken then); a failed chunk throws
 * after the chunks before it were yielded.
 */
export async function* takeChunks(source: ChunkSource, t: BulkTake, chunkIds: number, stopped: () => boolean): AsyncGenerator<Chunk> {
  const size = source.whole ? t.count : source.compact ? Math.max(t.block, chunkIds) : t.block;
  let left = t.count;
  const take = (): Promise<Chunk> => {
    const n = Math.min(left, size);
    left -= n;
    const p = source.next(n);
    // Awaited in turn below; a failure is reported after the chunks before it.
    p.catch(() => undefined);
    return p;
  };
  let pending: Promise<Chunk> | undefined = take();
  while (pending !== undefined) {
    const chunk: Chunk = await pending;
    if (stopped()) return;
    pending = left > 0 ? take() : undefined;
    yield chunk;
  }
}

const ruleFormatOnly = (tag: string, format: string) =>
  invalid(`tag "${tag}" is a rule tag: its IDs are formatted strings, sent with format "json" only ("${format}" carries 64-bit integers)`);

const noRanges = (tag: string, why: string) =>
  invalid(`tag "${tag}" is ${why}: the IDs of consecutive counters are not consecutive integers, so format "ranges" cannot carry them; use "binary" or "json"`);

function checkSegment(tag: StoredTag, t: BulkTake): void {
  if (t.format !== 'ranges') return;
  if (tag.layout === 'sharded') throw noRanges(tag.tag, 'sharded');
  if (tag.stride !== 1) throw noRanges(tag.tag, `interleaved (stride ${tag.stride})`);
}

/** Where the chunks of a take come from: refused (a coded error) before anything is taken when the tag, token, options or format do not fit. */
export async function openBulkTake(ids: IdService, t: BulkTake): Promise<ChunkSource> {
  const opts = { tag: t.tag, key: t.key, app: t.app, salt: t.salt, token: t.token };
  if (t.idempotencyKey !== undefined) return keyedTake(ids, t, opts);
  const tag = await ids.prepare({ ...opts, as: 'ids', count: t.count });
  if (tag.mode === 'rule') {
    if (t.format !== 'json') throw ruleFormatOnly(tag.tag, t.format);
    return { compact: false, next: async (n) => ({ kind: 'strings', ids: await ids.issue({ ...opts, as: 'ids', count: n }) }) };
  }
  // Snowflake and permuted IDs are integers one string each (a permuted tag's counter runs are not its IDs).
  if (tag.mode === 'snowflake' || tag.permute) {
    if (tag.permute && t.format === 'ranges') throw noRanges(tag.tag, 'permuted');
    return { compact: false, next: async (n) => ({ kind: 'decimals', ids: await ids.issue({ ...opts, as: 'ids', count: n }) }) };
  }
  checkSegment(tag, t);
  return {
    compact: true,
    next: async (n) => {
      const issued = await ids.issue({ ...opts, as: 'runs', count: n });
      // The tag may have been re-created with another layout since the take began.
      checkSegment(issued.tag, t);
      return { kind: 'runs', runs: issued.runs, count: n, packing: packing(issued.tag, issued.shard) };
    },
  };
}

const DECIMAL = /^[0-9]+$/;

/**
 * A take with an idempotency key: one keyed list of IDs (the door checks the token, the options
 * and the key), sent in the take's format. A tag disabled since still answers a kept key, so
 * then the format is checked against the IDs themselves (formatted strings need "json").
 */
async function keyedTake(ids: IdService, t: BulkTake, opts: IdOptions & { tag: string }): Promise<ChunkSource> {
  let tag: StoredTag | undefined;
  try {
    tag = await ids.prepare({ ...opts, as: 'ids', count: t.count });
  } catch (err) {
    if (!(err instanceof IdmintError && err.code === 'TAG_DISABLED')) throw err;
  }
  if (tag?.mode === 'rule' && t.format !== 'json') throw ruleFormatOnly(tag.tag, t.format);
  if (tag?.permute && t.format === 'ranges') throw noRanges(tag.tag, 'permuted');
  if (tag?.mode === 'segment') checkSegment(tag, t);
  return {
    compact: false,
    whole: true,
    next: async (n) => {
      const got = await ids.issue({ ...opts, as: 'ids', count: n, idempotencyKey: t.idempotencyKey });
      if (tag?.mode === 'rule' || !got.every((id) => DECIMAL.test(id))) {
        if (t.format !== 'json') throw ruleFormatOnly(t.tag, t.format);
        return { kind: 'strings', ids: got };
      }
      return { kind: 'decimals', ids: got };
    },
  };
}
