// The template language of rule IDs (`{year%10}{MM}{dd}{counter:4}` → `505140001`): parsing
// and validation when a rule is saved into a precompiled array of pieces, and how long a
// template's IDs stay unique. Rendering (rule-render.ts) walks the pieces: no parsing and no
// regex per ID; whether two templates can render the same ID is rule-template-disjoint.ts.
//
// Why the checks keep IDs unique within a (rule, app): the counter never repeats inside a
// period, every part of an ID but the counter (and the salt) has a fixed width, so the
// counter can be read back from the ID; and the time tokens name the period, because the
// finest one is at least as fine as the reset period (periods and tokens both follow the
// local wall clock, see period.ts). They name it until the tokens wrap round
// (`uniqueForSeconds`), which must be at least 10 years unless the caller forces it.
import { MAX_COUNTER } from './layout.js';
import { MIN_LIFETIME_YEARS, SpecProblems } from './spec-problems.js';

export const MAX_TEMPLATE_LENGTH = 256;
export const MAX_COUNTER_WIDTH = 18;
/** A year as the uniqueness horizon counts it. */
export const YEAR_SECONDS = 365.25 * 86_400;
/** IDs must stay unique at least this long unless the rule is forced. */
export const MIN_UNIQUE_YEARS = MIN_LIFETIME_YEARS;

export const SALT = /^[A-Za-z0-9_.-]{0,64}$/;
export const APP_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const isValidSalt = (s: unknown): s is string => typeof s === 'string' && SALT.test(s);
export const isValidAppName = (s: unknown): s is string => typeof s === 'string' && APP_NAME.test(s);
const MAX_SALT_LENGTH = 64;
const MAX_APP_LENGTH = 64;

export interface RuleLimits {
  readonly minCounter: number;
  readonly maxCounter: number;
  /** Length of a counter period in seconds of local wall-clock time; 0 = never reset. */
  readonly resetSeconds: number;
}

/** Fields of local time, finest first. */
type Field = 'millisecond' | 'second' | 'minute' | 'hour' | 'day' | 'month' | 'year';
const FIELDS: readonly Field[] = ['millisecond', 'second', 'minute', 'hour', 'day', 'month', 'year'];
/** Length of each field's unit in ms; months and years vary and align with no fixed period. */
const UNIT_MS: Record<Field, number> = {
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  month: Number.POSITIVE_INFINITY,
  year: Number.POSITIVE_INFINITY,
};
/** Shortest span after which a field's values repeat when the next coarser field is absent. */
const CYCLE_SECONDS: Record<Field, number> = {
  millisecond: 0.001,
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  month: 28 * 86_400,
  year: YEAR_SECONDS,
};
/** The token that names each field, for messages. */
const FIELD_TOKEN: Record<Field, string> = {
  millisecond: '{SSS}',
  second: '{ss}',
  minute: '{mm}',
  hour: '{HH}',
  day: '{dd}',
  month: '{MM}',
  year: '{yyyy}',
};

/** Piece kinds (numbers, so render's switch stays cheap). */
export const PIECE = {
  LITERAL: 0,
  YYYY: 1,
  YY: 2,
  Y10: 3,
  MONTH: 4,
  DAY: 5,
  HOUR: 6,
  MINUTE: 7,
  SECOND: 8,
  MILLI: 9,
  COUNTER: 10,
  SALT: 11,
  APP: 12,
} as const;
export type Kind = (typeof PIECE)[keyof typeof PIECE];

interface TokenDef {
  readonly kind: Kind;
  readonly field?: Field;
  /** Years until a year token wraps round (Infinity for the full year). */
  readonly yearCycle?: number;
  /** Rendered width (fixed-width tokens). */
  readonly width: number;
  readonly meaning: string;
}

