// What the open /metrics (no METRICS_TOKEN, and no admin or viewer token sent) shows. A tag's
// own series (every sample with a `tag` label) are shown only when tagSeriesArePublic says so;
// the families of PRIVATE_FAMILIES (the Redis masters' addresses) not at all; the rest (process,
// queues, transports, totals) as it is. A scrape with the metrics token (or the admin or viewer
// token) sees everything and this filter is not used.
import type { StoredTag } from '../store/mysql/tags-repo.js';

/**
 * Whether anyone may see this tag's series on the open /metrics: only a tag that exists, has
 * no client tokens (a protected tag looks missing everywhere else, so its name, volumes and
 * rates stay hidden here too) and does not permute its IDs (they hide how many were issued:
 * docs/GUARANTEES.md#permuted-ids). Undefined (missing, or not looked up) is not public.
 */
export function tagSeriesArePublic(tag: StoredTag | undefined): boolean {
  if (tag === undefined || tag.permute) return false;
  return tag.tokenHashes === undefined || tag.tokenHashes.size === 0;
}

/** Families left out of the open page whole: they name the stores' addresses. */
export const PRIVATE_FAMILIES: readonly string[] = ['idmint_redis_master_info'];

/** The metric family a line is about: a sample's name, or the name a # HELP / # TYPE line gives. */
function familyOf(line: string): string {
  const words = line.startsWith('# ') ? line.split(' ', 3)[2] : line;
  return (words ?? '').split(/[{ ]/, 1)[0];
}

const TAG_LABEL = /[{,]tag="((?:[^"\\]|\\.)*)"/g;

/** The values of every `tag="..."` in a sample line (one, unless another label's value looks like one). */
function tagsOf(line: string): string[] {
  return line.startsWith('#') ? [] : [...line.matchAll(TAG_LABEL)].map((m) => unescapeLabel(m[1]));
}

function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/**
 * The exposition text without the samples of tags whose series are not public. `lookup`
 * answers a tag's definition (undefined when it does not exist); a lookup that fails hides the
 * tag, as does a tag deleted since its series were made.
 */
export async function withoutPrivateTags(
  text: string,
  lookup: (tag: string) => Promise<StoredTag | undefined>,
): Promise<string> {
  const lines = text.split('\n');
  const names = new Set<string>();
  for (const line of lines) for (const name of tagsOf(line)) names.add(name);
  const pub = new Set<string>();
  await Promise.all(
    [...names].map(async (name) => {
      const tag = await lookup(name).catch(() => undefined);
      if (tagSeriesArePublic(tag)) pub.add(name);
    }),
  );
  return lines
    .filter((line) => !PRIVATE_FAMILIES.includes(familyOf(line)) && tagsOf(line).every((name) => pub.has(name)))
    .join('\n');
}
