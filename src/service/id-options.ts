// What a request for IDs may carry besides the tag and the count, and the checks of them that
// the kinds of tag share: a rule's app and salt, and the shard a segment tag's key selects.
// Which of them a tag takes is its kind's to say (TagKind.checkOptions, tag-kinds.ts), in the
// same order whichever transport asks.
import { shardOf } from '../core/layout.js';
import { isValidAppName, isValidSalt } from '../core/rule-template.js';
import { invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';

export interface IdOptions {
  /** The key of a sharded segment tag (which shard the ID is for). */
  readonly key?: string;
  /** A rule's app name and salt. */
  readonly app?: string;
  readonly salt?: string;
  /** A client token; required by tags that have tokens. */
  readonly token?: string;
  /**
   * app and salt apply to rule tags only and are ignored for the others (id_server's clients
   * send an app name with every request); without it they are refused for other tags.
   */
  readonly appIfRule?: boolean;
}

export const NO_OPTIONS: IdOptions = Object.freeze({});

/** The most IDs one request may ask for (HTTP /v1/ids, gRPC Next); bulk takes have limits of their own. */
export const MAX_BATCH = 10000;

/**
 * The options carry app or salt that a tag of another kind than rule refuses (unless the caller says to ignore them:
 * appIfRule).
 */
export const strayRuleInput = (opts: IdOptions): boolean =>
  (opts.app !== undefined || opts.salt !== undefined) && opts.appIfRule !== true;

/** Refuses app and salt for a tag of another kind than rule (`mode` names it), then checks the key's shard. */
export function checkNotRule(tag: StoredTag, opts: IdOptions): void {
  if (strayRuleInput(opts)) throw invalid(`app and salt apply to rule tags; "${tag.tag}" is a ${tag.mode} tag`);
  shardFor(tag, opts.key);
}

/** A rule's app and salt, checked. */
export function ruleInput(tag: StoredTag, opts: IdOptions): { app: string; salt: string } {
  if (opts.key !== undefined) throw invalid(`key applies to sharded segment tags; "${tag.tag}" is a rule`);
  if (!isValidAppName(opts.app)) throw invalid(`rule "${tag.tag}" needs an app name (app=, [A-Za-z0-9_.-]{1,64})`);
  const salt = opts.salt ?? '';
  if (!isValidSalt(salt)) throw invalid('salt must match [A-Za-z0-9_.-]{0,64}');
  return { app: opts.app, salt };
}

/** The shard a request's key selects (0 for tags that are not sharded). */
export function shardFor(tag: StoredTag, key: string | undefined): number {
  if (tag.layout !== 'sharded' || tag.mode !== 'segment') {
    if (key !== undefined) throw invalid(`tag "${tag.tag}" is not sharded; drop the key parameter`);
    return 0;
  }
  if (key === undefined || key === '')
    throw invalid(`tag "${tag.tag}" is sharded: pass the key the ID is for (?key=...)`);
  return shardOf(key, tag.shards);
}
