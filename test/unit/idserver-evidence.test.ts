// What an id_server import may not assume: the zone id_server ran in, that a counter never
// wrapped, that rule and app names key its counters apart, that its periods begin when its
// dates change, and that a log line is a save. Each case is one that repeated IDs id_server had
// handed out before the import learnt it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FOLD_SHARD } from '../../src/core/app-fold.js';
import { readIdServerLog } from '../../src/core/idserver-log.js';
import { widenToBuckets } from '../../src/core/idserver-periods.js';
import type { OldCounterRow, OldRule } from '../../src/core/import-plan.js';
import { planRules } from '../../src/core/import-plan-rules.js';
import { localParts, periodOf } from '../../src/core/period.js';
import { render } from '../../src/core/rule-render.js';
import { compileRule, counterAt } from '../../src/core/rule-spec.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { specOfMode, type TagSpec } from '../../src/core/tag-kinds.js';

const ruleOf = (s: TagSpec) => specOfMode(s, 'rule', 'the test').rule;

const none = { live: new Map(), deleted: new Set<string>() };
const DAY = 86400;
const rule = (
  timeZone: string | undefined,
  extra: Partial<OldRule> = {},
  r: Partial<OldRule['rule']> = {},
): OldRule => ({
  tag: 'order',
  file: 'order.lua',
  timeZone,
  stride: 1,
  offset: 0,
  batchSave: 1,
  rule: { minCounter: 0, maxCounter: 999999, resetSeconds: DAY, template: 'O{yy}{MM}{dd}{counter:6}', ...r },
  ...extra,
});
const row = (appName: string, counter: number, atMs: number, extra: Partial<OldCounterRow> = {}): OldCounterRow => ({
  nodeOffset: 0,
  counter,
  updateTime: Math.floor(atMs / 1000),
  ruleName: 'order',
  appName,
  ...extra,
});
/** The floor (sequence) of app's counter in the period of `atMs`, by the folded name. */
const floorAt = (plan: ReturnType<typeof planRules>, tag: string, app: string, atMs: number) => {
  const t = plan.tags.find((x) => x.tag === tag)!;
  const r = ruleOf(t.spec);
  const p = periodOf(atMs, r.timeZone, r.resetSeconds);
  return t.floors.find((f) => f.shard === FOLD_SHARD && f.scope === `${app}/${p}`)?.counter ?? 0;
};
/** The ID idmint writes for sequence k of app's counter at `atMs`. */
const idmintId = (plan: ReturnType<typeof planRules>, tag: string, k: number, atMs: number) => {
  const t = plan.tags.find((x) => x.tag === tag)!;
  const r = ruleOf(t.spec);
  return render(compileRule(r, true), {
    counter: counterAt(r, t.spec, k),
    app: '',
    parts: localParts(atMs, r.timeZone),
  });
};

