// What idmint could hand out after an import, computed with idmint's own pure code from the
// plan: for a rule tag, every counter above the plan's floors in every period reachable from
// the import instant on, rendered at every local time of that period; for a segment tag, every
// counter above its floor; for a snowflake tag, every ID of any time from the import on, any
// worker and any sequence. Each function answers which of the old system's IDs idmint could
// hand out again (empty: none).
import { EVERY_APP, FOLD_SHARD, foldName } from '../../src/core/app-fold.js';
import type { TagPlan } from '../../src/core/import-plan.js';
import { counterOfSeq } from '../../src/core/layout.js';
import { periodEnd, periodOf, periodStart } from '../../src/core/period.js';
import { render } from '../../src/core/rule-render.js';
import { compileRule, firstCounter, periodCapacity } from '../../src/core/rule-spec.js';
import { decode, type SnowflakeLayout, toUnits } from '../../src/core/snowflake-layout.js';
import type { IssuedRuleId } from './id-server-model.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

/** How far past the import a rule tag's periods are followed: past every offset from -12 to +14 and a day's reset. */
export const RULE_HORIZON_MS = 3 * 86_400_000;

/** The sequence floor of (app, period): the highest of its own, its folded name's and every app's. */
function floorOf(plan: TagPlan, app: string, p: number): number {
  let f = 0;
  for (const x of plan.floors) {
    if (x.shard === 0 && x.scope === `${app}/${p}`) f = Math.max(f, x.counter);
    if (x.shard === FOLD_SHARD && (x.scope === `${foldName(app)}/${p}` || x.scope === `${EVERY_APP}/${p}`))
      f = Math.max(f, x.counter);
  }
  return f;
}

/**
 * The old IDs of one rule that idmint's tag could render again. An old ID's time tokens are
 * rendered by idmint in one local day (or hour, for a template with an hour token) of its
 * zone: the wall-clock period of that length (period.ts periodStart/periodEnd, which include a
 * day's repeated hour), clipped to the import and the horizon; or at every time, for a
 * template without time tokens. The old ID collides when a period idmint numbers in that span
 * would give its counter value (above that period's floor, within the capacity) and the
 * rendering equals it.
 */
export function ruleCollisions(plan: TagPlan, importMs: number, old: readonly IssuedRuleId[]): IssuedRuleId[] {
  const spec = specOfMode(plan.spec, 'rule', 'ruleCollisions');
  const rule = spec.rule;
  const zone = rule.timeZone;
  const compiled = compileRule(rule, true);
  const first = firstCounter(rule, spec);
  const cap = periodCapacity(rule, spec);
  const end = importMs + RULE_HORIZON_MS;
  const grain = /\{HH\}/.test(rule.template) ? 3600 : /\{(dd|MM|yy|yyyy|year%10)\}/.test(rule.template) ? 86_400 : 0;
  const spans = new Map<number, number[]>();
  /** idmint's periods while its local wall clock shows the day (or hour) of wall ms `wall`. */
  const periodsAt = (wall: number): number[] => {
    const idx = grain === 0 ? 0 : Math.floor(wall / (grain * 1000));
    let ps = spans.get(idx);
    if (ps) return ps;
    const from = Math.max(importMs, grain === 0 ? importMs : periodStart(idx, zone, grain));
    const to = Math.min(end, grain === 0 ? end : periodEnd(idx, zone, grain) - 1);
    ps = [];
    if (from <= to)
      for (let p = periodOf(from, zone, rule.resetSeconds), q = periodOf(to, zone, rule.resetSeconds); p <= q; p++)
        ps.push(p);
    spans.set(idx, ps);
    return ps;
  };
  const out: IssuedRuleId[] = [];
  for (const o of old) {
    if (o.rule !== plan.tag) continue;
    const c = o.counter;
    if (c < first || c > rule.maxCounter || (c - first) % spec.stride !== 0) continue;
    const k = (c - first) / spec.stride + 1;
    if (k > cap) continue;
    const f = o.fields;
    const parts = { ...f, millisecond: 0 };
    if (render(compiled, { counter: c, app: o.app, parts }) !== o.id) continue;
    const ps = periodsAt(Date.UTC(f.year, f.month - 1, f.day, f.hour));
    if (ps.some((p) => k > floorOf(plan, o.app, p))) out.push(o);
  }
  return out;
}

/** Old segment IDs that a plain segment tag could hand out: those of a counter above its floor. */
export function segmentCollisions(plan: TagPlan, old: readonly bigint[]): bigint[] {
  const floor = BigInt(plan.counterFloor ?? Math.max(0, ...plan.floors.map((f) => f.counter)));
  return old.filter((id) => {
    const k = counterOfSeq(plan.spec, id);
    return k !== undefined && k > floor;
  });
}

/** Old IDs that a snowflake layout gives to some time at or after the import (any worker, any sequence). */
export function snowflakeCollisions(layout: SnowflakeLayout, importMs: number, old: readonly bigint[]): bigint[] {
  const from = toUnits(layout, importMs);
  const top = 2 ** layout.timeBits;
  const width = BigInt(layout.timeBits + layout.workerBits + layout.seqBits);
  return old.filter((id) => {
    if (id < 0n || id >> width !== 0n) return false;
    const t = decode(layout, id).time;
    return t >= from && t < top;
  });
}
