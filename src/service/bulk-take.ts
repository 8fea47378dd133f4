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
 * The chunks of one take of t.count IDs. Counter runs cost nothing per ID, so segment chunks
 * hold up to max(t.block, chunkIds) IDs (few store round trips); snowflake and rule chunks hold
 * a string per ID and stay one block. The next chunk is taken while the caller sends this one,
 * unless stopped() says the caller is gone (nothing more is taken then); a failed chunk throws
 * after the chunks before it were yielded.
 */
export async function* takeChunks(
  source: ChunkSource,
  t: BulkTake,
  chunkIds: number,
  stopped: () => boolean,
): AsyncGenerator<Chunk> {
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

/**
 * Where the chunks of a take come from: refused (a coded error) before anything is taken when the tag, token, options
 * or format do not fit.
 */
export async function openBulkTake(ids: IdService, t: BulkTake): Promise<ChunkSource> {
  const opts = { tag: t.tag, key: t.key, app: t.app, salt: t.salt, token: t.token };
  if (t.idempotencyKey !== undefined) return keyedTake(ids, t, opts);
  const tag = await ids.prepare({ ...opts, as: 'ids', count: t.count });
  const issue: BulkIssue = {
    ids: async (n) => ids.issue({ ...opts, as: 'ids', count: n }),
    runs: (n) => ids.issue({ ...opts, as: 'runs', count: n }),
  };
  // The kind decides the chunks and the formats that carry them (kinds/*.ts).
  return kindOf(tag).bulk(tag, t, issue);
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
  if (tag !== undefined) kindOf(tag).keyedFormat(tag, t);
  return {
    compact: false,
    whole: true,
    next: async (n) => {
      const got = await ids.issue({ ...opts, as: 'ids', count: n, idempotencyKey: t.idempotencyKey });
      // Formatted IDs (a rule's, of a tag disabled since) go in format "json" only.
      if (t.format !== 'json' && !got.every((id) => DECIMAL.test(id))) throw ruleFormatOnly(t.tag, t.format);
      return new IdsChunk(got);
    },
  };
}