describe('an id_server import and its zone', () => {
  // id_server in Asia/Shanghai at 01:00 on 11-28 (17:00 UTC on 11-27) handed out O261128000000..24.
  const saved = Date.UTC(2026, 10, 27, 17, 0, 0);
  const importAt = saved + 60_000;
  const rows = [row('shop', 30, saved)];

  it('refuses a rule whose IDs carry a date or reset by period when no zone is given', () => {
    assert.throws(
      () => planRules([rule(undefined)], rows, none, importAt),
      (e: unknown) =>
        e instanceof SpecProblems &&
        /rule "order" \(order\.lua\): its IDs carry the date .*give the zone id_server ran in \(--time-zone/.test(
          e.message,
        ),
    );
    // A counter with no date that never resets needs none.
    const plain = planRules(
      [rule(undefined, {}, { resetSeconds: 0, template: 'X{counter:8}' })],
      [row('shop', 30, saved)],
      none,
      importAt,
    );
    assert.equal(ruleOf(plain.tags[0].spec).timeZone, 'UTC');
  });

  it('with a wrong zone, floors the period whose dates id_server wrote under its own (UTC given, Shanghai real)', () => {
    const plan = planRules([rule('UTC')], rows, none, importAt);
    // After UTC midnight idmint dates IDs 11-28, as id_server did: that period continues above 30 + 1.
    const after = Date.UTC(2026, 10, 28, 0, 0, 1);
    assert.equal(floorAt(plan, 'order', 'shop', after), 32);
    assert.equal(idmintId(plan, 'order', 33, after), 'O261128000032');
    assert.match(plan.tags[0].notes.join('\n'), /zone UTC \(the tag's\).*shop in 2026-11-27 00:00, 2026-11-28 00:00/);
  });

  it('never repeats a rendered ID of a save, whichever zone id_server really had and whichever is given', () => {
    const zones = [
      'UTC',
      'Asia/Shanghai',
      'America/New_York',
      'Pacific/Kiritimati',
      'Etc/GMT+12',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
      'Europe/Dublin',
    ];
    for (const real of zones) {
      for (const givenZone of zones) {
        for (const hour of [0, 5, 11, 17, 23]) {
          const at = Date.UTC(2026, 6, 14, hour, 30, 0);
          const plan = planRules([rule(givenZone)], [row('shop', 30, at)], none, at + 60_000);
          // The date id_server wrote on the IDs up to counter 31 (saved 30, batch 1), in its zone.
          const realDate = localParts(at, real);
          for (let h = 0; h < 40; h++) {
            const t = at + 60_000 + h * 3_600_000;
            const d = localParts(t, givenZone);
            if (d.year !== realDate.year || d.month !== realDate.month || d.day !== realDate.day) continue;
            // idmint dates an ID alike there: its next counter lies above 31.
            const k = floorAt(plan, 'order', 'shop', t);
            assert.ok(
              counterAt(ruleOf(plan.tags[0].spec), plan.tags[0].spec, k + 1) > 31,
              `${real} given ${givenZone} at ${hour}h +${h}h: floor ${k}`,
            );
          }
        }
      }
    }
  });
});

describe('an id_server import and what its table cannot show', () => {
  const now = Date.UTC(2026, 10, 23, 6, 0, 0);

  it('closes the period of an app whose saved counter with the save lag reaches max_counter (it may have wrapped)', () => {
    const plan = planRules(
      [rule('UTC', { batchSave: 10 }, { maxCounter: 99, template: 'O{yy}{MM}{dd}{counter:2}' })],
      [row('shop', 95, now - 1000)],
      none,
      now,
    );
    assert.equal(floorAt(plan, 'order', 'shop', now), 100);
    assert.match(
      plan.tags[0].notes.join('\n'),
      /app "shop" \(every case of it\) closed .*ID_SPACE_EXHAUSTED .*reaches max_counter 99: id_server may have passed it/,
    );
    // Below the lag's reach it is not closed.
    const open = planRules(
      [rule('UTC', { batchSave: 10 }, { maxCounter: 99, template: 'O{yy}{MM}{dd}{counter:2}' })],
      [row('shop', 80, now - 1000)],
      none,
      now,
    );
    assert.equal(floorAt(open, 'order', 'shop', now), 91);
  });

  it('holds one counter for pairs whose rule + "_" + app are equal (order/id_shop and order_id/shop)', () => {
    const plan = planRules(
      [rule('UTC'), rule('UTC', { tag: 'order_id', file: 'order_id.lua' })],
      [row('id_shop', 500, now - 1000)],
      none,
      now,
    );
    assert.equal(floorAt(plan, 'order_id', 'shop', now), 502);
    assert.equal(floorAt(plan, 'order', 'id_shop', now), 502);
    assert.match(
      plan.tags.find((t) => t.tag === 'order_id')!.notes.join('\n'),
      /app "shop" shares id_server's counter with "order"\/"id_shop"/,
    );
  });

  it("models id_server's daylight saving quirk: a period begun by standard time, dates by local time", () => {
    const ny = (h: number, m = 0) => Date.UTC(2026, 6, 15, h, m, 0);
    // 00:30 EDT on 07-15 is 23:30 EST on 07-14: id_server still numbers 07-14's counter, dated 07-15.
    const late = planRules([rule('America/New_York')], [row('shop', 800, ny(4, 30))], none, ny(4, 31));
    assert.equal(floorAt(late, 'order', 'shop', ny(4, 31)), 802);
    // At 10:00 EDT the table holds 07-15's row; 07-14's counter, which dated IDs 07-15 until 01:00
    // EDT, is gone: 07-15 is closed for the app.
    const lost = planRules([rule('America/New_York')], [row('shop', 40, ny(14))], none, ny(14, 1));
    assert.equal(floorAt(lost, 'order', 'shop', ny(14, 1)), 1_000_000);
    assert.match(
      lost.tags[0].notes.join('\n'),
      /daylight saving was in effect when the period of .* began, so the previous period's counter .* still numbered IDs dated 2026-07-15 00:00/,
    );
    // With the hour in the IDs, those were dated 00h, which idmint has passed: nothing to close.
    const hourly = planRules(
      [rule('America/New_York', {}, { template: 'O{yy}{MM}{dd}{HH}{counter:6}' })],
      [row('shop', 40, ny(14))],
      none,
      ny(14, 1),
    );
    assert.equal(floorAt(hourly, 'order', 'shop', ny(14, 1)), 42);
    // In winter there is no quirk.
    const winter = planRules(
      [rule('America/New_York')],
      [row('shop', 40, Date.UTC(2026, 0, 15, 15))],
      none,
      Date.UTC(2026, 0, 15, 15, 1),
    );
    assert.equal(floorAt(winter, 'order', 'shop', Date.UTC(2026, 0, 15, 15, 1)), 42);
  });
});

describe('an id_server import and its log, as evidence', () => {
  const now = Date.UTC(2026, 10, 23, 6, 0, 0);
  const sec = Math.floor(now / 1000) - 60;
  const save = (app: string, counter: number) =>
    `replace into counter set rule_name='order',app_name='${app}',node_offset=0,counter=${counter},update_time=${sec}`;

  it("counts only whole lines in the shape of id_server's data thread, and sets every other mention aside", () => {
    const { rows, setAside } = readIdServerLog(
      'id.log',
      [
        `2026-11-23 13:59:00,debug,[data_thread.cpp:94]exec sql:${save('a', 10)}`,
        `2026-11-23 13:59:00,warn,db failed thread:1 errno:2006 sql:${save('b', 20)}`,
        `2026-11-23 13:59:01,debug,[udp_handler.cpp:61]recv:{"rule_name":"x","app_name":"2026-11-23 13:59:00,warn,db failed thread:1 errno:2006 sql:${save('c', 999990)}"}`,
        `2026-11-23 13:59:02,debug,[data_thread.cpp:94]exec sql:replace into counter set rule_name='order',app_name='d',node_offset=0,counter=999990,update_time=${sec}',node_offset=0,counter=1,update_time=1`,
        'plain line',
      ].join('\n'),
    );
    assert.deepEqual(
      rows.map((r) => [r.appName, r.counter, r.source]),
      [
        ['a', 10, 'id.log:1'],
        ['b', 20, 'id.log:2 (db failed)'],
      ],
    );
    assert.deepEqual(
      setAside.map((s) => s.slice(0, 9)),
      ['id.log:3:', 'id.log:4:'],
    );
  });

  it("reads a save that found the queue full (no update_time, no node) by its line's local time, and protects its day under any zone", () => {
    const { rows, setAside } = readIdServerLog(
      'id.log',
      [
        '2026-11-23 23:59:00,warn,[data_thread_manager.cpp:118]save failed rule_name:order app_name:shop counter:40',
        '2026-11-23 13:59:00,warn,save failed rule_name:order app_name:blog counter:7',
        '2026-11-23 13:59:01,debug,[udp_handler.cpp:61]recv:{"app_name":"2026-11-23 13:59:00,warn,save failed rule_name:order app_name:x counter:999990"}',
        '2026-02-30 13:59:00,warn,save failed rule_name:order app_name:y counter:5',
      ].join('\n'),
    );
    assert.deepEqual(
      rows.map((r) => [r.appName, r.counter, r.source, r.nodeOffset, r.loggedWallMs]),
      [
        ['shop', 40, 'id.log:1 (queue full)', -1, Date.UTC(2026, 10, 23, 23, 59)],
        ['blog', 7, 'id.log:2 (queue full)', -1, Date.UTC(2026, 10, 23, 13, 59)],
      ],
    );
    assert.deepEqual(
      setAside.map((s) => s.slice(0, 9)),
      ['id.log:3:', 'id.log:4:'],
    );
    // Logged at 23:59 local on the 23rd, in some zone: idmint (in Kathmandu, a zone the log does
    // not name) continues above 40 + batch_save on its own 23rd, and on the 24th, which a save
    // by standard time under daylight saving still numbers.
    const at = Date.UTC(2026, 10, 23, 6, 0, 0);
    const plan = planRules([rule('Asia/Kathmandu')], rows.slice(0, 1), none, at);
    assert.equal(floorAt(plan, 'order', 'shop', at), 42);
    assert.equal(floorAt(plan, 'order', 'shop', at + DAY * 1000), 42);
    assert.match(plan.tags[0].notes.join('\n'), /1 save\(s\) read from id_server's log count, 1 of them failed writes/);
  });

  it('reports every floor a line sets with its line number, and refuses a line that reaches max_counter unless --trust-log', () => {
    const { rows } = readIdServerLog(
      'id.log',
      [
        `2026-11-23 13:59:00,warn,db failed thread:1 errno:2006 sql:${save('shop', 999998)}`,
        `2026-11-23 13:59:00,warn,db failed thread:1 errno:2006 sql:${save('blog', 700)}`,
      ].join('\n'),
    );
    // Neither dropped (it may be the only trace of a save near max_counter) nor applied unchecked (it may be forged).
    assert.throws(
      () => planRules([rule('UTC')], rows, none, now),
      (e: unknown) =>
        e instanceof SpecProblems &&
        /id\.log:1 \(db failed\): a save of app "shop" at counter 999998 reaches max_counter 999999 .*--trust-log .*leave that line out/.test(
          e.message,
        ),
    );
    const plan = planRules([rule('UTC')], rows.slice(1), none, now);
    assert.equal(floorAt(plan, 'order', 'blog', now), 702);
    assert.match(
      plan.tags[0].notes.join('\n'),
      /id\.log:2 \(db failed\): app "blog" continues above counter 701 in 2026-11-23 00:00/,
    );
    const trusted = planRules([rule('UTC')], rows, none, now, { trustLog: true });
    assert.equal(floorAt(trusted, 'order', 'shop', now), 1_000_000);
    assert.equal(floorAt(trusted, 'order', 'blog', now), 702);
  });

  it('closes a shared key for a rule whose IDs tell times apart less finely than the rule that starts the counter again', () => {
    const hourly = rule(
      'UTC',
      { tag: 'order_id', file: 'order_id.lua' },
      { resetSeconds: 3600, template: 'O{yy}{MM}{dd}{HH}{counter:6}' },
    );
    const plain = rule('UTC', {}, { resetSeconds: 0, template: '{counter:2}', maxCounter: 99 });
    // order_id/shop saved 10 five hours ago: its hour has passed, but order/id_shop's IDs carry no
    // time, and what the counter numbered in earlier hours (no longer in the table) they repeat.
    const plan = planRules(
      [hourly, plain],
      [row('shop', 10, now - 5 * 3_600_000, { ruleName: 'order_id' })],
      none,
      now,
    );
    const order = plan.tags.find((t) => t.tag === 'order')!;
    assert.equal(order.floors.find((f) => f.shard === FOLD_SHARD && f.scope === 'id_shop/0')?.counter, 100);
    assert.match(
      order.notes.join('\n'),
      /app "id_shop" .*closed .*shares id_server's counter with rule "order_id", which starts it again every 3600 s, while this rule's IDs tell no times apart/,
    );
    // A rule whose IDs carry the hour keeps its floor: the other rule's earlier hours are dated apart.
    const dated = rule('UTC', {}, { resetSeconds: 3600, template: 'X{yy}{MM}{dd}{HH}{counter:4}', maxCounter: 9999 });
    const kept = planRules([hourly, dated], [row('shop', 10, now - 60_000, { ruleName: 'order_id' })], none, now);
    assert.equal(floorAt(kept, 'order', 'id_shop', now), 12);
  });
});

describe("the dates a save may share with idmint, by the template's finest token", () => {
  it('widens to the whole year for {year%100} as for {yy}', () => {
    const span = { lo: Date.UTC(2026, 4, 3), hi: Date.UTC(2026, 4, 4) };
    const year = { lo: Date.UTC(2026, 0, 1), hi: Date.UTC(2027, 0, 1) };
    assert.deepEqual(widenToBuckets(span, '{yy}'), year);
    assert.deepEqual(widenToBuckets(span, '{year%100}'), year);
  });
});
