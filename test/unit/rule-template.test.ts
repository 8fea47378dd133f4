// Rule templates: every token, the id_server example, every validation message, the
// uniqueness horizon, and a property test that accepted templates never render one ID twice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localParts, periodOf, type LocalParts } from '../../src/core/period.js';
import {
  APP_NAME,
  compileTemplate,
  describeSeconds,
  isValidAppName,
  isValidSalt,
  MAX_TEMPLATE_LENGTH,
  SALT,
  TemplateProblems,
  YEAR_SECONDS,
  type RuleLimits,
} from '../../src/core/rule-template.js';
import { render } from '../../src/core/rule-render.js';
import { SpecProblems } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';

const DAILY: RuleLimits = { minCounter: 0, maxCounter: 9999, resetSeconds: 86_400 };
const NEVER: RuleLimits = { minCounter: 0, maxCounter: 9999, resetSeconds: 0 };
const PARTS: LocalParts = { year: 2025, month: 5, day: 14, hour: 9, minute: 8, second: 7, millisecond: 6 };

function problems(template: string, rule: RuleLimits = DAILY, force = false): string[] {
  try {
    compileTemplate(template, rule, { force });
  } catch (e) {
    assert.ok(e instanceof TemplateProblems, `expected TemplateProblems, got ${String(e)}`);
    assert.ok(e instanceof SpecProblems, 'admin routes map SpecProblems to INVALID_ARGUMENT');
    assert.equal(e.message, e.problems.join('; '));
    return e.problems;
  }
  assert.fail(`template ${JSON.stringify(template)} was accepted`);
}

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

describe('rule templates: validation', () => {
  it('reports an unknown token with its position', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{yyyyy}{counter:4}'), ['unknown token {yyyyy} at 14']);
    assert.deepEqual(problems('{YYYY}{MM}{dd}{counter:4}', NEVER), [
      'unknown token {YYYY} at 0 (did you mean {yyyy}?)',
    ]);
    assert.deepEqual(problems('{yyyy}{mm}{DD}{counter:4}', NEVER), ['unknown token {DD} at 10 (did you mean {dd}?)']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}{ yyyy}'), ['unknown token { yyyy} at 25']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}{constructor}'), ['unknown token {constructor} at 25']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}{}'), ['empty token {} at 25']);
  });

  it('checks the counter width against max_counter', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:3}'), [
      '{counter:3} is too narrow for max_counter 9999 (needs 4)',
    ]);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:0}'), ['{counter:0} at 14: the width must be from 1 to 18']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:19}'), ['{counter:19} at 14: the width must be from 1 to 18']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:}'), ['{counter:} at 14: the width must be from 1 to 18']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:x}'), ['{counter:x} at 14: the width must be from 1 to 18']);
    compileTemplate('{yyyy}{MM}{dd}{counter:5}', DAILY);
  });

  it('needs exactly one {counter}', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}'), ['a template needs exactly one {counter} token (found none)']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter}{counter:4}'), [
      'a template needs exactly one {counter} token (found 2, at 14, 23)',
    ]);
  });

  it('finds unbalanced braces', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}{'), ['unclosed { at 25 (write {{ for a literal brace)']);
    assert.deepEqual(problems('{yyyy{yy}{MM}{dd}{counter:4}'), ['unclosed { at 0 (write {{ for a literal brace)']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}}{counter:4}'), ['unmatched } at 14 (write }} for a literal brace)']);
  });

  it('refuses empty, overlong and non-printable templates', () => {
    assert.deepEqual(problems(''), ['template is empty']);
    assert.deepEqual(problems(`{yyyy}{MM}{dd}{counter:4}${'x'.repeat(MAX_TEMPLATE_LENGTH)}`), [
      `template is ${MAX_TEMPLATE_LENGTH + 25} characters long; the limit is ${MAX_TEMPLATE_LENGTH}`,
    ]);
    compileTemplate(`{yyyy}{MM}{dd}{counter:4}${'x'.repeat(MAX_TEMPLATE_LENGTH - 25)}`, DAILY);
    assert.deepEqual(problems('{yyyy}{MM}{dd}é{counter:4}'), ['character U+00E9 at 14 is not printable ASCII']);
    assert.deepEqual(problems('{yyyy}{MM}{dd}\t{counter:4}😀'), [
      'character U+0009 at 14 is not printable ASCII',
      'character U+1F600 at 26 is not printable ASCII',
    ]);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}{\n}'), ['unknown token {\\u{a}} at 25']);
    assert.deepEqual(problems(42 as unknown as string), ['template must be a string']);
  });

  it('refuses an unpadded counter next to a salt', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{salt}{counter}'), [
      'an unpadded {counter} cannot share a template with {salt} (salts vary in length, so two IDs could read the same): use {counter:N}',
    ]);
    compileTemplate('{yyyy}{MM}{dd}{salt}{counter:4}', DAILY);
    compileTemplate('{yyyy}{MM}{dd}{app}{counter}', DAILY);
  });

  it('checks the rule numbers', () => {
    assert.deepEqual(problems('{counter}', { minCounter: -1, maxCounter: 10, resetSeconds: 0 }), [
      'min_counter must be an integer from 0 to 9007199254740991',
    ]);
    assert.deepEqual(problems('{counter}', { minCounter: 5, maxCounter: 4, resetSeconds: 0 }), [
      'max_counter must not be below min_counter',
    ]);
    assert.deepEqual(problems('{counter}', { minCounter: 0, maxCounter: 2 ** 53, resetSeconds: 0 }), [
      'max_counter must be an integer from 0 to 9007199254740991',
    ]);
    assert.deepEqual(problems('{counter}', { minCounter: 0, maxCounter: 9, resetSeconds: 1.5 }), [
      'reset_seconds must be a whole number of seconds, 0 or more',
    ]);
    assert.deepEqual(problems('{counter}', { minCounter: 0, maxCounter: 9, resetSeconds: -1 }), [
      'reset_seconds must be a whole number of seconds, 0 or more',
    ]);
  });

  it('collects every problem at once', () => {
    const p = problems('{yyyyy}{counter:3}{MM}}x{', DAILY);
    assert.deepEqual(p, [
      'unknown token {yyyyy} at 0',
      'unmatched } at 22 (write }} for a literal brace)',
      'unclosed { at 24 (write {{ for a literal brace)',
      '{counter:3} is too narrow for max_counter 9999 (needs 4)',
      'reset_seconds 86400 needs a time token of {dd} or finer, or different periods would render the same IDs; the finest here is {MM}',
    ]);
  });
});

