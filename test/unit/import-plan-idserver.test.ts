// Planning an id_server import (pure): each app's counter continues above the highest one
// saved in the current period by any node; a rule whose counters lie above is left, one with a
// live segment below is raised, and one of another template is refused.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FOLD_SHARD } from '../../src/core/app-fold.js';
import { planRules } from '../../src/core/import-plan-rules.js';
import { type OldRule } from '../../src/core/import-plan.js';
import { periodOf, periodStart } from '../../src/core/period.js';
import { specOfMode } from '../../src/core/tag-kinds.js';
import { current, existing, none, refusal } from '../helpers/import-plan-current.js';

describe('planning an id_server import', () => {
  const ZONE = 'Asia/Shanghai';
  const rule = (extra: Partial<OldRule> = {}): OldRule => ({
    tag: 'o2o',
    file: 'o2o.lua',
    timeZone: ZONE,
    stride: 1,
    offset: 0,
    batchSave: 1,
    rule: { minCounter: 10, maxCounter: 9999, resetSeconds: 86400, template: '{year%10}{MM}{dd}{counter:4}' },
    ...extra,
  });
  const now = Date.UTC(2026, 10, 23, 6, 0, 0);
  const sec = Math.floor(now / 1000);
  const period = periodOf(now, ZONE, 86400);
  const yesterday = Math.floor(periodStart(period, ZONE, 86400) / 1000) - 1;

  it('continues each app above the highest counter saved in the current period, by any node', () => {
    const p = planRules(
      [rule()],
      [
        { nodeOffset: 0, counter: 4200, updateTime: sec - 100, ruleName: 'o2o', appName: 'shop' },
        { nodeOffset: 1, counter: 4501, updateTime: sec - 50, ruleName: 'o2o', appName: 'shop' },
        // Saved a second before the current period (in Shanghai): under a zone up to UTC+14 its
        // IDs could carry today's date, so it counts for today too.
        { nodeOffset: 0, counter: 9000, updateTime: yesterday, ruleName: 'o2o', appName: 'blog' },
        // Three days before: under no zone can its IDs carry a date idmint still renders.
        { nodeOffset: 0, counter: 9100, updateTime: yesterday - 2 * 86400, ruleName: 'o2o', appName: 'gone' },
        { nodeOffset: 1, counter: 5, updateTime: sec, ruleName: 'o2o', appName: 'low' },
        { nodeOffset: 1, counter: 99, updateTime: sec, ruleName: 'o2o', appName: 'bad app' },
        { nodeOffset: 1, counter: 99, updateTime: sec, ruleName: 'gone', appName: 'x' },
      ],
      none,
      now,
    );
    const t = p.tags[0];
    assert.equal(t.action, 'create');
    assert.equal(specOfMode(t.spec, 'rule', 'the test').rule.template, '{year%10}{MM}{dd}{counter:4}');
    // Sequence s writes min_counter + s - 1; batch_save 1 puts the bound one counter above the
    // saved 4501: counters above 4502 from sequence 4494 on, for shop and every case of it.
    assert.deepEqual(t.floors, [
      { shard: 0, scope: `blog/${period}`, counter: 9001 - 10 + 1 },
      { shard: 0, scope: `shop/${period}`, counter: 4502 - 10 + 1 },
      { shard: FOLD_SHARD, scope: `blog/${period}`, counter: 9001 - 10 + 1 },
      { shard: FOLD_SHARD, scope: `shop/${period}`, counter: 4502 - 10 + 1 },
    ]);
    assert.match(t.notes.join(), /app "bad app" .*left out/);
    assert.match(
      t.notes.join(),
      /1 saved counter\(s\) left out: under any zone id_server could have run in, their periods' IDs carry times idmint has passed/,
    );
    assert.match(t.notes.join(), /zone Asia\/Shanghai \(the tag's\)/);
    assert.match(p.notes.join(), /counters of rule "gone" left out/);
  });

  it('leaves a rule whose counters lie above, raises one with a live segment below, refuses another template', () => {
    const rows = [{ nodeOffset: 0, counter: 4501, updateTime: sec, ruleName: 'o2o', appName: 'shop' }];
    const body = {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 10,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: ZONE,
    };
    const scope = `shop/${period}`;
    const above: [number, string, number][] = [
      [0, scope, 5000],
      [FOLD_SHARD, scope, 5000],
    ];
    assert.equal(
      planRules([rule()], rows, current([existing(body, above, [[0, scope, 4600]])]), now).tags[0].action,
      'unchanged',
    );
    assert.equal(
      planRules([rule()], rows, current([existing(body, above, [[0, scope, 1]])]), now).tags[0].action,
      'raise',
    );
    // Every case of the name must lie above too: a rule without the floor by folded name is raised.
    assert.equal(
      planRules([rule()], rows, current([existing(body, [[0, scope, 5000]], [[0, scope, 4600]])]), now).tags[0].action,
      'raise',
    );
    const other = existing({ ...body, template: 'X{yyyy}{MM}{dd}{counter:4}' });
    assert.match(
      refusal(() => planRules([rule()], rows, current([other]), now)),
      /rule "o2o" exists in idmint with template X\{yyyy\}/,
    );
  });
});
