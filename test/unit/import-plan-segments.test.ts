// Planning a Leaf or Tinyid import (pure): which segment tags are created, raised or left,
// with which order, tokens and counter floors, and every reason to refuse the import.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planSegments } from '../../src/core/import-plan-segments.js';
import { current, existing, hash, leaf, none, refusal } from '../helpers/import-plan-current.js';

describe('planning a segment import', () => {
  it('creates new tags just above the old maximum, with the old step', () => {
    const p = planSegments(
      'leaf',
      [leaf('order', '4503599627370000', 2000), leaf('huge', '10', 500_000_000)],
      none,
      hash,
    );
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
    const p = planSegments(
      'tinyid',
      [leaf('g', '4000', 1000, tok), leaf('n', '4000', 1000, tok)],
      current([glob, node]),
      hash,
    );
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
    const p = planSegments(
      'tinyid',
      [leaf('closed', '10'), leaf('served', '10', 1000, [{ name: 'tinyid-1', token: 't' }])],
      none,
      hash,
    );
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
    assert.match(
      again.tags[0].notes.join('\n'),
      /has no client token and is enabled: it stays open to every caller, as it was/,
    );
    const off = existing({ tag: 'closed', order: 'node', enabled: false }, [[0, '', 100]]);
    const rerun = planSegments('tinyid', [leaf('closed', '10')], current([off]), hash);
    assert.deepEqual([rerun.tags[0].action, rerun.tags[0].spec.enabled], ['unchanged', false]);
    assert.match(rerun.tags[0].notes.join('\n'), /is disabled: it serves nothing until an operator enables it/);
    const guarded = existing({ tag: 'closed', order: 'node' }, [[0, '', 100]], [], {
      tokenHashes: new Set([hash('x')]),
    });
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
    assert.match(
      p.tags[0].notes[0],
      /^token\(s\) tinyid-1, tinyid-3 name bizType "TID_CASE".*bizType=TID_CASE get code 5.*send bizType=tid_case$/,
    );
  });

  it('refuses the whole import with every reason', () => {
    const snow = existing({ tag: 'snow', mode: 'snowflake' });
    const msg = refusal(() =>
      planSegments(
        'leaf',
        [
          leaf('ok', '1'),
          leaf('snow', '1'),
          leaf('bad name!', '1'),
          leaf('gone', '1'),
          leaf('big', '9007199254740993'),
        ],
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
      assert.match(
        msg,
        new RegExp(`old maximum ${maxId} leaves no room below the tag's max_id_limit 9007199254740991`),
        `${maxId} delta ${stride}`,
      );
    }
    // Just below: the tag still has IDs to hand out (the last one, 2^53-1, for delta 2 remainder 1).
    const p = planSegments('tinyid', [{ ...leaf('edge', '9007199254740989'), stride: 2, offset: 1 }], none, hash);
    assert.equal(p.tags[0].action, 'create');
    assert.equal(p.tags[0].counterFloor, 4503599627370494);
    // A tag idmint already has with a larger max_id_limit can continue above such a maximum.
    const wide = existing({ tag: 'wide', order: 'node', stride: 2, offset: 1, max_id_limit: '9223372036854775807' }, [
      [0, '', 10],
    ]);
    const r = planSegments(
      'tinyid',
      [{ ...leaf('wide', '9007199254740993'), stride: 2, offset: 1 }],
      current([wide]),
      hash,
    );
    assert.deepEqual([r.tags[0].action, r.tags[0].counterFloor], ['raise', 4503599627370496]);
  });
});
