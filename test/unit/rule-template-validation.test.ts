// Rule template validation: every message, the time tokens a reset period needs, and the
// uniqueness horizon (under 10 years refused unless forced) as durations for people.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compileTemplate,
  describeSeconds,
  MAX_TEMPLATE_LENGTH,
  TemplateProblems,
  YEAR_SECONDS,
  type RuleLimits,
} from '../../src/core/rule-template.js';
import { SpecProblems } from '../../src/core/tag-spec.js';
import { DAILY, NEVER } from '../helpers/rule-limits.js';

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
