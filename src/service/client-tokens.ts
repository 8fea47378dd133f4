// Per-tag client tokens at serving time: a tag with tokens serves only requests that carry one
// of them (compared by hash, src/token-hash.ts); a tag without tokens is open.
//
// Exposure: by default a request without a valid token learns nothing about a protected tag,
// not even that it exists. It gets the answer of a tag that does not exist (TAG_NOT_FOUND, one
// message for both), whatever the transport. REVEAL_PROTECTED_TAGS turns that off: a missing
// tag is TAG_NOT_FOUND and a protected one UNAUTHORIZED, each with its own message.
import { IdmintError } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { hashToken } from '../token-hash.js';

/** The token opens the tag: the tag has no tokens, or the token is one of them. */
export function opens(tag: StoredTag, token: string | undefined): boolean {
  if (!tag.tokenHashes || tag.tokenHashes.size === 0) return true;
  return token !== undefined && token !== '' && tag.tokenHashes.has(hashToken(token));
}

/** Throws UNAUTHORIZED, saying why, unless the token opens the tag. */
export function authorize(tag: StoredTag, token: string | undefined): void {
  if (opens(tag, token)) return;
  if (token === undefined || token === '')
    throw new IdmintError('UNAUTHORIZED', `tag "${tag.tag}" needs a client token`);
  throw new IdmintError('UNAUTHORIZED', `the client token is not valid for tag "${tag.tag}"`);
}

/** The one answer to a missing tag and to a protected tag without a valid token. */
const unseen = (name: string) =>
  new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist, or the request carries no valid client token for it`);

/**
 * The tag `name` resolved to (undefined: none), if the token may use it; else the refusal the
 * exposure policy gives: the same TAG_NOT_FOUND for a missing tag and a protected one unless
 * `reveal` (REVEAL_PROTECTED_TAGS), then TAG_NOT_FOUND or UNAUTHORIZED.
 */
export function admit(name: string, tag: StoredTag | undefined, token: string | undefined, reveal: boolean): StoredTag {
  if (!reveal) {
    if (tag === undefined || !opens(tag, token)) throw unseen(name);
    return tag;
  }
  if (tag === undefined) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
  authorize(tag, token);
  return tag;
}
