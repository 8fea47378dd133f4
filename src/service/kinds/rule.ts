// Rule tags, beside their source (mode-sources.ts: rule) and their templates (rule-mode.ts):
// their IDs are formatted strings, so they are no counter runs, decode to nothing, and a bulk
// take carries them in format "json" only.
import type { StoredOf } from '../../store/mysql/tags-repo.js';
import { invalid } from '../../errors.js';
import { idsChunks, ruleFormatOnly, type BulkTake } from '../bulk-chunks.js';
import { ruleInput } from '../id-options.js';
import type { TagKind } from '../tag-kinds.js';

function jsonOnly(tag: StoredOf<'rule'>, spec: BulkTake): void {
  if (spec.format !== 'json') throw ruleFormatOnly(tag.tag, spec.format);
}

export const RULE: TagKind<StoredOf<'rule'>> = {
  checkOptions(tag, opts) {
    ruleInput(tag, opts);
  },
  // The same key with another app or salt is another request.
  keyedInput: (opts) => ({ app: opts.app, salt: opts.salt }),
  notPlain: (tag) => `tag "${tag.tag}" is a rule tag; only plain segment tags are served here`,
  noRuns: (tag) => `tag "${tag.tag}" is a rule tag, not a segment tag`,
  decode(tag) {
    // Rule IDs are rendered strings: a number has no seq, shard or time to decode back to.
    throw invalid(
      `tag "${tag.tag}" is a rule tag: its IDs are formatted strings, not packed integers, so there is nothing to decode`,
    );
  },
  bulk(tag, spec, issue) {
    jsonOnly(tag, spec);
    return idsChunks(issue);
  },
  keyedFormat: jsonOnly,
  view: (tag) => ({ redis: tag.redis }),
  // Counters of the rule's scopes, never rendered: an ID needs the app and the period too.
  shownId: (_tag, k) => String(k),
};
