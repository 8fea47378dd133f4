// A deleted tag's metric series dropped in every process that holds them: those that served
// the tag, and those that only ran its refills or counted its regressions, which hold no
// definition of it. Whenever a read of the tag finds it gone, its series go; and a process
// holding series of an announced tag reads it at the announcement, as it does a definition it
// holds (TagRegistry.alsoReread), so a deletion is such a read everywhere. A read that fails
// keeps them (the definition last known serves on, tag-registry.ts) until a later read.
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import type { TagRegistry } from './tag-registry.js';

export function forgetSeriesOfDeletedTags(registry: TagRegistry, metrics: Metrics, log: Logger): void {
  registry.alsoReread((name) => metrics.holdsTag(name));
  registry.onLoad((name, tag) => {
    if (tag !== undefined) return;
    const series = metrics.forgetTag(name);
    if (series > 0) log.debug({ tag: name, series }, 'metric series of a deleted tag dropped');
  });
}
