// Per-tag client tokens at serving time: a tag with tokens serves only requests that carry one
// of them (compared by hash, src/token-hash.ts); a tag without tokens is open.
import { IdmintError } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { hashToken } from '../token-hash.js';

/** Throws UNAUTHORIZED unless the token opens the tag. */
export function authorize(tag: StoredTag, token: string | undefined): void {
  if (!tag.tokenHashes || tag.tokenHashes.size === 0) return;
  if (token === undefined || token === '') throw new IdmintError('UNAUTHORIZED', `tag "${tag.tag}" needs a client token`);
  if (!tag.tokenHashes.has(hashToken(token))) throw new IdmintError('UNAUTHORIZED', `the client token is not valid for tag "${tag.tag}"`);
}
