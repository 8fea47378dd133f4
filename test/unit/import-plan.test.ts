// Import planning (pure): which tags are created, raised or left, the floors that put every
// later ID above the old system's, and every reason to refuse an import.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FOLD_SHARD } from '../../src/core/app-fold.js';
import { operatorFloor } from '../../src/core/idserver-floors.js';
import { parseIdServerLog } from '../../src/core/idserver-log.js';
import { planRules, ruleFloor } from '../../src/core/import-plan-rules.js';
import { planSegments, segmentFloor } from '../../src/core/import-plan-segments.js';
import { markKey, type Current, type CurrentTag, type OldCounterRow, type OldRule, type OldSegmentTag } from '../../src/core/import-plan.js';
import { periodOf, periodStart } from '../../src/core/period.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { specFromCreate, type TagSpec } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

const hash = (t: string) => `h(${t})`;
const none: Current = { live: new Map(), deleted: new Set() };
const leaf = (tag: string, maxId: string, step = 1000, tokens: OldSegmentTag['tokens'] = []): OldSegmentTag => ({
  tag,
  maxId,
  step,
  description: '',
  stride: 1,
  offset: 0,
  tokens,
});

function current(tags: CurrentTag[], deleted: string[] = []): Current {
  return { live: new Map(tags.map((t) => [t.spec.tag, t])), deleted: new Set(deleted) };
}

function existing(
  body: Record<string, unknown>,
  marks: [number, string, number][] = [],
  live: [number, string, number][] = [],
  extra: Partial<CurrentTag> = {},
): CurrentTag {
  return {
    spec: specFromCreate(body),
    epoch: 3,
    counterFloor: 0,
    marks: new Map(marks.map(([s, sc, v]) => [markKey(s, sc), v])),
    lowestLive: new Map(live.map(([s, sc, v]) => [markKey(s, sc), v])),
    tokenHashes: new Set(),
    ...extra,
  };
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SpecProblems);
    return e.message;
  }
  assert.fail('not refused');
}

