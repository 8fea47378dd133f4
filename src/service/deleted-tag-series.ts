// A deleted tag's metric series dropped in every process that holds them: those that served
// the tag, and those that only ran its refills or counted its regressions, which hold no
// definition of it and so hear of its deletion from no read of their own. At each announced
// change of a tag this process holds series of, the definition is read (after the change, as
// every read after an announcement is); when the tag is gone, its series go. A read that fails
// keeps them (the definition last known serves on, tag-registry.ts), as does a tag created
// again under the same name before the read.
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import type { TagRegistry } from './tag-registry.js';

export function forgetSeriesOfDeletedTags(registry: TagRegistry, metrics: Metrics, log: Logger): void {
  registry.onAnnounced((name) => {
    if (!metrics.holdsTag(name)) return;
    registry.get(name).then(
      (tag) => {
        if (tag !== undefined) return;
        const series = metrics.forgetTag(name);
        log.debug({ tag: name, series }, 'metric series of a deleted tag dropped');
      },
      () => undefined,
    );
  });
}
