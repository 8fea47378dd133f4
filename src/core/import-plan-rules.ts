// Planning an import from id_server (rule mode): a rule per Lua file, and per (rule, app) a
// counter floor in every period of idmint's that could render an ID id_server rendered: above
// each saved counter plus the save lag (id_step x batch_save), held for every spelling its
// table's collation folds together and every pair of names that id_server's key
// (rule + "_" + app) joins, in the periods idserver-periods.ts finds for any zone, with the
// operator's floors and the saves read from its log. Pure; the shared shapes are in
// import-plan.ts.
import { EVERY_APP, FOLD_SHARD, foldName } from './app-fold.js';
import { instantsAtWall, offsetMs, periodOf } from './period.js';
import {
  bucketSeconds,
  lateResetSpan,
  loggedSpans,
  periodsMeeting,
  savedSpans,
  type WallSpan,
} from './idserver-periods.js';
import { rowMatch, rowName, describePeriod } from './idserver-rows.js';
import { compileRule, firstCounter, periodCapacity, ruleScope } from './rule-spec.js';
import { isValidAppName } from './rule-template.js';
import { SpecProblems } from './spec-problems.js';
import { specOfMode, type RuleTagSpec } from './tag-kinds.js';
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
export function ruleFloor(spec: RuleTagSpec, saved: number): number {
  const first = firstCounter(spec.rule, spec);
  const below = saved < first ? 0 : Math.floor((saved - first) / spec.stride) + 1;
  return Math.min(below, periodCapacity(spec.rule, spec));
}

interface PeriodBounds {
  readonly exact: Map<string, number>;
  readonly folded: Map<string, number>;
  every: number;
}

const raiseTo = (m: Map<string, number>, k: string, v: number) => m.set(k, Math.max(m.get(k) ?? -Infinity, v));
const byName = <T>([left]: [string, T], [right]: [string, T]) => (left < right ? -1 : left > right ? 1 : 0);

/**
 * Plans id_server's rules at the moment `nowMs`. Each save (a row of the counter table, or a
 * line of its log) stands for every counter value up to it plus what a node hands out before its
 * next save lands (id_step * batch_save of the rule that drove the counter) and the operator's
 * margin, in every period of idmint's that could render the same IDs as the save's period did,
 * whatever zone id_server ran in (idserver-periods.ts): the zone given is the zone of the tag,
 * not a fact the floors rely on. A save that reaches max_counter means id_server may have
 * wrapped and repeated that period's IDs: the period is closed for that app. With the zone
 * given, id_server's daylight saving quirk (a period begun late, the previous counter still in
 * use under the new date) closes the periods that counter rendered into. A save matches a rule
 * when its rule name folds to the rule's (the table compares names without case) or when its
 * rule + "_" + app folds to the rule's name + "_" + some app (id_server's counter key, shared by
 * both pairs). Throws SpecProblems listing every reason to refuse.
 */
