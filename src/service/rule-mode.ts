// Rule tags: each (app, period) has its own counter (a segment source of scope
// "<app>/<period>"), rendered through the tag's template. One moment decides both the period
// whose counter is used and the time tokens of the rendered ID.
import { localParts, periodOf } from '../core/period.js';
import { compileRule, counterAt, ruleScope } from '../core/rule-spec.js';
import { render } from '../core/rule-render.js';
import type { CompiledTemplate } from '../core/rule-template.js';
import type { Range } from '../core/ranges.js';
import type { StoredOf } from '../store/mysql/tags-repo.js';

type RuleTag = StoredOf<'rule'>;

export class RuleTemplates {
  private readonly compiled = new Map<
    string,
    { readonly source: string; readonly max: number; readonly compiled: CompiledTemplate }
  >();

  /** The tag's compiled template, compiled again only when the template or its maximum changed. */
  of(tag: RuleTag): CompiledTemplate {
    const rule = tag.rule;
    const cached = this.compiled.get(tag.tag);
    if (cached && cached.source === rule.template && cached.max === rule.maxCounter) return cached.compiled;
    // Stored rules were validated when saved; force only skips the lifetime check they passed.
    const compiled = compileRule(rule, true);
    this.compiled.set(tag.tag, { source: rule.template, max: rule.maxCounter, compiled });
    return compiled;
  }

  /** One rendered ID of counter value `counter` at the moment nowMs. */
  renderOne(tag: RuleTag, counter: number, app: string, salt: string, nowMs: number): string {
    const rule = tag.rule;
    return render(this.of(tag), {
      counter: counterAt(rule, tag, counter),
      salt,
      app,
      parts: localParts(nowMs, rule.timeZone),
    });
  }

  /** The rendered IDs of counter runs taken at the moment nowMs, in order. */
  renderRuns(tag: RuleTag, runs: readonly Range[], app: string, salt: string, nowMs: number): string[] {
    const rule = tag.rule;
    const compiled = this.of(tag);
    const parts = localParts(nowMs, rule.timeZone);
    const out: string[] = [];
    for (const [first, last] of runs) {
      for (let seq = first; seq <= last; seq++)
        out.push(render(compiled, { counter: counterAt(rule, tag, seq), salt, app, parts }));
    }
    return out;
  }
}

/** The counter scope "<app>/<period>" of a rule at a moment. */
export function scopeOf(tag: RuleTag, app: string, nowMs: number): string {
  const rule = tag.rule;
  return ruleScope(app, periodOf(nowMs, rule.timeZone, rule.resetSeconds));
}
