// The definition of a rule tag (the id_server model): template, counter bounds, reset period
// and time zone; validated at creation and on every change. The counter runs on the segment
// machinery as the sequence 1, 2, 3, ... of each (rule, app, period): the sequence k gives
// the k-th value from min_counter on that is offset (mod stride) (with stride 1: min_counter +
// k - 1), so a rule's max_id_limit is the count of such counter values in a period.
import type { Interleave } from './layout.js';
import { validateTimeZone, DEFAULT_TIME_ZONE } from './period.js';
import { compileTemplate, type CompiledTemplate } from './rule-template.js';
import { templatesDisjoint } from './rule-template-disjoint.js';
import { SpecProblems } from './spec-problems.js';

/** The counter scope of an app in a period: "<app>/<period>", the app's own counter of that period. */
export const ruleScope = (app: string, period: number): string => `${app}/${period}`;

/** The app of a scope made by ruleScope (app names may hold "/", periods do not); undefined for none. */
export function scopeApp(scope: string): string | undefined {
  const cut = scope.lastIndexOf('/');
  return cut < 0 ? undefined : scope.slice(0, cut);
}

export interface RuleSpec {
  readonly template: string;
  readonly minCounter: number;
  readonly maxCounter: number;
  readonly resetSeconds: number;
  readonly timeZone: string;
  /** Templates this rule used before, oldest first: a new template must be disjoint from all. */
  readonly previousTemplates?: readonly string[];
}

/** Rule fields of a create or update body. */
export const RULE_FIELDS = ['template', 'min_counter', 'max_counter', 'reset_seconds', 'time_zone'];
/** Fields that decide which IDs were issued already: fixed at creation. */
const FIXED = ['min_counter', 'reset_seconds', 'time_zone'];

type Body = Record<string, unknown>;

export function compileRule(rule: RuleSpec, force = false): CompiledTemplate {
  return compileTemplate(
    rule.template,
    { minCounter: rule.minCounter, maxCounter: rule.maxCounter, resetSeconds: rule.resetSeconds },
    { force },
  );
}

/** The first counter value at or above min_counter that is offset (mod stride). */
export function firstCounter(rule: RuleSpec, interleave: Interleave): number {
  return (
    rule.minCounter +
    ((((interleave.offset - rule.minCounter) % interleave.stride) + interleave.stride) % interleave.stride)
  );
}

/** The counter value of `sequence` (1, 2, ...) of a period. */
export function counterAt(rule: RuleSpec, interleave: Interleave, sequence: number): number {
  return firstCounter(rule, interleave) + (sequence - 1) * interleave.stride;
}

/** Sequence values a period holds (the rule's max_id_limit); 0 when no counter fits. */
export function periodCapacity(rule: RuleSpec, interleave: Interleave = { stride: 1, offset: 0 }): number {
  const first = firstCounter(rule, interleave);
  return first > rule.maxCounter ? 0 : Math.floor((rule.maxCounter - first) / interleave.stride) + 1;
}

function collect(fn: () => void, problems: string[]): void {
  try {
    fn();
  } catch (err) {
    if (err instanceof SpecProblems) problems.push(...err.problems);
    else throw err;
  }
}

/** A rule from a create body; problems are added to `problems`. */
export function ruleFromBody(body: Body, problems: string[]): RuleSpec | null {
  if (body.template === undefined) problems.push('template is required for rule tags');
  if (body.max_counter === undefined) problems.push('max_counter is required for rule tags');
  if (body.force !== undefined && typeof body.force !== 'boolean') problems.push('force must be true or false');
  let timeZone = DEFAULT_TIME_ZONE;
  if (body.time_zone !== undefined) collect(() => (timeZone = validateTimeZone(body.time_zone)), problems);
  if (problems.length > 0) return null;
  const rule: RuleSpec = {
    template: body.template as string,
    minCounter: (body.min_counter ?? 0) as number,
    maxCounter: body.max_counter as number,
    resetSeconds: (body.reset_seconds ?? 0) as number,
    timeZone,
  };
  collect(() => compileRule(rule, body.force === true), problems);
  return rule;
}

/**
 * A rule changed by an update body. `template` may change only to one whose IDs cannot equal
 * the old one's (or with force); `max_counter` may only grow; the rest is fixed.
 */
export function ruleFromUpdate(cur: RuleSpec, body: Body, problems: string[]): RuleSpec {
  for (const field of FIXED)
    if (field in body)
      problems.push(`${field} cannot be changed after creation (it decides which IDs were issued already)`);
  if (body.force !== undefined && typeof body.force !== 'boolean') problems.push('force must be true or false');
  const changed = body.template !== undefined && body.template !== cur.template;
  const earlier = [...(cur.previousTemplates ?? []), cur.template];
  const next: RuleSpec = {
    ...cur,
    ...(changed
      ? {
          template: body.template as string,
          previousTemplates: [...new Set(earlier)].filter((t) => t !== body.template),
        }
      : {}),
    ...(body.max_counter !== undefined ? { maxCounter: body.max_counter as number } : {}),
  };
  if (typeof body.max_counter === 'number' && body.max_counter < cur.maxCounter) {
    problems.push(`max_counter can only grow (it is ${cur.maxCounter}): counters up to it may already sit in Redis`);
  }
  if (problems.length > 0) return next;
  let compiled: CompiledTemplate | undefined;
  collect(() => (compiled = compileRule(next, body.force === true)), problems);
  // Going back to a template used before is safe (its counters never restart within a
  // period); any other template must not be able to render what an earlier one rendered.
  if (compiled && changed && body.force !== true) {
    for (const old of earlier) {
      // Only the template's shape matters here; counter bounds of its time do not.
      const shapeOf = compileTemplate(
        old,
        { minCounter: 0, maxCounter: 0, resetSeconds: cur.resetSeconds },
        { force: true },
      );
      if (old === next.template || templatesDisjoint(shapeOf, compiled)) continue;
      problems.push(
        `the new template could render IDs that the template "${old}" rendered (same length and no differing literal text); give it another length or a distinguishing literal, or send "force": true if you are sure`,
      );
    }
  }
  return next;
}

/** Wire form of the rule fields. */
export function ruleToJson(rule: RuleSpec): Record<string, unknown> {
  return {
    template: rule.template,
    min_counter: rule.minCounter,
    max_counter: rule.maxCounter,
    reset_seconds: rule.resetSeconds,
    time_zone: rule.timeZone,
  };
}