describe('rule templates: time tokens against the reset period', () => {
  const rule = (resetSeconds: number): RuleLimits => ({ minCounter: 0, maxCounter: 9999, resetSeconds });
  const periodProblem = (r: number, needs: string, has: string) =>
    `reset_seconds ${r} needs a time token of ${needs} or finer, or different periods would render the same IDs; ${has}`;

  it('a daily reset needs {dd} or finer', () => {
    assert.deepEqual(problems('{yyyy}{MM}{counter:4}', rule(86_400)), [
      periodProblem(86_400, '{dd}', 'the finest here is {MM}'),
    ]);
    assert.deepEqual(problems('{counter:4}', rule(86_400)), [
      periodProblem(86_400, '{dd}', 'this template has no time token'),
    ]);
    assert.deepEqual(problems('{yyyy}{counter:4}', rule(86_400)), [
      periodProblem(86_400, '{dd}', 'the finest here is {yyyy}'),
    ]);
    for (const t of [
      '{yyyy}{MM}{dd}{counter:4}',
      '{yyyy}{MM}{dd}{HH}{counter:4}',
      '{yyyy}{MM}{dd}{HH}{mm}{ss}{SSS}{counter:4}',
    ]) {
      compileTemplate(t, rule(86_400));
    }
    compileTemplate('{yyyy}{MM}{dd}{counter:4}', rule(7 * 86_400));
  });

  it('an hourly reset needs {HH} or finer', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}', rule(3600)), [
      periodProblem(3600, '{HH}', 'the finest here is {dd}'),
    ]);
    compileTemplate('{yyyy}{MM}{dd}{HH}{counter:4}', rule(3600));
    compileTemplate('{yyyy}{MM}{dd}{HH}{counter:4}', rule(7200));
  });

  it('a period that splits an hour or a minute needs a finer token', () => {
    assert.deepEqual(problems('{yyyy}{MM}{dd}{HH}{counter:4}', rule(5400)), [
      periodProblem(5400, '{mm}', 'the finest here is {HH}'),
    ]);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{HH}{mm}{counter:4}', rule(90)), [
      periodProblem(90, '{ss}', 'the finest here is {mm}'),
    ]);
    assert.deepEqual(problems('{yyyy}{MM}{dd}{counter:4}', rule(90_000)), [
      periodProblem(90_000, '{HH}', 'the finest here is {dd}'),
    ]);
    compileTemplate('{yyyy}{MM}{dd}{HH}{mm}{counter:4}', rule(5400));
    compileTemplate('{yyyy}{MM}{dd}{HH}{mm}{ss}{counter:4}', rule(1));
    compileTemplate('{yyyy}{MM}{dd}{HH}{mm}{ss}{SSS}{counter:4}', rule(1));
  });

  it('a never-reset counter needs no time token and is unique without bound', () => {
    const t = compileTemplate('{counter}', NEVER);
    assert.equal(t.uniqueForSeconds, Number.POSITIVE_INFINITY);
    assert.equal(t.finestTimeToken, null);
    assert.equal(compileTemplate('{MM}{counter:4}', NEVER).uniqueFor, 'unbounded');
  });
});