/** Every token but {counter:N}. */
export const TOKENS: Readonly<Record<string, TokenDef>> = {
  yyyy: { kind: PIECE.YYYY, field: 'year', yearCycle: Number.POSITIVE_INFINITY, width: 4, meaning: 'year, 4 digits' },
  yy: { kind: PIECE.YY, field: 'year', yearCycle: 100, width: 2, meaning: 'year % 100, 2 digits' },
  'year%100': {
    kind: PIECE.YY,
    field: 'year',
    yearCycle: 100,
    width: 2,
    meaning: 'year % 100, 2 digits (same as {yy})',
  },
  'year%10': { kind: PIECE.Y10, field: 'year', yearCycle: 10, width: 1, meaning: 'year % 10, 1 digit' },
  MM: { kind: PIECE.MONTH, field: 'month', width: 2, meaning: 'month 01-12' },
  dd: { kind: PIECE.DAY, field: 'day', width: 2, meaning: 'day of the month 01-31' },
  HH: { kind: PIECE.HOUR, field: 'hour', width: 2, meaning: 'hour 00-23' },
  mm: { kind: PIECE.MINUTE, field: 'minute', width: 2, meaning: 'minute 00-59' },
  ss: { kind: PIECE.SECOND, field: 'second', width: 2, meaning: 'second 00-59' },
  SSS: { kind: PIECE.MILLI, field: 'millisecond', width: 3, meaning: 'millisecond 000-999' },
  counter: { kind: PIECE.COUNTER, width: 0, meaning: 'the counter, unpadded' },
  salt: { kind: PIECE.SALT, width: MAX_SALT_LENGTH, meaning: "the caller's salt ([A-Za-z0-9_.-]{0,64})" },
  app: { kind: PIECE.APP, width: MAX_APP_LENGTH, meaning: 'the app name' },
};

export interface Piece {
  readonly kind: Kind;
  /** The text of a literal piece. */
  readonly text: string;
  /** Zero-padded width of the counter; 0 = unpadded. */
  readonly width: number;
}

export interface CompiledTemplate {
  readonly source: string;
  readonly rule: RuleLimits;
  readonly pieces: readonly Piece[];
  /** Width of {counter:N}; 0 for an unpadded {counter}. */
  readonly counterWidth: number;
  /** The finest time token, e.g. "{dd}"; null when the template has none. */
  readonly finestTimeToken: string | null;
  /**
   * How long, in seconds, two different periods never render the same IDs: Infinity when
   * unbounded ({yyyy}, or resetSeconds 0), about 10 years for {year%10}{MM}{dd}. JSON turns
   * Infinity into null.
   */
  readonly uniqueForSeconds: number;
  /** uniqueForSeconds for people: "about 10 years", "unbounded". */
  readonly uniqueFor: string;
  /** True when IDs of different apps can never be equal ({app} in a template that reads back). */
  readonly uniqueAcrossApps: boolean;
  /** Longest rendered ID, with a 64-character salt and app name. */
  readonly maxLength: number;
}

export interface CompileOptions {
  /** Accept a template whose IDs stay unique for under MIN_UNIQUE_YEARS. */
  readonly force?: boolean;
}

/** A template refused: every problem found, each with its position where it has one. */
export class TemplateProblems extends SpecProblems {}

