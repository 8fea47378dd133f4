// Rendering rule templates: every token, the id_server example, salts, app names and the
// longest ID, and a property test that accepted templates never render one ID twice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localParts, periodOf, type LocalParts } from '../../src/core/period.js';
import {
  APP_NAME,
  compileTemplate,
  isValidAppName,
  isValidSalt,
  SALT,
  TemplateProblems,
  YEAR_SECONDS,
  type RuleLimits,
} from '../../src/core/rule-template.js';
import { render } from '../../src/core/rule-render.js';
import { rng, SEED } from '../../tools/prng.js';
import { DAILY, NEVER } from '../helpers/rule-limits.js';

const PARTS: LocalParts = { year: 2025, month: 5, day: 14, hour: 9, minute: 8, second: 7, millisecond: 6 };

const one = (template: string, rule: RuleLimits = NEVER, counter = 42, salt = 'S', app = 'app', parts = PARTS) =>
  render(compileTemplate(template, rule), { counter, salt, app, parts });

describe('rule templates: tokens', () => {
  const cases: [token: string, rendered: string][] = [
    ['{yyyy}', '2025'],
    ['{yy}', '25'],
    ['{year%10}', '5'],
    ['{year%100}', '25'],
    ['{MM}', '05'],
    ['{dd}', '14'],
    ['{HH}', '09'],
    ['{mm}', '08'],
    ['{ss}', '07'],
    ['{SSS}', '006'],
    ['{salt}', 'S'],
    ['{app}', 'app'],
  ];
  for (const [token, rendered] of cases) {
    it(`renders ${token}`, () => assert.equal(one(`${token}-{counter:4}`), `${rendered}-0042`));
  }

  it('renders {counter} unpadded and {counter:N} zero-padded', () => {
    assert.equal(one('{counter}', NEVER, 7), '7');
    assert.equal(one('{counter:6}', NEVER, 7), '000007');
    assert.equal(one('{counter:1}', { ...NEVER, maxCounter: 9 }, 7), '7');
    assert.equal(one('{counter:18}', NEVER, 1), '000000000000000001');
    assert.equal(one('{counter:4}', NEVER, 9999), '9999');
  });

  it('pads small years and month/day/time values', () => {
    const parts = { year: 2001, month: 1, day: 2, hour: 0, minute: 0, second: 0, millisecond: 0 };
    assert.equal(
      one('{yyyy}{yy}{year%100}{year%10}{MM}{dd}{HH}{mm}{ss}{SSS}{counter}', NEVER, 1, '', 'a', parts),
      '2001010110102000000000' + '1',
    );
    assert.equal(one('{yyyy}|{counter}', NEVER, 1, '', 'a', { ...parts, year: 999 }), '0999|1');
  });

  it('treats other text as literal and {{ }} as braces', () => {
    assert.equal(one('O-{{x}}_{counter}.z'), 'O-{x}_42.z');
    assert.equal(one('{{{counter}}}'), '{42}');
    assert.equal(one('{{counter}}{counter}'), '{counter}42');
  });

  it('renders an empty salt as nothing and a missing salt as empty', () => {
    const t = compileTemplate('{salt}:{counter:4}', NEVER);
    assert.equal(render(t, { counter: 3, app: 'a', parts: PARTS }), ':0003');
    assert.equal(render(t, { counter: 3, salt: '', app: 'a', parts: PARTS }), ':0003');
  });

  it('refuses to render a counter outside the rule', () => {
    const t = compileTemplate('{counter:4}', { minCounter: 10, maxCounter: 9999, resetSeconds: 0 });
    assert.throws(() => render(t, { counter: 9, app: 'a', parts: PARTS }), RangeError);
    assert.throws(() => render(t, { counter: 10_000, app: 'a', parts: PARTS }), RangeError);
    assert.throws(() => render(t, { counter: 10.5, app: 'a', parts: PARTS }), RangeError);
    assert.equal(render(t, { counter: 10, app: 'a', parts: PARTS }), '0010');
  });
});

describe('rule templates: the id_server example', () => {
  const T = '{year%10}{MM}{dd}{counter:4}';

  it('is accepted without force, unique for about 10 years', () => {
    const t = compileTemplate(T, DAILY);
    assert.equal(t.uniqueForSeconds, 10 * YEAR_SECONDS);
    assert.equal(t.uniqueFor, 'about 10 years');
    assert.equal(t.finestTimeToken, '{dd}');
    assert.equal(t.counterWidth, 4);
    assert.equal(t.maxLength, 9);
    assert.equal(t.uniqueAcrossApps, false);
  });

  it('renders 505140001 for 2025-05-14 with counter 1', () => {
    const t = compileTemplate(T, DAILY);
    assert.equal(
      render(t, { counter: 1, app: 'test', parts: localParts(Date.UTC(2025, 4, 14, 12), 'UTC') }),
      '505140001',
    );
    // 2025-05-13 16:30 UTC is already 2025-05-14 00:30 in Shanghai.
    assert.equal(
      render(t, { counter: 1, app: 'test', parts: localParts(Date.UTC(2025, 4, 13, 16, 30), 'Asia/Shanghai') }),
      '505140001',
    );
    assert.equal(
      render(t, { counter: 1, app: 'test', parts: localParts(Date.UTC(2025, 4, 13, 16, 30), 'UTC') }),
      '505130001',
    );
  });

  it('renders id_server order_id.lua as O{yy}{MM}{dd}{counter:6}', () => {
    const t = compileTemplate('O{yy}{MM}{dd}{counter:6}', { minCounter: 0, maxCounter: 999_999, resetSeconds: 86_400 });
    assert.equal(t.uniqueFor, 'about 100 years');
    assert.equal(render(t, { counter: 12, app: 'x', parts: PARTS }), 'O250514000012');
  });
});

