// Segment tags, beside their sources (mode-sources.ts: segmentGlobal, segmentNode): what their
// IDs allow (counter runs and held blocks, unless permuted; Tinyid's plain IDs when plain),
// decoding an ID back to its shard and counter, the chunks of a bulk take (counter runs, or
// one string per ID when permuted), and the admin view. A permuted tag is a segment tag with
// its permutation as an option: only the step from counter to ID differs (core/layout.ts), and
// with it what a caller may learn from, or be handed as, a run of counters.
import { counterLimit, packing, seqString, unpackId } from '../../core/layout.js';
import { domainMax } from '../../core/permute.js';
import { IdmintError, invalid } from '../../errors.js';
import type { StoredOf, StoredTag } from '../../store/mysql/tags-repo.js';
import { idsChunks, noRanges, RunsChunk, type BulkTake } from '../bulk-chunks.js';
import { checkNotRule } from '../id-options.js';
import type { TagKind } from '../tag-kinds.js';
import { idBelow63 } from './id-text.js';

/** What a permuted tag's order promises: the counter's, not the numbers'. */
const PERMUTED_ORDER =
  'IDs are a keyed permutation of the counter: unique, and issued in counter order, but their numeric values follow no order (GET /v1/decode/:tag/:id gives the counter of an ID)';

/** Format "ranges" carries runs of consecutive integers: the IDs of consecutive counters must be those. */
function checkRanges(tag: StoredTag, spec: BulkTake): void {
  if (spec.format !== 'ranges') return;
  if (tag.permute) throw noRanges(tag.tag, 'permuted');
  if (tag.layout === 'sharded') throw noRanges(tag.tag, 'sharded');
  if (tag.stride !== 1) throw noRanges(tag.tag, `interleaved (stride ${tag.stride})`);
}

export const SEGMENT: TagKind<StoredOf<'segment'>> = {
  checkOptions: checkNotRule,
  keyedInput: () => ({}),

  notPlain(tag) {
    return tag.layout === 'plain'
      ? undefined
      : `tag "${tag.tag}" is sharded (its IDs need a key); only plain segment tags are served here`;
  },

  noRuns(tag, as) {
    // Consecutive counters of a permuted tag are not consecutive IDs: only its IDs are handed out.
    if (!tag.permute) return undefined;
    return as === 'held'
      ? `tag "${tag.tag}" has permuted IDs, which a client cannot count on from a block it holds; blocks are served for unpermuted tags`
      : `tag "${tag.tag}" has permuted IDs: ask for its IDs, not counter runs`;
  },

  decode(tag, idText, staff) {
    // The counter of a permuted tag's ID is what its permutation hides.
    if (tag.permute && !staff) {
      throw new IdmintError(
        'UNAUTHORIZED',
        `the IDs of tag "${tag.tag}" are permuted: decoding one tells its counter, so it needs the admin or viewer token (Authorization: Bearer)`,
      );
    }
    const id = idBelow63(idText);
    const parts = unpackId(tag, id);
    if (tag.permute) {
      // Any value of the domain is some counter's ID; one whose counter lies above the tag's
      // limit was never one of this tag's.
      if (parts.counter === undefined)
        throw invalid(
          `${idText} is not an ID of tag "${tag.tag}" (its permuted IDs lie from 1 to ${domainMax(tag.permute)})`,
        );
      if (parts.counter > BigInt(counterLimit(tag, BigInt(tag.maxIdLimit))))
        throw invalid(
          `${idText} is not an ID of tag "${tag.tag}" (it maps to counter ${parts.counter}, above the tag's max_id_limit ${tag.maxIdLimit})`,
        );
    }
    if (tag.layout === 'sharded' && (parts.appId !== tag.appId || parts.shard >= tag.shards)) {
      throw invalid(`${idText} is not an ID of tag "${tag.tag}" (app_id ${parts.appId}, shard ${parts.shard})`);
    }
    if (parts.counter === undefined) {
      throw invalid(
        `${idText} is not an ID of tag "${tag.tag}" (its sequence value ${parts.seq} is not ${tag.offset} mod ${tag.stride})`,
      );
    }
    return {
      mode: 'segment',
      id: idText,
      seq: parts.seq.toString(),
      shard: parts.shard,
      app_id: parts.appId,
      stride: tag.stride,
      offset: tag.offset,
      counter: parts.counter.toString(),
    };
  },

  bulk(tag, spec, issue) {
    checkRanges(tag, spec);
    // Permuted IDs are integers one string each (a permuted tag's counter runs are not its IDs).
    if (tag.permute) return idsChunks(issue);
    return {
      compact: true,
      next: async (count) => {
        const issued = await issue.runs(count);
        // The tag may have been re-created with another layout since the take began.
        checkRanges(issued.tag, spec);
        return new RunsChunk(issued.runs, count, packing(issued.tag, issued.shard));
      },
    };
  },

  keyedFormat: checkRanges,

  view(tag) {
    // specToJson shows a permuted tag's setting, never its key.
    return { ...(tag.permute ? { id_order: PERMUTED_ORDER } : {}), redis: tag.redis };
  },

  // A plain tag shows IDs (with stride: counter * stride + offset); sharded and permuted tags
  // show their counters, as allocated_max always does.
  shownId: (tag, k) => (tag.layout === 'plain' && !tag.permute ? seqString(tag, k) : String(k)),
};
