// Metric series labelled by tag are dropped by tag (Metrics.forgetTag, a deleted tag's): every
// series of that tag, in every tag-labelled metric, and none of another tag's, whatever the
// names look like. Checked through the exposition a scrape sees.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Metrics } from '../../src/metrics/metrics.js';

/** The tags named in the exposition's samples. */
async function tagsShown(metrics: Metrics): Promise<Set<string>> {
  const text = await metrics.registry.metrics();
  const shown = new Set<string>();
  for (const match of text.matchAll(/[{,]tag="((?:[^"\\]|\\.)*)"/g)) shown.add(JSON.parse(`"${match[1]}"`) as string);
  return shown;
}

/** Counts something of the tag in each tag-labelled metric. */
function touch(metrics: Metrics, tag: string): void {
  metrics.countIssued(tag, 'segment', 3);
  metrics.takesSeries(tag).value++;
  metrics.segmentSize.observe({ tag }, 1000);
  metrics.allocations.inc({ tag });
  metrics.refillWaits.inc({ tag });
  metrics.redisReplaced.inc({ tag });
  metrics.counterRegressions.inc({ tag, kind: 'segment' });
  metrics.idempotency.replay(tag);
  metrics.idempotency.mismatch(tag);
  metrics.idempotency.full(tag);
  metrics.idempotency.inFlight(tag);
}

describe('forgetting a tag’s metric series', () => {
  it('drops every series of the tag and none of the others', async () => {
    const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
    console.log(`fast-check seed ${seed}`);
    const name = fc.stringMatching(/^[a-z0-9_ .-]{1,8}$/);
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(name, { minLength: 2, maxLength: 6 }), async (tags) => {
        const metrics = new Metrics({ defaultMetrics: false });
        for (const tag of tags) touch(metrics, tag);
        const [gone, ...kept] = tags;
        assert.ok(metrics.holdsTag(gone));
        assert.ok(metrics.forgetTag(gone) >= 11, 'a series per metric dropped');
        assert.equal(metrics.holdsTag(gone), false);
        assert.equal(metrics.forgetTag(gone), 0);
        assert.deepEqual([...(await tagsShown(metrics))].sort(), [...kept].sort());
        // Counted again (the tag created anew), it shows again from zero.
        metrics.allocations.inc({ tag: gone });
        assert.match(
          await metrics.registry.metrics(),
          new RegExp(`idmint_segments_allocated_total\\{tag="${gone.replace(/[.]/g, '\\.')}"\\} 1\\n`),
        );
      }),
      { seed, numRuns: 50 },
    );
  });

  it('keeps label sets apart whose values joined would look alike', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.counterRegressions.inc({ tag: 'a b', kind: 'c' });
    metrics.counterRegressions.inc({ tag: 'a', kind: 'b c' });
    const text = await metrics.registry.metrics();
    assert.match(text, /idmint_counter_regressions_total\{tag="a b",kind="c"\} 1\n/);
    assert.match(text, /idmint_counter_regressions_total\{tag="a",kind="b c"\} 1\n/);
    metrics.forgetTag('a');
    assert.deepEqual([...(await tagsShown(metrics))], ['a b']);
  });
});