describe('planning a segment import', () => {
  it('creates new tags just above the old maximum, with the old step', () => {
    const p = planSegments('leaf', [leaf('order', '4503599627370000', 2000), leaf('huge', '10', 500_000_000)], none, hash);
    assert.deepEqual(
      p.tags.map((t) => [t.tag, t.action, t.counterFloor, t.spec.step]),
      [
        ['order', 'create', 4503599627370000, 2000],
        ['huge', 'create', 10, 100_000_000],
      ],
    );
    assert.match(p.tags[1].notes[0], /step 500000000 lowered/);
  });

  it('creates Tinyid tags with order node (tinyid-client fetches segments) and Leaf tags with order global', () => {
    const odd = { ...leaf('test_odd', '5000000001'), stride: 2, offset: 1 };
    const t = planSegments('tinyid', [leaf('test', '100'), odd], none, hash);
    assert.deepEqual(
      t.tags.map((x) => [x.tag, x.spec.order, x.spec.stride, x.spec.offset]),
      [
        ['test', 'node', 1, 0],
        ['test_odd', 'node', 2, 1],
      ],
    );
    assert.deepEqual(
      planSegments('leaf', [leaf('order', '100')], none, hash).tags.map((x) => x.spec.order),
      ['global'],
    );
  });

  it('keeps the order of a Tinyid tag idmint already has, and says when nextSegmentId cannot serve it', () => {
    const glob = existing({ tag: 'g' }, [[0, '', 10]]);
    const node = existing({ tag: 'n', order: 'node' }, [[0, '', 10]]);
    const tok = [{ name: 'tinyid-1', token: 't' }];
    const p = planSegments('tinyid', [leaf('g', '4000', 1000, tok), leaf('n', '4000', 1000, tok)], current([glob, node]), hash);
    assert.deepEqual(
      p.tags.map((x) => [x.tag, x.action, x.spec.order]),
      [
        ['g', 'raise', 'global'],
        ['n', 'raise', 'node'],
      ],
    );
    assert.match(p.tags[0].notes.join('\n'), /order global .*nextSegmentId \(tinyid-client\) is refused with code 6/);
    assert.deepEqual(p.tags[1].notes, []);
  });

  it('leaves a tag whose counters and live segments all lie above; raises one with a live segment below', () => {
    const above = existing({ tag: 'a' }, [[0, '', 5000]], [[0, '', 4001]]);
    const below = existing({ tag: 'b' }, [[0, '', 5000]], [[0, '', 1]]);
    const p = planSegments('leaf', [leaf('a', '4000'), leaf('b', '4000')], current([above, below]), hash);
    assert.deepEqual(
      p.tags.map((t) => [t.tag, t.action]),
      [
        ['a', 'unchanged'],
        ['b', 'raise'],
      ],
    );
    assert.deepEqual(p.tags[1].floors, [{ shard: 0, scope: '', counter: 4000 }]);
    assert.equal(p.tags[1].epoch, 3);
  });

  it('raises every shard of a sharded tag to the old maximum shifted past its low bits', () => {
    // 4 shards (2 bits) and 8 app bits: counter c writes IDs c << 10 | ...
    const t = existing({ tag: 's', layout: 'sharded', shards: 4, app_bits: 8, app_id: 1 }, [
      [0, '', 1],
      [2, '', 9999],
    ]);
    const p = planSegments('leaf', [leaf('s', String((5000n << 10n) | 77n))], current([t]), hash);
    assert.equal(p.tags[0].action, 'raise');
    assert.equal(p.tags[0].counterFloor, 5000);
    assert.deepEqual(
      p.tags[0].floors.map((f) => f.shard),
      [0, 1, 3],
    );
  });

  it('adds each token once, and none already present', () => {
    const t = existing({ tag: 'test' }, [[0, '', 100]], [], { tokenHashes: new Set([hash('old')]) });
    const p = planSegments(
      'tinyid',
      [
        leaf('test', '50', 10, [
          { name: 'tinyid-1', token: 'old' },
          { name: 'tinyid-2', token: 'new' },
          { name: 'tinyid-3', token: 'new' },
        ]),
      ],
      current([t]),
      hash,
    );
    assert.deepEqual(p.tags[0].tokens, [{ name: 'tinyid-2', hash: hash('new') }]);
    assert.equal(p.tags[0].action, 'unchanged');
  });

  it('creates a Tinyid biz_type that no token reaches disabled, and says so; one with a token enabled', () => {
    const p = planSegments('tinyid', [leaf('closed', '10'), leaf('served', '10', 1000, [{ name: 'tinyid-1', token: 't' }])], none, hash);
    assert.deepEqual(
      p.tags.map((t) => [t.tag, t.action, t.spec.enabled, t.tokens.length]),
      [
        ['closed', 'create', false, 0],
        ['served', 'create', true, 1],
      ],
    );
    assert.match(
      p.tags[0].notes.join('\n'),
      /no token in tiny_id_token reaches this biz_type.*created disabled.*POST \/v1\/admin\/tags\/closed\/tokens.*"enabled":true/,
    );
    assert.deepEqual(p.tags[1].notes, []);
    // Leaf has no tokens: its tags are created enabled, open as every tag without tokens.
    assert.equal(planSegments('leaf', [leaf('l', '10')], none, hash).tags[0].spec.enabled, true);
    // A tag idmint already has keeps its state; the report says when it stays open.
    const open = existing({ tag: 'closed', order: 'node' }, [[0, '', 100]]);
    const again = planSegments('tinyid', [leaf('closed', '10')], current([open]), hash);
    assert.deepEqual([again.tags[0].action, again.tags[0].spec.enabled], ['unchanged', true]);
    assert.match(again.tags[0].notes.join('\n'), /has no client token and is enabled: it stays open to every caller, as it was/);
    const off = existing({ tag: 'closed', order: 'node', enabled: false }, [[0, '', 100]]);
    const rerun = planSegments('tinyid', [leaf('closed', '10')], current([off]), hash);
    assert.deepEqual([rerun.tags[0].action, rerun.tags[0].spec.enabled], ['unchanged', false]);
    assert.match(rerun.tags[0].notes.join('\n'), /is disabled: it serves nothing until an operator enables it/);
    const guarded = existing({ tag: 'closed', order: 'node' }, [[0, '', 100]], [], { tokenHashes: new Set([hash('x')]) });
    assert.deepEqual(planSegments('tinyid', [leaf('closed', '10')], current([guarded]), hash).tags[0].notes, []);
  });

  it("names the tokens whose tiny_id_token row spells the biz_type otherwise: they open the tag, but callers must send the tag's name", () => {
    const p = planSegments(
      'tinyid',
      [
        leaf('tid_case', '10', 1000, [
          { name: 'tinyid-1', token: 'a', bizType: 'TID_CASE' },
          { name: 'tinyid-2', token: 'b', bizType: 'tid_case' },
          { name: 'tinyid-3', token: 'c', bizType: 'TID_CASE' },
        ]),
      ],
      none,
      hash,
    );
    assert.equal(p.tags[0].spec.enabled, true);
    assert.deepEqual(
      p.tags[0].tokens.map((t) => t.name),
      ['tinyid-1', 'tinyid-2', 'tinyid-3'],
    );
    assert.equal(p.tags[0].notes.length, 1);
    assert.match(p.tags[0].notes[0], /^token\(s\) tinyid-1, tinyid-3 name bizType "TID_CASE".*bizType=TID_CASE get code 5.*send bizType=tid_case$/);
  });

  it('refuses the whole import with every reason', () => {
    const snow = existing({ tag: 'snow', mode: 'snowflake' });
    const msg = refusal(() =>
      planSegments(
        'leaf',
        [leaf('ok', '1'), leaf('snow', '1'), leaf('bad name!', '1'), leaf('gone', '1'), leaf('big', '9007199254740993')],
        current([snow], ['gone']),
        hash,
      ),
    );
    assert.match(msg, /tag "snow" exists in idmint as a snowflake tag/);
    assert.match(msg, /Leaf biz_tag "bad name!" is not a valid idmint tag name/);
    assert.match(msg, /tag "gone" was deleted in idmint/);
    assert.match(msg, /old maximum 9007199254740993 leaves no room/);
  });

  it('refuses a Tinyid maximum above 2^53-1 with delta > 1, whose counter would fit but no ID', () => {
    // delta 2: the floor counter (2^52) is below idmint's largest counter, but every ID after
    // it lies above the tag's max_id_limit (2^53-1): the tag would only answer ID_SPACE_EXHAUSTED.
    const cases: [string, number, number][] = [
      ['9007199254740993', 2, 1], // 2^53 + 1
      ['9007199254740992', 2, 0], // 2^53
      ['9007199254740991', 3, 0], // 2^53 - 1 itself: no ID left above it
      ['9007199254740991', 1, 0], // 2^53 - 1 with delta 1 (as every Leaf maximum): no ID left above it
      ['18014398509481984', 4, 0], // 2^54
      ['9223372036854775807', 1000, 7], // Tinyid's largest max_id
    ];
    for (const [maxId, stride, offset] of cases) {
      const msg = refusal(() => planSegments('tinyid', [{ ...leaf('big', maxId), stride, offset }], none, hash));
      assert.match(msg, new RegExp(`old maximum ${maxId} leaves no room below the tag's max_id_limit 9007199254740991`), `${maxId} delta ${stride}`);
    }
    // Just below: the tag still has IDs to hand out (the last one, 2^53-1, for delta 2 remainder 1).
    const p = planSegments('tinyid', [{ ...leaf('edge', '9007199254740989'), stride: 2, offset: 1 }], none, hash);
    assert.equal(p.tags[0].action, 'create');
    assert.equal(p.tags[0].counterFloor, 4503599627370494);
    // A tag idmint already has with a larger max_id_limit can continue above such a maximum.
    const wide = existing({ tag: 'wide', order: 'node', stride: 2, offset: 1, max_id_limit: '9223372036854775807' }, [[0, '', 10]]);
    const r = planSegments('tinyid', [{ ...leaf('wide', '9007199254740993'), stride: 2, offset: 1 }], current([wide]), hash);
    assert.deepEqual([r.tags[0].action, r.tags[0].counterFloor], ['raise', 4503599627370496]);
  });
});

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
    assert.match(t.notes.join(), /1 saved counter\(s\) left out: under any zone id_server could have run in, their periods' IDs carry times idmint has passed/);
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
    assert.equal(planRules([rule()], rows, current([existing(body, above, [[0, scope, 4600]])]), now).tags[0].action, 'unchanged');
    assert.equal(planRules([rule()], rows, current([existing(body, above, [[0, scope, 1]])]), now).tags[0].action, 'raise');
    // Every case of the name must lie above too: a rule without the floor by folded name is raised.
    assert.equal(planRules([rule()], rows, current([existing(body, [[0, scope, 5000]], [[0, scope, 4600]])]), now).tags[0].action, 'raise');
    const other = existing({ ...body, template: 'X{yyyy}{MM}{dd}{counter:4}' });
    assert.match(
      refusal(() => planRules([rule()], rows, current([other]), now)),
      /rule "o2o" exists in idmint with template X\{yyyy\}/,
    );
  });
});

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
  const floorsOf = (p: ReturnType<typeof planRules>) => p.tags[0].floors.map((f) => `${f.shard} ${f.scope} ${f.counter}`);

  it('continues above the saved counter plus id_step x batch_save, and the margin above that', () => {
    // Counters 0, 2, 4, ...: sequence s writes 2 (s - 1); above 5000 + 2 x 100 = 5200 from sequence 2602 on.
    assert.deepEqual(floorsOf(planRules([rule()], [row('shop', 5000)], none, now)), [`0 shop/${period} 2601`, `-1 shop/${period} 2601`]);
    assert.deepEqual(floorsOf(planRules([rule()], [row('shop', 5000)], none, now, { margin: 1000 })), [`0 shop/${period} 3101`, `-1 shop/${period} 3101`]);
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
    const p = planRules([rule()], [row('fast', 3000, sec + 86400), row('old', 9000, sec - 2 * 86400), row('old', 10, sec - 3 * 86400)], none, now);
    assert.deepEqual(floorsOf(p), [`0 fast/${period} 1601`, `-1 fast/${period} 1601`, `0 fast/${period + 1} 1601`, `-1 fast/${period + 1} 1601`]);
    const notes = p.tags[0].notes.join('\n');
    assert.match(notes, /counter table row \(rule "o2o", app "fast", node_offset 0, counter 3000, update_time \d+\) was saved after the import's time/);
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
      { nodeOffset: 0, counter: 5200, updateTime: sec, ruleName: 'o2o', appName: 'test', source: 'id_server.20261123.log:2' },
      { nodeOffset: 0, counter: 5400, updateTime: sec, ruleName: 'o2o', appName: 'test', source: 'id_server.20261123.log:3 (db failed)' },
      { nodeOffset: 1, counter: 71, updateTime: sec, ruleName: 'task', appName: 'Shop', source: 'id_server.20261123.log:5 (db failed)' },
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
    assert.deepEqual(parseIdServerLog('x.log', "a\nwarn,db failed sql:replace into counter set rule_name='o2o',app_name='t',counter=5"), []);
  });
});