describe('rule templates: salts, app names, lengths', () => {
  it('validates salts and app names', () => {
    for (const s of ['', 'a', 'A-z_0.9', 'x'.repeat(64)]) assert.ok(isValidSalt(s), s);
    for (const s of ['x'.repeat(65), 'a b', 'é', 'a/b', '{', null, 5]) assert.ok(!isValidSalt(s), String(s));
    for (const s of ['a', 'order-app_1.2', 'x'.repeat(64)]) assert.ok(isValidAppName(s), s);
    for (const s of ['', 'x'.repeat(65), 'a b', undefined]) assert.ok(!isValidAppName(s), String(s));
    assert.equal(SALT.source, '^[A-Za-z0-9_.-]{0,64}$');
    assert.equal(APP_NAME.source, '^[A-Za-z0-9_.-]{1,64}$');
  });

  it('reports the longest ID and whether apps are told apart', () => {
    const t = compileTemplate('{app}-{yyyy}{MM}{dd}-{counter:6}', DAILY);
    assert.equal(t.maxLength, 64 + 1 + 8 + 1 + 6);
    assert.equal(t.uniqueAcrossApps, true);
    assert.equal(compileTemplate('{app}{salt}{yyyy}{MM}{dd}{counter:6}', DAILY).uniqueAcrossApps, false);
    assert.equal(compileTemplate('{app}{yyyy}{MM}{dd}{counter}', DAILY).uniqueAcrossApps, false);
    assert.equal(compileTemplate('{yyyy}{MM}{dd}{counter}', DAILY).maxLength, 8 + 4);
  });
});

describe('rule templates: accepted templates never render one ID twice (property)', () => {
  const r = rng(SEED);
  const POOL = [
    '{yyyy}',
    '{yy}',
    '{year%10}',
    '{MM}',
    '{dd}',
    '{HH}',
    '{mm}',
    '{ss}',
    '{SSS}',
    '{salt}',
    '{salt}',
    '-',
    'A',
    '7',
    '{app}',
  ];
  const RESETS = [0, 1, 60, 90, 3600, 5400, 7200, 86_400];
  const ZONES = ['UTC', 'Asia/Shanghai', 'America/New_York'];
  const START = Date.UTC(2024, 9, 30); // spans the 2024-11-03 fall-back in New York

  it(`holds for random templates, counters, salts and times (seed ${SEED})`, () => {
    let accepted = 0;
    for (let n = 0; n < 400; n++) {
      const pieces = Array.from({ length: r.int(0, 6) }, () => r.pick(POOL));
      const counter = r.pick(['{counter}', '{counter}', '{counter:2}', '{counter:3}']);
      pieces.splice(r.int(0, pieces.length), 0, counter);
      const template = pieces.join('');
      const rule: RuleLimits = { minCounter: r.int(0, 3), maxCounter: r.int(4, 30), resetSeconds: r.pick(RESETS) };
      let t;
      try {
        t = compileTemplate(template, rule, { force: true });
      } catch (e) {
        assert.ok(e instanceof TemplateProblems);
        continue;
      }
      accepted++;
      const zone = r.pick(ZONES);
      // Stay within the horizon: two times closer than it never share a rendering.
      const windowMs = Math.min(t.uniqueForSeconds * 1000 * 0.99, 40 * 86_400_000);
      const seen = new Map<string, string>();
      const issued = new Set<string>();
      // Half the IDs at a few instants, so many share a period.
      const hot = Array.from({ length: 3 }, () => START + Math.floor(r.next() * windowMs));
      for (let k = 0; k < 200; k++) {
        const ms = r.next() < 0.5 ? r.pick(hot) : START + Math.floor(r.next() * windowMs);
        const c = r.int(rule.minCounter, rule.maxCounter);
        const period = periodOf(ms, zone, rule.resetSeconds);
        const key = `${period}/${c}`;
        if (issued.has(key)) continue; // a counter is issued once per period
        issued.add(key);
        const salt = Array.from({ length: r.int(0, 2) }, () => r.pick(['1', '2', '-', 'a'])).join('');
        const id = render(t, { counter: c, salt, app: 'app', parts: localParts(ms, zone) });
        const prev = seen.get(id);
        assert.equal(
          prev,
          undefined,
          `${template} ${JSON.stringify(rule)} ${zone}: ${id} rendered for ${prev} and ${key}`,
        );
        seen.set(id, key);
      }
    }
    assert.ok(accepted > 40, `only ${accepted} random templates were accepted`);
  });
});
