// Planning an import from id_server (rule mode): a rule per Lua file, and per (rule, app) of the
// current period a counter floor above what id_server may have handed out: its saved counter
// plus the save lag (id_step x batch_save), held for every spelling its table's collation
// folds together, with the operator's floors and those read from its log. Pure; the shared
// shapes are in import-plan.ts.
import { EVERY_APP, FOLD_SHARD, foldName } from './app-fold.js';
import { periodOf } from './period.js';
import { firstCounter, periodCapacity } from './rule-spec.js';
import { isValidAppName } from './rule-template.js';
import { SpecProblems } from './spec-problems.js';
import type { TagSpec } from './tag-spec.js';
import {
  below,
  checkName,
  clash,
  specOf,
  type Current,
  type ImportPlan,
  type OldCounterRow,
  type OldRule,
  type RulePlanOptions,
  type TagPlan,
  type Floor,
} from './import-plan.js';

/**
 * The sequence floor of a rule counter above a saved counter: sequence k (1, 2, ...) writes the
 * k-th value from min_counter on that is offset (mod stride), so the floor is the number of
 * such values at or below `saved` (capped at the period's capacity).
 */
export function ruleFloor(spec: TagSpec, saved: number): number {
  const first = firstCounter(spec.rule!, spec);
  const below = saved < first ? 0 : Math.floor((saved - first) / spec.stride) + 1;
  return Math.min(below, periodCapacity(spec.rule!, spec));
}

interface PeriodBounds {
  readonly exact: Map<string, number>;
  readonly folded: Map<string, number>;
  every: number;
}

const raiseTo = (m: Map<string, number>, k: string, v: number) => m.set(k, Math.max(m.get(k) ?? -Infinity, v));
const byName = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);

function rowName(r: OldCounterRow): string {
  return `${r.source ?? 'counter table row'} (node_offset ${r.nodeOffset}, app "${r.appName}", counter ${r.counter}, update_time ${r.updateTime})`;
}

/**
 * Plans id_server's rules at the moment `nowMs`: each (rule, app) counter of the current
 * period continues above the highest counter any node saved (or, by its log, tried to save)
 * in that period plus what a node hands out before its next save lands (id_step *
 * batch_save) and the operator's margin. A saved row's floor holds for every app name that
 * row stands for under the table's case-insensitive collation (a floor by folded name), and a
 * row saved in a later period than now (a node whose clock ran ahead) raises that period's
 * counter and the current one. The same collation compares rule names: a row counts for every
 * rule whose name differs from its rule_name only in case. Throws SpecProblems listing every
 * reason to refuse.
 */