describe('rule templates: uniqueness horizon', () => {
  const horizon = (t: string, r = 86_400) =>
    compileTemplate(t, { minCounter: 0, maxCounter: 9999, resetSeconds: r }, { force: true }).uniqueForSeconds;
  const DAY = 86_400;

  it('measures how long the time tokens take to wrap round', () => {
    assert.equal(horizon('{yyyy}{MM}{dd}{counter:4}'), Number.POSITIVE_INFINITY);
    assert.equal(horizon('{yy}{MM}{dd}{counter:4}'), 100 * YEAR_SECONDS);
    assert.equal(horizon('{year%100}{MM}{dd}{counter:4}'), 100 * YEAR_SECONDS);
    assert.equal(horizon('{year%10}{MM}{dd}{counter:4}'), 10 * YEAR_SECONDS);
    assert.equal(horizon('{yy}{year%10}{MM}{dd}{counter:4}'), 100 * YEAR_SECONDS);
    assert.equal(horizon('{MM}{dd}{counter:4}'), YEAR_SECONDS);
    assert.equal(horizon('{yyyy}{dd}{counter:4}'), 28 * DAY);
    assert.equal(horizon('{dd}{HH}{counter:4}', 3600), 28 * DAY);
    assert.equal(horizon('{HH}{counter:4}', 3600), DAY);
    assert.equal(horizon('{mm}{counter:4}', 60), 3600);
    assert.equal(horizon('{ss}{counter:4}', 1), 60);
    assert.equal(horizon('{SSS}{counter:4}', 1), 1);
    assert.equal(horizon('{yyyy}{MM}{dd}{HH}{mm}{ss}{SSS}{counter:4}', 1), Number.POSITIVE_INFINITY);
  });

  it('refuses under 10 years unless forced', () => {
    assert.deepEqual(problems('{MM}{dd}{counter:4}'), [
      'IDs of this template repeat after about 1 year (it has {MM} but no year token), under 10 years; add coarser time tokens, or send "force": true to accept it',
    ]);
    assert.deepEqual(problems('{yyyy}{dd}{counter:4}'), [
      'IDs of this template repeat after about 28 days (it has {dd} but no {MM} token), under 10 years; add coarser time tokens, or send "force": true to accept it',
    ]);
    assert.deepEqual(problems('{HH}{counter:4}', { ...DAILY, resetSeconds: 3600 }), [
      'IDs of this template repeat after about 1 day (it has {HH} but no {dd} token), under 10 years; add coarser time tokens, or send "force": true to accept it',
    ]);
    const forced = compileTemplate('{MM}{dd}{counter:4}', DAILY, { force: true });
    assert.equal(forced.uniqueFor, 'about 1 year');
  });

  it('never lets force through a template that cannot tell periods apart', () => {
    assert.deepEqual(problems('{yyyy}{MM}{counter:4}', DAILY, true).length, 1);
  });

  it('describes durations for people', () => {
    assert.equal(describeSeconds(Number.POSITIVE_INFINITY), 'unbounded');
    assert.equal(describeSeconds(10 * YEAR_SECONDS), 'about 10 years');
    assert.equal(describeSeconds(28 * 86_400), 'about 28 days');
    assert.equal(describeSeconds(86_400), 'about 1 day');
    assert.equal(describeSeconds(7200), 'about 2 hours');
    assert.equal(describeSeconds(60), 'about 1 minute');
    assert.equal(describeSeconds(5), 'about 5 seconds');
    assert.equal(describeSeconds(0.001), 'about 1 millisecond');
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
