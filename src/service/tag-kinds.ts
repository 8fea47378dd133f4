// What differs per kind of tag besides issuing (whose sources, one per kind, are in
// mode-sources.ts): which shapes of answer its IDs allow, decoding an ID, the chunks and formats
// of a bulk take, and the admin view. One table, indexed by the tag's own mode, whose entries
// live in kinds/<kind>.ts: the service asks the kind, and nothing above it branches on one.
import { specToJson } from '../core/tag-spec.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import type { BulkIssue, BulkTake, ChunkSource } from './bulk-chunks.js';
import type { IdOptions } from './id-options.js';
import { RULE } from './kinds/rule.js';
import { SEGMENT } from './kinds/segment.js';
import { SNOWFLAKE } from './kinds/snowflake.js';

/** The parts of a decoded ID, as GET /v1/decode/:tag/:id answers them (gRPC's Decode: under its mode). */
export type Decoded =
  | {
      mode: 'segment';
      id: string;
      seq: string;
      shard: number;
      app_id: number;
      stride: number;
      offset: number;
      counter: string;
    }
  | { mode: 'snowflake'; id: string; timestamp: string; time: number; worker_id: number; sequence: number };

/**
 * The behaviour of one kind of tag, for a definition of that kind. Methods, not function-valued
 * fields: the table hands each entry out as a TagKind of any stored tag, and an entry is only
 * ever called with a definition of its own mode (kindOf indexes the table by it).
 */
export interface TagKind<T extends StoredTag = StoredTag> {
  /** Refuses (INVALID_ARGUMENT) options the tag does not take: a rule's app and salt, a segment tag's key. */
  checkOptions(tag: T, opts: IdOptions): void;
  /** The options besides the key that a keyed request's fingerprint holds (a rule's app and salt). */
  keyedInput(opts: IdOptions): { readonly app?: string; readonly salt?: string };
  /** Why a protocol of plain segment IDs (Tinyid's) cannot carry the tag's IDs; undefined when it can. */
  notPlain(tag: T): string | undefined;
  /** Why the tag's IDs cannot be answered as counter runs or as a block a client holds; undefined when they can. */
  noRuns(tag: T, as: 'runs' | 'held'): string | undefined;
  /**
   * The parts of the ID written `idText` (1 to 19 digits); `staff`: the request carries the
   * admin or viewer token. Refused (coded) when the tag's IDs do not decode, or not for this caller.
   */
  decode(tag: T, idText: string, staff: boolean): Decoded;
  /**
   * Where a bulk take's chunks come from; refused (coded) before anything is taken when its format does not suit the
   * tag.
   */
  bulk(tag: T, spec: BulkTake, issue: BulkIssue): ChunkSource;
  /** Refuses (coded) a keyed take whose format cannot carry the tag's IDs. */
  keyedFormat(tag: T, spec: BulkTake): void;
  /** The admin view's fields besides the spec's (specToJson) and the row's. */
  view(tag: T): Record<string, unknown>;
  /**
   * How the admin view shows counter value `counter` of one of the tag's shards: its ID where that is a line of the
   * counter, else the counter value itself.
   */
  shownId(tag: T, counter: number): string;
}

const KINDS: { readonly [M in StoredTag['mode']]: TagKind<Extract<StoredTag, { mode: M }>> } = {
  segment: SEGMENT,
  rule: RULE,
  snowflake: SNOWFLAKE,
};

/** The behaviour of the tag's kind. */
export const kindOf = (tag: StoredTag): TagKind => KINDS[tag.mode];

/** The admin view of a definition: the spec's fields (specToJson), its kind's, and the row's. */
export function tagView(tag: StoredTag): Record<string, unknown> {
  return {
    ...specToJson(tag),
    ...kindOf(tag).view(tag),
    incarnation: tag.epoch,
    created_at: tag.createdAt,
    updated_at: tag.updatedAt,
  };
}

/** How the admin view shows counter value k of one of the tag's shards (TagKind.shownId). */
export const shownId = (t: StoredTag, k: number): string => kindOf(t).shownId(t, k);