export function planRules(rules: readonly OldRule[], rows: readonly OldCounterRow[], current: Current, nowMs: number, opts: RulePlanOptions = {}): ImportPlan {
  const problems: string[] = [];
  const notes: string[] = [];
  const tags: TagPlan[] = [];
  // The counter table's primary key compares rule names as it compares app names (without
  // case): a row stands for every rule whose name folds to its rule_name.
  const known = new Set(rules.map((r) => foldName(r.tag)));
  for (const name of new Set(rows.map((r) => r.ruleName))) {
    if (!known.has(foldName(name))) notes.push(`counters of rule "${name}" left out: config.json names no such rule, nor one that differs only in case`);
  }
  const given = new Set(rules.map((r) => r.tag));
  for (const f of opts.floors ?? []) {
    if (!given.has(f.rule)) problems.push(`a floor was given for rule "${f.rule}", which config.json does not name`);
  }
  const margin = opts.margin ?? 0;
  for (const o of rules) {
    const what = `rule "${o.tag}" (${o.file})`;
    if (!checkName(o.tag, problems, 'id_server rule')) continue;
    const r = o.rule;
    const body: Record<string, unknown> = {
      tag: o.tag,
      mode: 'rule',
      template: r.template,
      min_counter: r.minCounter,
      max_counter: r.maxCounter,
      reset_seconds: r.resetSeconds,
      time_zone: o.timeZone,
      description: `imported from id_server (${o.file})`.slice(0, 255),
      ...(opts.force ? { force: true } : {}),
    };
    if (o.stride !== 1 || o.offset !== 0) Object.assign(body, { stride: o.stride, offset: o.offset });
    const want = specOf(body, problems, what);
    if (!want) continue;
    const cur = current.live.get(o.tag);
    const why = clash(current, want, what);
    if (why) {
      problems.push(why);
      continue;
    }
    const spec = cur?.spec ?? want;
    const rule = spec.rule!;
    const period = periodOf(nowMs, rule.timeZone, rule.resetSeconds);
    const lag = o.stride * o.batchSave;
    const bounds = new Map<number, PeriodBounds>();
    const boundsOf = (p: number): PeriodBounds => {
      let b = bounds.get(p);
      if (!b) bounds.set(p, (b = { exact: new Map(), folded: new Map(), every: -Infinity }));
      return b;
    };
    boundsOf(period);
    // The highest counter saved in the current period, per app, for the report.
    const highest = new Map<string, number>();
    const tagNotes: string[] = [];
    let earlier = 0;
    let caseFolded = false;
    const otherSpelling = new Map<string, number>();
    const logged = { saves: 0, failed: 0 };
    for (const row of rows) {
      if (foldName(row.ruleName) !== foldName(o.tag)) continue;
      const p = periodOf(row.updateTime * 1000, rule.timeZone, rule.resetSeconds);
      if (p < period) {
        earlier++;
        continue;
      }
      const folded = foldName(row.appName);
      if (!isValidAppName(folded)) {
        tagNotes.push(`app "${row.appName}" left out: not a valid idmint app name, nor one that folds to it, so idmint can never be asked for it`);
        continue;
      }
      // A node whose clock ran ahead saved in a later period: the IDs it handed out carry that
      // period's dates (which idmint reaches later), and what it handed out of the current
      // period before it jumped ahead is no longer in its row: both periods continue above it.
      if (p > period) {
        tagNotes.push(
          `${rowName(row)} lies in a later period than now (saved at ${new Date(row.updateTime * 1000).toISOString()}: a node whose clock ran ahead): counters of that period and of the current one continue above it; what that node handed out of the current period before its clock ran ahead is not in the table (check its log)`,
        );
      }
      if (row.source !== undefined) {
        logged.saves++;
        if (row.source.endsWith('(db failed)')) logged.failed++;
      }
      if (row.ruleName !== o.tag) otherSpelling.set(row.ruleName, (otherSpelling.get(row.ruleName) ?? 0) + 1);
      const bound = row.counter + lag + margin;
      for (const target of p > period ? [period, p] : [period]) {
        const b = boundsOf(target);
        if (isValidAppName(row.appName)) raiseTo(b.exact, row.appName, bound);
        raiseTo(b.folded, folded, bound);
      }
      if (/[a-z]/.test(folded) && row.source === undefined) caseFolded = true;
      if (p === period) {
        raiseTo(highest, row.appName, row.counter);
        if (row.counter >= rule.maxCounter)
          tagNotes.push(`app "${row.appName}" reached max_counter ${rule.maxCounter} in this period: it answers ID_SPACE_EXHAUSTED until the next one`);
      }
    }
    for (const f of opts.floors ?? []) {
      if (f.rule !== o.tag) continue;
      const b = boundsOf(period);
      if (f.app === undefined) b.every = Math.max(b.every, f.counter);
      else {
        raiseTo(b.exact, f.app, f.counter);
        raiseTo(b.folded, foldName(f.app), f.counter);
      }
      tagNotes.push(
        `the counters of ${f.app === undefined ? 'every app' : `app "${f.app}" (and every name that folds to it)`} in this period continue above ${f.counter}, as given`,
      );
    }
    const floors: Floor[] = [];
    const add = (shard: number, scope: string, bound: number) => {
      const seq = ruleFloor(spec, bound);
      if (seq <= 0) return;
      if (cur && !below(cur, shard, scope, seq)) return;
      floors.push({ shard, scope, counter: seq });
    };
    for (const [p, b] of [...bounds].sort(([x], [y]) => x - y)) {
      for (const [app, bound] of [...b.exact].sort(byName)) add(0, `${app}/${p}`, bound);
      // Names with letters stand for every case of them: a floor by folded name.
      for (const [name, bound] of [...b.folded].sort(byName)) if (/[a-z]/.test(name) || !b.exact.has(name)) add(FOLD_SHARD, `${name}/${p}`, bound);
      if (b.every > -Infinity) add(FOLD_SHARD, `${EVERY_APP}/${p}`, b.every);
    }
    if (bounds.size > 1 || highest.size || (opts.floors ?? []).some((f) => f.rule === o.tag)) {
      tagNotes.push(
        `each saved counter counts as ${lag}${margin ? ` + ${margin} (margin)` : ''} higher (id_step ${o.stride} x batch_save ${o.batchSave}): a node stopped without a clean shutdown may have handed out that far above its last saved row. A save that failed (MySQL away: "db failed" in id_server's log) is not retried and leaves the row further behind: read the log (--idserver-log) or give --margin / --floor`,
      );
    }
    if (caseFolded) {
      tagNotes.push(
        'the counter table compares app names without case: a row stands for every case of its name (and holds only the one saved last), so every case of it continues above the row; what another case of the name handed out before is not in the table (id_server repeats it after a restart): read the log (--idserver-log) or give --floor',
      );
    }
    for (const [name, n] of [...otherSpelling].sort(byName)) {
      tagNotes.push(
        `${n} saved counter(s) of rule "${name}" count for this rule too: the counter table compares rule names without case, so such a row may hold what this rule handed out (a rule renamed in case, or two rules whose names differ only in case sharing rows)`,
      );
    }
    if (logged.saves) tagNotes.push(`${logged.saves} save(s) of this period or later read from id_server's log, ${logged.failed} of them failed writes`);
    if (earlier) tagNotes.push(`${earlier} saved counter(s) of earlier periods left out: those periods' counters are never used again`);
    const oldMax = [...highest].map(([app, c]) => `${app}:${c}`).join(' ') || 'none this period';
    const action = !cur ? 'create' : floors.length ? 'raise' : 'unchanged';
    tags.push({ tag: o.tag, mode: 'rule', action, spec, epoch: cur?.epoch, floors, tokens: [], oldMax, notes: tagNotes });
  }
  if (problems.length) throw new SpecProblems(problems);
  return { system: 'id_server', tags, notes };
}
