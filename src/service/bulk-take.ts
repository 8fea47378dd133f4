// Bulk takes, for consumers that want IDs by the hundred thousand (the websocket stream and
// gRPC Take; docs/STREAM.md): a take is opened once (the door's checks), then its IDs come a
// chunk at a time, one request of the ID service per chunk, in the chunks the tag's kind
// decides (kinds/*.ts: a segment tag's counter runs with their packing, one string per ID
// otherwise) and the formats it allows. Transports parse a take into a BulkTake and hand each
// chunk a sink that writes its blocks (bulk-chunks.ts).
import { IdmintError } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import {
  IdsChunk,
  ruleFormatOnly,
  type BulkIssue,
  type BulkTake,
  type Chunk,
  type ChunkSource,
} from './bulk-chunks.js';
import type { IdOptions, IdService } from './id-service.js';
import { kindOf } from './tag-kinds.js';

export {
  BULK_FORMATS,
  type BlockSink,
  type BulkFormat,
  type BulkTake,
  type Chunk,
  type ChunkSource,
} from './bulk-chunks.js';

/** Block size when a take names none. */
export const DEFAULT_BLOCK = 10_000;

/** The largest count and block a take may ask for (STREAM_MAX_COUNT, STREAM_MAX_BLOCK). */
export interface BulkLimits {
  readonly maxCount: number;
  readonly maxBlock: number;
}

/**
 * The chunks of one take of spec.count IDs. Counter runs cost nothing per ID, so segment chunks
 * hold up to max(spec.block, chunkIds) IDs (few store round trips); snowflake and rule chunks hold
 * a string per ID and stay one block. The next chunk is taken while the caller sends this one,
 * unless stopped() says the caller is gone (nothing more is taken then); a failed chunk throws
 * after the chunks before it were yielded. Each chunk's request is made inside `timed`, so that
 * a caller can count the work of sending it to the store (the command written to its socket) as
 * the take's.
 */
export async function* takeChunks(
  source: ChunkSource,
  spec: BulkTake,
  chunkIds: number,
  stopped: () => boolean,
  timed: <T>(work: () => T) => T = (work) => work(),
): AsyncGenerator<Chunk> {
  const size = source.whole ? spec.count : source.compact ? Math.max(spec.block, chunkIds) : spec.block;
  let left = spec.count;
  const take = (): Promise<Chunk> => {
    const count = Math.min(left, size);
    left -= count;
    const nextChunk = timed(() => source.next(count));
    // Awaited in turn below; a failure is reported after the chunks before it.
    nextChunk.catch(() => undefined);
    return nextChunk;
  };
  let pending: Promise<Chunk> | undefined = take();
  while (pending !== undefined) {
    const chunk: Chunk = await pending;
    if (stopped()) return;
    pending = left > 0 ? take() : undefined;
    yield chunk;
  }
}

/**
 * Where the chunks of a take come from: refused (a coded error) before anything is taken when the tag, token, options
 * or format do not fit.
 */
export async function openBulkTake(ids: IdService, spec: BulkTake): Promise<ChunkSource> {
  const opts = { tag: spec.tag, key: spec.key, app: spec.app, salt: spec.salt, token: spec.token };
  if (spec.idempotencyKey !== undefined) return keyedTake(ids, spec, opts);
  const tag = await ids.prepare({ ...opts, as: 'ids', count: spec.count });
  const issue: BulkIssue = {
    ids: async (n) => ids.issue({ ...opts, as: 'ids', count: n, bulk: true }),
    runs: (n) => ids.issue({ ...opts, as: 'runs', count: n }),
  };
  // The kind decides the chunks and the formats that carry them (kinds/*.ts).
  return kindOf(tag).bulk(tag, spec, issue);
}

const DECIMAL = /^[0-9]+$/;

/**
 * A take with an idempotency key: one keyed list of IDs (the door checks the token, the options
 * and the key), sent in the take's format. A tag disabled since still answers a kept key, so
 * then the format is checked against the IDs themselves (formatted strings need "json").
 */
async function keyedTake(ids: IdService, spec: BulkTake, opts: IdOptions & { tag: string }): Promise<ChunkSource> {
  let tag: StoredTag | undefined;
  try {
    tag = await ids.prepare({ ...opts, as: 'ids', count: spec.count });
  } catch (err) {
    if (!(err instanceof IdmintError && err.code === 'TAG_DISABLED')) throw err;
  }
  if (tag !== undefined) kindOf(tag).keyedFormat(tag, spec);
  return {
    compact: false,
    whole: true,
    next: async (count) => {
      const got = await ids.issue({ ...opts, as: 'ids', count, bulk: true, idempotencyKey: spec.idempotencyKey });
      // Formatted IDs (a rule's, of a tag disabled since) go in format "json" only.
      if (spec.format !== 'json' && !got.every((id) => DECIMAL.test(id))) throw ruleFormatOnly(spec.tag, spec.format);
      return new IdsChunk(got);
    },
  };
}
