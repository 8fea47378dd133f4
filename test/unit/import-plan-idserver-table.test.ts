// Planning an id_server import (pure) from what its counter table cannot tell: a node's
// unsaved counters, names compared without case, rows of a clock that ran ahead, the
// operator's floors and the saves id_server logged.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { operatorFloor } from '../../src/core/idserver-floors.js';
import { parseIdServerLog } from '../../src/core/idserver-log.js';
import { planRules } from '../../src/core/import-plan-rules.js';
import { type OldCounterRow, type OldRule } from '../../src/core/import-plan.js';
import { periodOf } from '../../src/core/period.js';
import { none, refusal } from '../helpers/import-plan-current.js';

describe('what an id_server counter table cannot tell', () => {
  const ZONE = 'UTC';
  const rule = (extra: Partial<OldRule> = {}): OldRule => ({
    tag: 'o2o',
    file: 'o2o.lua',
    timeZone: ZONE,
    stride: 2,
    offset: 0,
    batchSave: 100,
    rule: { minCounter: 0, maxCounter: 999999, resetSeconds: 86400, template: '{yy}{MM}{dd}{counter:6}' },
    ...extra,
  });
  const now = Date.UTC(2026, 10, 23, 6, 0, 0);
  const sec = Math.floor(now / 1000);
  const period = periodOf(now, ZONE, 86400);
  const row = (app: string, counter: number, updateTime = sec, extra: Partial<OldCounterRow> = {}): OldCounterRow => ({
    nodeOffset: 0,
    counter,
    updateTime,
    ruleName: 'o2o',
    appName: app,
    ...extra,
  });
  const floorsOf = (p: ReturnType<typeof planRules>) =>
    p.tags[0].floors.map((f) => `${f.shard} ${f.scope} ${f.counter}`);

  it('continues above the saved counter plus id_step x batch_save, and the margin above that', () => {
    // Counters 0, 2, 4, ...: sequence s writes 2 (s - 1); above 5000 + 2 x 100 = 5200 from sequence 2602 on.
    assert.deepEqual(floorsOf(planRules([rule()], [row('shop', 5000)], none, now)), [
      `0 shop/${period} 2601`,
      `-1 shop/${period} 2601`,
    ]);
    assert.deepEqual(floorsOf(planRules([rule()], [row('shop', 5000)], none, now, { margin: 1000 })), [
      `0 shop/${period} 3101`,
      `-1 shop/${period} 3101`,
    ]);
    const notes = planRules([rule()], [row('shop', 5000)], none, now).tags[0].notes.join('\n');
    assert.match(notes, /each saved counter counts as id_step 2 x batch_save \(200 for this rule\) higher/);
    assert.match(notes, /"db failed" in id_server's log/);
  });

  it("holds a row's floor for every case of its name, even names never seen", () => {
    // "test" saved 5000, then "Test" saved 100 into the same row: the table holds Test/100.
    const p = planRules([rule()], [row('Test', 100)], none, now);
    assert.deepEqual(floorsOf(p), [`0 Test/${period} 151`, `-1 test/${period} 151`]);
    assert.match(p.tags[0].notes.join('\n'), /compares app names without case.*\(--idserver-log\) or give --floor/);
    // A row of a name idmint cannot serve still holds for the names that fold to it.
    assert.deepEqual(floorsOf(planRules([rule()], [row('Tést ', 100)], none, now)), [`-1 test/${period} 151`]);
  });

  it('holds a row saved under another case of the rule name for the rule: the table compares rule names without case too', () => {
    const p = planRules([rule()], [row('shop', 5000, sec, { ruleName: 'O2O' })], none, now);
    assert.deepEqual(floorsOf(p), [`0 shop/${period} 2601`, `-1 shop/${period} 2601`]);
    assert.match(p.tags[0].notes.join('\n'), /1 saved counter\(s\) of rule "O2O" count for this rule too/);
    assert.deepEqual(p.notes, []);
    // A rule config.json does not name in any case, nor through a shared counter key, is left out, and said so.
    const q = planRules([rule()], [row('shop', 5000, sec, { ruleName: 'other' })], none, now);
    assert.deepEqual(floorsOf(q), []);
    assert.match(q.notes.join('\n'), /counters of rule "other" left out: config.json names no such rule/);
  });

  it("keeps a row of a later period than now (a node's clock ran ahead), for that period and the current one, naming it", () => {
    const p = planRules(
      [rule()],
      [row('fast', 3000, sec + 86400), row('old', 9000, sec - 2 * 86400), row('old', 10, sec - 3 * 86400)],
      none,
      now,
    );
    assert.deepEqual(floorsOf(p), [
      `0 fast/${period} 1601`,
      `-1 fast/${period} 1601`,
      `0 fast/${period + 1} 1601`,
      `-1 fast/${period + 1} 1601`,
    ]);
    const notes = p.tags[0].notes.join('\n');
    assert.match(
      notes,
      /counter table row \(rule "o2o", app "fast", node_offset 0, counter 3000, update_time \d+\) was saved after the import's time/,
    );
    assert.match(notes, /2 saved counter\(s\) left out/);
  });

  it("takes the operator's floors: for an app (and its cases), for every app; refuses one for a rule config.json does not name", () => {
    const p = planRules([rule()], [], none, now, {
      floors: [
        { rule: 'o2o', app: 'Test', counter: 5000 },
        { rule: 'o2o', counter: 800 },
      ],
    });
    assert.deepEqual(floorsOf(p), [`0 Test/${period} 2501`, `-1 test/${period} 2501`, `-1 */${period} 401`]);
    assert.match(
      refusal(() => planRules([rule()], [], none, now, { floors: [{ rule: 'gone', counter: 1 }] })),
      /a floor was given for rule "gone"/,
    );
  });

  it('reads floors given as "<rule>" or "<rule>/<app>" with a whole counter', () => {
    assert.deepEqual(operatorFloor('o2o', '800'), { rule: 'o2o', counter: 800 });
    assert.deepEqual(operatorFloor('o2o/Test', 5000), { rule: 'o2o', app: 'Test', counter: 5000 });
    assert.match(String(operatorFloor('o2o/bad app', 1)), /names app "bad app"/);
    assert.match(String(operatorFloor('o2o', '-1')), /must be a whole number of 0 or more/);
    assert.match(String(operatorFloor('o2o', 1.5)), /must be a whole number/);
    assert.match(String(operatorFloor('/x', 1)), /a floor needs a rule name/);
  });

  it('reads the saves id_server logged, failed ones and tried ones, as it writes them', () => {
    const log = [
      '2026-11-23 14:00:00,info,system started',
      `2026-11-23 14:00:01,debug,[data_thread.cpp:94]exec sql:replace into counter set rule_name='o2o',app_name='test',node_offset=0,counter=5200,update_time=${sec}`,
      `2026-11-23 14:00:02,warn,[data_thread.cpp:98]db failed thread:140213 errno:2006 sql:replace into counter set rule_name='o2o',app_name='test',node_offset=0,counter=5400,update_time=${sec}`,
      '',
      `2026-11-23 14:00:03,warn,db failed thread:140213 errno:2013 sql:replace into counter set rule_name='task',app_name='Shop',node_offset=1,counter=71,update_time=${sec}`,
    ].join('\n');
    const rows = parseIdServerLog('id_server.20261123.log', log);
    assert.deepEqual(rows, [
      {
        nodeOffset: 0,
        counter: 5200,
        updateTime: sec,
        ruleName: 'o2o',
        appName: 'test',
        source: 'id_server.20261123.log:2',
      },
      {
        nodeOffset: 0,
        counter: 5400,
        updateTime: sec,
        ruleName: 'o2o',
        appName: 'test',
        source: 'id_server.20261123.log:3 (db failed)',
      },
      {
        nodeOffset: 1,
        counter: 71,
        updateTime: sec,
        ruleName: 'task',
        appName: 'Shop',
        source: 'id_server.20261123.log:5 (db failed)',
      },
    ]);
    assert.match(
      planRules([rule()], rows, none, now).tags[0].notes.join('\n'),
      /id_server\.20261123\.log:3 \(db failed\): app "test" continues above counter 5600 in 2026-11-23 00:00[^]*2 save\(s\) read from id_server's log count, 1 of them failed writes/,
    );
    // With the table's Test/100: test continues above the failed 5400 + 200.
    assert.deepEqual(floorsOf(planRules([rule()], [row('Test', 100), ...rows], none, now)), [
      `0 Test/${period} 151`,
      `0 test/${period} 2801`,
      `-1 test/${period} 2801`,
    ]);
    // A line in another shape sets no floor: it is set aside (idserver-evidence.test.ts).
    assert.deepEqual(
      parseIdServerLog(
        'x.log',
        "a\nwarn,db failed sql:replace into counter set rule_name='o2o',app_name='t',counter=5",
      ),
      [],
    );
  });
});