export function planRules(
  rules: readonly OldRule[],
  rows: readonly OldCounterRow[],
  current: Current,
  nowMs: number,
  opts: RulePlanOptions = {},
): ImportPlan {
  const problems: string[] = [];
  const notes: string[] = [];
  const tags: TagPlan[] = [];
  const byFold = new Map(rules.map((r) => [foldName(r.tag), r]));
  for (const name of new Set(rows.map((r) => r.ruleName))) {
    const matched = rules.some((o) => rows.some((r) => r.ruleName === name && rowMatch(r, o.tag)));
    if (!matched)
      notes.push(
        `counters of rule "${name}" left out: config.json names no such rule, nor one that differs only in case or shares its counter key`,
      );
  }
  const given = new Set(rules.map((r) => r.tag));
  for (const floor of opts.floors ?? []) {
    if (!given.has(floor.rule))
      problems.push(`a floor was given for rule "${floor.rule}", which config.json does not name`);
  }
  const margin = opts.margin ?? 0;
  const widest = rules.reduce((m, r) => Math.max(m, r.batchSave), 1);
  for (const oldRule of rules) {
    const what = `rule "${oldRule.tag}" (${oldRule.file})`;
    if (!checkName(oldRule.tag, problems, 'id_server rule')) continue;
    const luaRule = oldRule.rule;
    const dated =
      luaRule.resetSeconds > 0 || /\{(yyyy|yy|year%10|year%100|MM|dd|HH|mm|ss|SSS)\}/.test(luaRule.template);
    if (oldRule.timeZone === undefined && dated) {
      problems.push(
        `${what}: its IDs carry the date or its counter resets (reset_seconds ${luaRule.resetSeconds}), both in id_server's local time: give the zone id_server ran in (--time-zone, or time_zone on the admin route); no zone is assumed`,
      );
      continue;
    }
    const body: Record<string, unknown> = {
      tag: oldRule.tag,
      mode: 'rule',
      template: luaRule.template,
      min_counter: luaRule.minCounter,
      max_counter: luaRule.maxCounter,
      reset_seconds: luaRule.resetSeconds,
      time_zone: oldRule.timeZone ?? 'UTC',
      description: `imported from id_server (${oldRule.file})`.slice(0, 255),
      ...(opts.force ? { force: true } : {}),
    };
    if (oldRule.stride !== 1 || oldRule.offset !== 0)
      Object.assign(body, { stride: oldRule.stride, offset: oldRule.offset });
    const want = specOf(body, problems, what);
    if (!want) continue;
    const cur = current.live.get(oldRule.tag);
    const why = clash(current, want, what);
    if (why) {
      problems.push(why);
      continue;
    }
    // clash() let the import go on only where idmint's tag is a rule as well.
    const spec = specOfMode(cur?.spec ?? want, 'rule', 'an id_server import');
    const rule = spec.rule;
    const zone = rule.timeZone;
    const finest = compileRule(rule, true).finestTimeToken;
    const bounds = new Map<number, PeriodBounds>();
    const boundsOf = (period: number): PeriodBounds => {
      let periodBounds = bounds.get(period);
      if (!periodBounds) bounds.set(period, (periodBounds = { exact: new Map(), folded: new Map(), every: -Infinity }));
      return periodBounds;
    };
    const periodsFor = (spans: WallSpan[]) => periodsMeeting(spans, finest, zone, rule.resetSeconds, nowMs);
    // The highest counter saved per app in a period idmint still serves, for the report.
    const highest = new Map<string, number>();
    const covered = new Map<string, Set<number>>();
    const closed = new Map<string, string>();
    const tagNotes: string[] = [];
    let earlier = 0;
    let caseFolded = false;
    const otherSpelling = new Map<string, number>();
    const sharedKey = new Map<string, Set<string>>();
    const logged = { saves: 0, failed: 0 };
    for (const row of rows) {
      const match = rowMatch(row, oldRule.tag);
      if (!match) continue;
      if (!isValidAppName(match.folded)) {
        tagNotes.push(
          `app "${match.folded}" (${rowName(row)}) left out: not a valid idmint app name, nor one that folds to it, so idmint can never be asked for it`,
        );
        continue;
      }
      // The rule whose config drove the counter: the one its row is named after (the pair that
      // created a shared key); a rule config.json does not name counts with the largest lag.
      const driver = byFold.get(foldName(row.ruleName));
      const bound = row.counter + oldRule.stride * (driver?.batchSave ?? widest) + margin;
      const isLog = row.source !== undefined;
      // A line that would close the app's period is the only trace of a save near max_counter,
      // or a forged one: neither dropped nor applied unchecked, it refuses the import.
      if (isLog && bound >= rule.maxCounter && !opts.trustLog) {
        problems.push(
          `${row.source}: a save of app "${match.folded}" at counter ${row.counter} reaches max_counter ${rule.maxCounter} with the save lag, which closes the app's period. A log line may be forged (a datagram can land in id_server's debug log), so check it: if id_server wrote it, import again with --trust-log (trust_log); if not, leave that line out of the log given`,
        );
        continue;
      }
      const driverReset = driver?.rule.resetSeconds ?? luaRule.resetSeconds;
      const periods = periodsFor(
        row.loggedWallMs === undefined
          ? savedSpans(row.updateTime * 1000, driverReset, nowMs)
          : loggedSpans(row.loggedWallMs, driverReset, nowMs),
      );
      if (periods.length === 0) {
        earlier++;
        continue;
      }
      // A counter shared with a rule that starts it again more often than this rule's IDs tell
      // times apart numbered IDs of this rule in earlier periods of that rule, which the table
      // no longer holds (the row keeps the last save) and which this rule's IDs repeat.
      if (match.how === 'key' && driverReset > 0 && bucketSeconds(finest) > driverReset) {
        for (const period of periods) raiseTo(boundsOf(period).folded, match.folded, rule.maxCounter);
        closed.set(
          match.folded,
          `it shares id_server's counter with rule "${row.ruleName}", which starts it again every ${driverReset} s, while this rule's IDs tell ${finest === null ? 'no times' : `only ${finest}`} apart: what that counter numbered in earlier periods, no longer in the table, this rule's IDs repeat`,
        );
      }
      if (row.updateTime * 1000 > nowMs)
        tagNotes.push(
          `${rowName(row)} was saved after the import's time (${new Date(row.updateTime * 1000).toISOString()}): a node whose clock ran ahead; its IDs carry the dates of that clock, and counters of those periods and of the current one continue above it; what that node handed out of the current period before its clock ran ahead is not in the table (check its log)`,
        );
      if (isLog) {
        logged.saves++;
        if (/\((db failed|queue full)\)$/.test(row.source!)) logged.failed++;
        tagNotes.push(
          `${row.source}: app "${match.exact ?? match.folded}" continues above counter ${bound} in ${periods.map((p) => describePeriod(p, rule)).join(', ')}`,
        );
      }
      if (match.how === 'case') otherSpelling.set(row.ruleName, (otherSpelling.get(row.ruleName) ?? 0) + 1);
      if (match.how === 'key') {
        const pair = `"${row.ruleName}"/"${row.appName}"`;
        sharedKey.set(match.folded, (sharedKey.get(match.folded) ?? new Set()).add(pair));
      }
      if (/[a-z]/.test(match.folded) && !isLog) caseFolded = true;
      const set = covered.get(match.folded) ?? new Set<number>();
      covered.set(match.folded, set);
      for (const period of periods) {
        const periodBounds = boundsOf(period);
        if (match.exact !== undefined && isValidAppName(match.exact)) raiseTo(periodBounds.exact, match.exact, bound);
        raiseTo(periodBounds.folded, match.folded, bound);
        set.add(period);
      }
      raiseTo(highest, match.exact ?? match.folded, row.counter);
      if (bound >= rule.maxCounter)
        closed.set(
          match.folded,
          `${rowName(row)} with the save lag reaches max_counter ${rule.maxCounter}: id_server may have passed it, started again at min_counter and repeated IDs`,
        );
      // id_server's quirk: the previous period's counter, which this row replaced in the
      // table, still numbered IDs under this period's dates for the hours daylight saving ran ahead.
      if (oldRule.timeZone !== undefined) {
        const savedMs =
          row.loggedWallMs === undefined
            ? row.updateTime * 1000
            : (instantsAtWall(row.loggedWallMs, zone)[0] ?? row.loggedWallMs - offsetMs(row.loggedWallMs, zone));
        const hit = periodsFor(lateResetSpan(savedMs, zone, driverReset));
        for (const period of hit) {
          raiseTo(boundsOf(period).folded, match.folded, rule.maxCounter);
          set.add(period);
        }
        if (hit.length)
          closed.set(
            match.folded,
            `id_server begins a period by standard time but dates IDs by local time: in ${zone} daylight saving was in effect when the period of ${rowName(row)} began, so the previous period's counter (no longer in the table) still numbered IDs dated ${hit.map((p) => describePeriod(p, rule)).join(', ')}`,
          );
      }
    }
    for (const floor of opts.floors ?? []) {
      if (floor.rule !== oldRule.tag) continue;
      const periodBounds = boundsOf(periodOf(nowMs, zone, rule.resetSeconds));
      if (floor.app === undefined) periodBounds.every = Math.max(periodBounds.every, floor.counter);
      else {
        raiseTo(periodBounds.exact, floor.app, floor.counter);
        raiseTo(periodBounds.folded, foldName(floor.app), floor.counter);
      }
      tagNotes.push(
        `the counters of ${floor.app === undefined ? 'every app' : `app "${floor.app}" (and every name that folds to it)`} in the current period continue above ${floor.counter}, as given`,
      );
    }
    const floors: Floor[] = [];
    const add = (shard: number, scope: string, bound: number) => {
      const seq = ruleFloor(spec, bound);
      if (seq <= 0) return;
      if (cur && !below(cur, shard, scope, seq)) return;
      floors.push({ shard, scope, counter: seq });
    };
    for (const [period, periodBounds] of [...bounds].sort(([left], [right]) => left - right)) {
      for (const [app, bound] of [...periodBounds.exact].sort(byName)) add(0, ruleScope(app, period), bound);
      // Names with letters stand for every case of them: a floor by folded name.
      for (const [name, bound] of [...periodBounds.folded].sort(byName))
        if (/[a-z]/.test(name) || !periodBounds.exact.has(name)) add(FOLD_SHARD, ruleScope(name, period), bound);
      if (periodBounds.every > -Infinity) add(FOLD_SHARD, ruleScope(EVERY_APP, period), periodBounds.every);
    }
    if (highest.size) {
      tagNotes.push(
        `each saved counter counts as id_step ${oldRule.stride} x batch_save (${oldRule.stride * oldRule.batchSave} for this rule)${margin ? ` + ${margin} (margin)` : ''} higher: a node stopped without a clean shutdown may have handed out that far above its last saved row. A save that failed (MySQL away: "db failed" in id_server's log; a full queue: "save failed", tried again 10 s later by a node still running) leaves the row further behind: read the log (--idserver-log) or give --margin / --floor`,
      );
      tagNotes.push(
        `zone ${zone} (the tag's); the saves' periods are found for every zone id_server could have run in (UTC-12 to UTC+14, with or without daylight saving), so a wrong zone wastes counters and repeats nothing: ${[
          ...covered,
        ]
          .sort(byName)
          .map(
            ([app, ps]) =>
              `${app} in ${[...ps]
                .sort((x, y) => x - y)
                .map((p) => describePeriod(p, rule))
                .join(', ')}`,
          )
          .join('; ')}`,
      );
    }
    for (const [app, why] of [...closed].sort(byName)) {
      tagNotes.push(
        `app "${app}" (every case of it) closed in the period(s) above that it reaches: ID_SPACE_EXHAUSTED until a later period, because ${why}`,
      );
    }
    for (const [app, pairs] of [...sharedKey].sort(byName)) {
      tagNotes.push(
        `app "${app}" shares id_server's counter with ${[...pairs].sort().join(', ')}: id_server keys a counter by rule + "_" + app, so those pairs numbered from one counter and saved it under the first pair's names; the highest of all their saves counts`,
      );
    }
    if (caseFolded) {
      tagNotes.push(
        'the counter table compares app names without case: a row stands for every case of its name (and holds only the one saved last), so every case of it continues above the row; what another case of the name handed out before is not in the table (id_server repeats it after a restart): read the log (--idserver-log) or give --floor',
      );
    }
    for (const [name, count] of [...otherSpelling].sort(byName)) {
      tagNotes.push(
        `${count} saved counter(s) of rule "${name}" count for this rule too: the counter table compares rule names without case, so such a row may hold what this rule handed out (a rule renamed in case, or two rules whose names differ only in case sharing rows)`,
      );
    }
    if (logged.saves)
      tagNotes.push(`${logged.saves} save(s) read from id_server's log count, ${logged.failed} of them failed writes`);
    if (earlier)
      tagNotes.push(
        `${earlier} saved counter(s) left out: under any zone id_server could have run in, their periods' IDs carry times idmint has passed`,
      );
    const oldMax =
      [...highest].map(([app, counter]) => `${app}:${counter}`).join(' ') || 'none in a period idmint still serves';
    const action = !cur ? 'create' : floors.length ? 'raise' : 'unchanged';
    tags.push({
      tag: oldRule.tag,
      mode: 'rule',
      action,
      spec,
      epoch: cur?.epoch,
      floors,
      tokens: [],
      oldMax,
      notes: tagNotes,
    });
  }
  if (problems.length) throw new SpecProblems(problems);
  return { system: 'id_server', tags, notes };
}