describe('floors of interleaved counters', () => {
  const interleaved = (body: Record<string, unknown>, stride: number, offset: number) => ({ ...specFromCreate(body), stride, offset }) as TagSpec;

  it('the counter after a segment floor writes the first sequence value above the old maximum', () => {
    const rand = rng(SEED);
    for (let n = 0; n < 5000; n++) {
      const stride = rand.int(1, 9);
      const offset = rand.int(0, stride - 1);
      const maxId = BigInt(rand.int(0, 1e12));
      const f = BigInt(segmentFloor(interleaved({ tag: 't' }, stride, offset), maxId));
      const seq = (k: bigint) => k * BigInt(stride) + BigInt(offset);
      assert.ok(seq(f + 1n) > maxId, `stride ${stride} offset ${offset} max ${maxId}: floor ${f}`);
      assert.ok(f === 0n || seq(f) <= maxId, `stride ${stride} offset ${offset} max ${maxId}: floor ${f} skips values`);
    }
  });

  it('the sequence after a rule floor writes the first counter of the residue above the saved one', () => {
    const rand = rng(SEED + 1);
    for (let n = 0; n < 5000; n++) {
      const stride = rand.int(1, 5);
      const offset = rand.int(0, stride - 1);
      const min = rand.int(0, 20);
      const max = min + rand.int(stride, 500);
      const spec = interleaved({ tag: 'r', mode: 'rule', template: '{counter:4}', min_counter: min, max_counter: max }, stride, offset);
      const saved = rand.int(0, max + 10);
      const f = ruleFloor(specOfMode(spec, 'rule', 'the test'), saved);
      // Counters of the residue from min on, written independently of the code under test.
      const values: number[] = [];
      for (let v = min; v <= max; v++) if (v % stride === offset) values.push(v);
      assert.equal(f, values.filter((v) => v <= saved).length, `stride ${stride} offset ${offset} min ${min} saved ${saved}`);
    }
  });
});
