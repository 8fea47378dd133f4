// What an anonymous scrape of /metrics may see of permuted tags: nothing per tag. A permuted
// tag's IDs hide how many were issued (docs/GUARANTEES.md#permuted-ids), so without a metrics
// token every series labelled with such a tag (issued, remaining, rate, forecasts, takes,
// errors, keys...) is left out of the exposition text; the scrape that sends the token sees all.
// Pure text work on the Prometheus exposition format, so that it holds for one process and for
// the aggregate of `serve --processes N` alike.

/** The value of a sample line's `tag` label, or undefined when it has none. */
function tagOf(line: string): string | undefined {
  const open = line.indexOf('{');
  if (open < 0) return undefined;
  const m = /[{,]tag="((?:[^"\\]|\\.)*)"/.exec(line.slice(open));
  return m?.[1];
}

/**
 * The exposition text without the samples whose `tag` label is in `hidden`; `hidden` undefined
 * (the tags could not be read) leaves out every sample that has a `tag` label.
 */
export function withoutTags(text: string, hidden: ReadonlySet<string> | undefined): string {
  if (hidden !== undefined && hidden.size === 0) return text;
  return text
    .split('\n')
    .filter((line) => {
      if (line.startsWith('#')) return true;
      const tag = tagOf(line);
      return tag === undefined || (hidden !== undefined && !hidden.has(tag));
    })
    .join('\n');
}
