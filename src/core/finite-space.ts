// Which tags have an ID space a flood could use up for every caller, so that the IDs one source
// takes of them are limited (rate-bucket.ts, SOURCE_MAX_FINITE_IDS_PER_SECOND): every rule tag
// (its counter restarts each period, but within one it ends at max_counter), and every segment
// tag whose space is smaller than a default one's: a permuted tag's domain (up to 15 digits or
// 52 bits) or a max_id_limit an operator lowered. A default segment tag (2^53−1 IDs) would take
// a flood of a million IDs a second 285 years; a snowflake tag runs out of time, not of IDs.
import { DEFAULTS } from './tag-spec.js';

/** What the decision reads of a tag. */
export interface SpaceShape {
  readonly mode: string;
  /** The largest ID (decimal, no leading zeros). */
  readonly maxIdLimit: string;
}

const DEFAULT_LIMIT: string = DEFAULTS.maxIdLimit;

/** The tag's IDs can run out under a flood: a rule tag, or a segment tag below the default limit. */
export function hasFiniteSpace(tag: SpaceShape): boolean {
  if (tag.mode === 'rule') return true;
  if (tag.mode !== 'segment') return false;
  const limit = tag.maxIdLimit;
  // Decimal strings without leading zeros compare by length, then digit by digit.
  return limit.length < DEFAULT_LIMIT.length || (limit.length === DEFAULT_LIMIT.length && limit < DEFAULT_LIMIT);
}