/** "about 10 years", "about 28 days", "unbounded". */
export function describeSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return 'unbounded';
  const about = (n: number, unit: string) => `about ${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds >= YEAR_SECONDS) return about(Math.round((seconds / YEAR_SECONDS) * 10) / 10, 'year');
  if (seconds >= 86_400) return about(Math.round(seconds / 86_400), 'day');
  if (seconds >= 3600) return about(Math.round(seconds / 3600), 'hour');
  if (seconds >= 60) return about(Math.round(seconds / 60), 'minute');
  if (seconds >= 1) return about(Math.round(seconds), 'second');
  return about(Math.round(seconds * 1000), 'millisecond');
}

const digits = (n: number): number => String(n).length;

function ruleProblems(rule: RuleLimits, problems: string[]): boolean {
  const before = problems.length;
  const { minCounter, maxCounter, resetSeconds } = rule;
  if (!Number.isSafeInteger(minCounter) || minCounter < 0)
    problems.push(`min_counter must be an integer from 0 to ${MAX_COUNTER}`);
  if (!Number.isSafeInteger(maxCounter) || maxCounter < 0)
    problems.push(`max_counter must be an integer from 0 to ${MAX_COUNTER}`);
  else if (Number.isSafeInteger(minCounter) && maxCounter < minCounter)
    problems.push('max_counter must not be below min_counter');
  if (!Number.isSafeInteger(resetSeconds) || resetSeconds < 0)
    problems.push('reset_seconds must be a whole number of seconds, 0 or more');
  return problems.length === before;
}

function describeChar(text: string, at: number): string {
  const cp = text.codePointAt(at) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Text for a message, with anything outside printable ASCII escaped. */
function printable(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    out += cp >= 0x20 && cp <= 0x7e ? ch : `\\u{${cp.toString(16)}}`;
  }
  return out;
}

/** Suggests the token a wrongly cased name probably meant. */
function hint(name: string): string {
  const lower = name.toLowerCase();
  const near = Object.keys(TOKENS).filter((t) => t.toLowerCase() === lower);
  return near.length === 1 ? ` (did you mean {${near[0]}}?)` : '';
}

/**
 * Parses and checks a template against its rule. Returns the compiled template or throws
 * TemplateProblems listing every problem (positions are 0-based character offsets).
 */
export function compileTemplate(template: string, rule: RuleLimits, opts: CompileOptions = {}): CompiledTemplate {
  const problems: string[] = [];
  if (typeof template !== 'string') throw new TemplateProblems(['template must be a string']);
  if (template.length === 0) throw new TemplateProblems(['template is empty']);
  if (template.length > MAX_TEMPLATE_LENGTH) {
    throw new TemplateProblems([`template is ${template.length} characters long; the limit is ${MAX_TEMPLATE_LENGTH}`]);
  }
  const ruleOk = ruleProblems(rule, problems);

  const pieces: Piece[] = [];
  let literal = '';
  const flush = () => {
    if (literal !== '') pieces.push({ kind: PIECE.LITERAL, text: literal, width: 0 });
    literal = '';
  };
  const counters: { at: number; width: number; text: string }[] = [];
  const fields = new Set<Field>();
  let yearCycle = 0;
  /** The year token with the longest cycle, for messages. */
  let yearTok = '{yyyy}';
  let usesSalt = false;
  let usesApp = false;

  let at = 0;
  while (at < template.length) {
    const ch = template[at];
    if (ch === '{') {
      if (template[at + 1] === '{') {
        literal += '{';
        at += 2;
        continue;
      }
      let end = at + 1;
      while (end < template.length && template[end] !== '}' && template[end] !== '{') end++;
      if (end >= template.length || template[end] === '{') {
        problems.push(`unclosed { at ${at} (write {{ for a literal brace)`);
        at = end;
        continue;
      }
      const name = template.slice(at + 1, end);
      const text = `{${printable(name)}}`;
      const def = Object.hasOwn(TOKENS, name) ? TOKENS[name] : undefined;
      if (name.startsWith('counter:')) {
        const widthText = name.slice('counter:'.length);
        const width = /^\d{1,2}$/.test(widthText) ? Number(widthText) : 0;
        if (width < 1 || width > MAX_COUNTER_WIDTH)
          problems.push(`${text} at ${at}: the width must be from 1 to ${MAX_COUNTER_WIDTH}`);
        counters.push({ at, width, text });
        flush();
        pieces.push({ kind: PIECE.COUNTER, text: '', width });
      } else if (def !== undefined) {
        if (def.kind === PIECE.COUNTER) counters.push({ at, width: 0, text });
        if (def.kind === PIECE.SALT) usesSalt = true;
        if (def.kind === PIECE.APP) usesApp = true;
        if (def.field !== undefined) fields.add(def.field);
        if (def.yearCycle !== undefined && def.yearCycle > yearCycle) {
          yearCycle = def.yearCycle;
          yearTok = text;
        }
        flush();
        pieces.push({ kind: def.kind, text: '', width: 0 });
      } else if (name === '') {
        problems.push(`empty token {} at ${at}`);
      } else {
        problems.push(`unknown token ${text} at ${at}${hint(name)}`);
      }
      at = end + 1;
    } else if (ch === '}') {
      if (template[at + 1] === '}') {
        literal += '}';
        at += 2;
        continue;
      }
      problems.push(`unmatched } at ${at} (write }} for a literal brace)`);
      at++;
    } else {
      const code = template.charCodeAt(at);
      if (code < 0x20 || code > 0x7e) {
        problems.push(`character ${describeChar(template, at)} at ${at} is not printable ASCII`);
        at += code >= 0xd800 && code <= 0xdbff && at + 1 < template.length ? 2 : 1;
        continue;
      }
      literal += ch;
      at++;
    }
  }
  flush();

  let counterWidth = 0;
  if (counters.length !== 1) {
    const where =
      counters.length === 0 ? 'found none' : `found ${counters.length}, at ${counters.map((c) => c.at).join(', ')}`;
    problems.push(`a template needs exactly one {counter} token (${where})`);
  } else {
    const counter = counters[0];
    counterWidth = counter.width;
    if (ruleOk && counter.width > 0 && digits(rule.maxCounter) > counter.width) {
      problems.push(
        `${counter.text} is too narrow for max_counter ${rule.maxCounter} (needs ${digits(rule.maxCounter)})`,
      );
    }
    if (counter.width === 0 && usesSalt) {
      problems.push(
        'an unpadded {counter} cannot share a template with {salt} (salts vary in length, so two IDs could read the same): use {counter:N}',
      );
    }
  }

  // Time tokens against the reset period, and the uniqueness horizon.
  const finest = FIELDS.find((f) => fields.has(f));
  const finestTimeToken = finest === undefined ? null : finest === 'year' ? yearTok : FIELD_TOKEN[finest];
  let uniqueForSeconds = Number.POSITIVE_INFINITY;
  const resetSeconds = ruleOk ? rule.resetSeconds : 0;
  if (resetSeconds > 0) {
    const needed =
      (['day', 'hour', 'minute', 'second'] as const).find((f) => (resetSeconds * 1000) % UNIT_MS[f] === 0) ?? 'second';
    if (finest === undefined || UNIT_MS[finest] > UNIT_MS[needed]) {
      const has =
        finestTimeToken === null ? 'this template has no time token' : `the finest here is ${finestTimeToken}`;
      problems.push(
        `reset_seconds ${resetSeconds} needs a time token of ${FIELD_TOKEN[needed]} or finer, or different periods would render the same IDs; ${has}`,
      );
      uniqueForSeconds = resetSeconds;
    } else {
      uniqueForSeconds = horizon(finest, fields, yearCycle);
      if (uniqueForSeconds < MIN_UNIQUE_YEARS * YEAR_SECONDS && opts.force !== true) {
        const missing = FIELDS.findIndex((f, n) => n > FIELDS.indexOf(finest) && !fields.has(f));
        const why =
          missing < 0
            ? `${yearTok} wraps round`
            : `it has ${FIELD_TOKEN[FIELDS[missing - 1]]} but no ${missing === FIELDS.length - 1 ? 'year' : FIELD_TOKEN[FIELDS[missing]]} token`;
        problems.push(
          `IDs of this template repeat after ${describeSeconds(uniqueForSeconds)} (${why}), under ${MIN_UNIQUE_YEARS} years; ` +
            'add coarser time tokens, or send "force": true to accept it',
        );
      }
    }
  }

  if (problems.length > 0) throw new TemplateProblems(problems);

  let maxLength = 0;
  for (const piece of pieces) {
    if (piece.kind === PIECE.LITERAL) maxLength += piece.text.length;
    else if (piece.kind === PIECE.COUNTER) maxLength += Math.max(piece.width, digits(rule.maxCounter));
    else maxLength += kindWidth(piece.kind);
  }
  return {
    source: template,
    rule: { minCounter: rule.minCounter, maxCounter: rule.maxCounter, resetSeconds: rule.resetSeconds },
    pieces,
    counterWidth,
    finestTimeToken,
    uniqueForSeconds,
    uniqueFor: describeSeconds(uniqueForSeconds),
    // With one variable-length part (the app name), equal IDs would need equal app names.
    uniqueAcrossApps: usesApp && !usesSalt && counterWidth > 0,
    maxLength,
  };
}

function kindWidth(kind: Kind): number {
  for (const def of Object.values(TOKENS)) if (def.kind === kind) return def.width;
  return 0;
}

/** Seconds until the time tokens wrap round, given the finest field present. */
function horizon(finest: Field, fields: ReadonlySet<Field>, yearCycle: number): number {
  for (let k = FIELDS.indexOf(finest) + 1; k < FIELDS.length; k++) {
    const field = FIELDS[k];
    if (!fields.has(field)) return CYCLE_SECONDS[field];
  }
  return yearCycle * YEAR_SECONDS;
}
