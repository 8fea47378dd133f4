// Snowflake tags, beside their source (mode-sources.ts: snowflake) and generator
// (snowflake-generator.ts): IDs of time, worker id and sequence, decoded by the layout, one
// string each in a bulk take (any format), with no counter and no state of their own in Redis.
import { decode, runsOutAt } from '../../core/snowflake-layout.js';
import type { StoredOf } from '../../store/mysql/tags-repo.js';
import { idsChunks } from '../bulk-chunks.js';
import { checkNotRule } from '../id-options.js';
import type { TagKind } from '../tag-kinds.js';
import { idBelow63 } from './id-text.js';

export const SNOWFLAKE: TagKind<StoredOf<'snowflake'>> = {
  // Its IDs have no shard: a key is refused as for a plain segment tag.
  checkOptions: checkNotRule,
  keyedInput: () => ({}),
  notPlain: (tag) => `tag "${tag.tag}" is a snowflake tag; only plain segment tags are served here`,
  noRuns: (tag) => `tag "${tag.tag}" is a snowflake tag, not a segment tag`,
  decode(tag, idText) {
    const decoded = decode(tag.snowflake, idBelow63(idText));
    return {
      mode: 'snowflake',
      id: idText,
      timestamp: decoded.timestamp.toISOString(),
      time: decoded.time,
      worker_id: decoded.workerId,
      sequence: decoded.sequence,
    };
  },
  bulk: (_tag, _t, issue) => idsChunks(issue),
  keyedFormat() {},
  // No Redis server to show: its worker-id leases live on the default one.
  view: (tag) => ({ runs_out_at: runsOutAt(tag.snowflake).toISOString() }),
  shownId: (_tag, k) => String(k),
};
