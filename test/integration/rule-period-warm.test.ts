// suite: cluster
// A rule's next period is warmed before it starts (src/service/period-warmer.ts): a hundred apps
// ask IDs of a daily rule (order global and order node) ten seconds before a local midnight;
// once the next day's scope of every app holds a segment, the clock passes midnight and every
// app asks again, all at once. No request waits for a refill (idmint_refill_waits_total does not
// move), and every app's counter starts the day at min_counter: warming handed out no ID.
// Without the warmer every first request of the day waits for a refill of its own, queued
// behind the others'. And warming follows requests only: a minute warmed for an app that asked
// nothing in it warms no minute after it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/core/clock.js';
import { startNode, type Node } from '../../src/process/serve.js';
import { scopeOf } from '../../src/service/rule-mode.js';
import type { StoredOf } from '../../src/store/mysql/tags-repo.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { mustHttpId } from '../helpers/rule-requests.js';

const APPS = Array.from({ length: 100 }, (_, i) => `app${i}`);

describe('rule periods warmed before they start', () => {
  const names = testNames();
  const clock = new ManualClock(Date.UTC(2027, 2, 9, 15, 59, 50)); // 2027-03-09 23:59:50 in Shanghai
  let node: Node;

  before(async () => {
    node = await startNode(testConfig(names, { RULE_PERIOD_WARM_MS: '30000' }), { clock });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    await cleanup(names).catch(() => undefined);
  });

  const refillWaits = async (tag: string): Promise<number> => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`idmint_refill_waits_total{tag="${tag}"}`));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  };

  /** Until the next day's scope of every app holds its first segment (the warmer's refills installed). */
  const warmed = async (name: string): Promise<void> => {
    const tag = (await node.rt.tags.get(name)) as StoredOf<'rule'>;
    const refs = APPS.map((app) => ({
      tag: name,
      epoch: tag.epoch,
      shard: 0,
      scope: scopeOf(tag, app, Date.UTC(2027, 2, 9, 16, 0, 1)),
      redis: tag.redis,
    }));
    const until = Date.now() + 60_000;
    for (;;) {
      const stats = await Promise.all(refs.map((ref) => node.rt.segments.stats(ref)));
      const cold = stats.filter((s) => s.end === undefined || s.end < (s.cur ?? 1)).length;
      if (cold === 0) return;
      assert.ok(Date.now() < until, `${cold} of ${APPS.length} scopes of the next day still without a segment`);
      await sleep(50);
    }
  };

  for (const order of ['global', 'node'] as const) {
    it(`serves the first requests of the day (order ${order}) from segments installed before it`, async () => {
      const tag = `daily-${order}`;
      clock.set(Date.UTC(2027, 2, 9, 15, 59, 50));
      await createTag(node.url!, {
        tag,
        mode: 'rule',
        order,
        template: '{yyyy}{MM}{dd}-{counter:6}',
        min_counter: 1,
        max_counter: 999999,
        reset_seconds: 86400,
        time_zone: 'Asia/Shanghai',
      });
      for (const app of APPS) assert.equal(await mustHttpId(node.url!, tag, app), '20270309-000001');
      await warmed(tag);
      const before = await refillWaits(tag);
      clock.set(Date.UTC(2027, 2, 9, 16, 0, 1)); // 2027-03-10 00:00:01 in Shanghai
      const ids = await Promise.all(APPS.map((app) => mustHttpId(node.url!, tag, app)));
      assert.deepEqual(new Set(ids), new Set(['20270310-000001']));
      assert.equal(await refillWaits(tag), before, 'requests of the new day waited for refills');
    });
  }

  it('warms the period after a period an app asked in, never one after a period only warmed', async () => {
    const tag = 'minutely';
    clock.set(Date.UTC(2027, 2, 9, 4, 0, 40)); // 40 s into a minute: the next one is due (lead 30 s)
    await createTag(node.url!, {
      tag,
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{mm}-{counter:6}',
      min_counter: 1,
      max_counter: 999999,
      reset_seconds: 60,
    });
    const def = (await node.rt.tags.get(tag)) as StoredOf<'rule'>;
    const held = async (minute: number): Promise<boolean> => {
      const scope = scopeOf(def, 'a', Date.UTC(2027, 2, 9, 4, minute, 0));
      return (
        (await node.rt.segments.stats({ tag, epoch: def.epoch, shard: 0, scope, redis: def.redis })).gen !== undefined
      );
    };
    /** A whole pass of the warmer begun after the clock last moved (one already running may have read it before). */
    const pass = async (): Promise<void> => {
      await node.rt.ids.periods.warm();
      await node.rt.ids.periods.warm();
    };
    assert.equal(await mustHttpId(node.url!, tag, 'a'), '202703090400-000001');
    await pass();
    assert.ok(await held(1), 'the minute after the one the app asked in is warmed');
    // In the warmed minute nobody asks: the minute after it stays cold.
    clock.set(Date.UTC(2027, 2, 9, 4, 1, 40));
    await pass();
    assert.equal(await held(2), false, 'a minute only warmed warmed the next');
    // Once the app asks in it, the next one is warmed again.
    assert.equal(await mustHttpId(node.url!, tag, 'a'), '202703090401-000001');
    await pass();
    assert.ok(await held(2));
  });
});
