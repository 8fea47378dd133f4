// How a saved counter of id_server (a row of its counter table or a save in its log) relates to
// the rules being imported, and how the report names rows and periods. id_server keys a counter
// in memory by the string rule + "_" + app (counter_manager.cpp, get_counter_key), so rule
// "order" with app "id_shop" and rule "order_id" with app "shop" number from one counter, saved
// under the names of the pair that created it; its table's key compares both names without
// case. A row therefore counts for a rule when its rule name folds to the rule's, or when its
// folded key begins with the rule's folded name and "_": the rest is the app. Pure.
import { foldName } from './app-fold.js';
import type { OldCounterRow } from './import-plan.js';
import type { RuleSpec } from './rule-spec.js';

export interface RowMatch {
  /** The app name as the row spells it (for a shared key: the rest of the key after the rule, when spelled alike). */
  readonly exact?: string;
  /** The app as the table's collation folds it. */
  readonly folded: string;
  /** Same rule name, the same but for case, or a shared counter key. */
  readonly how: 'rule' | 'case' | 'key';
}

export function rowMatch(row: OldCounterRow, rule: string): RowMatch | undefined {
  const fr = foldName(row.ruleName);
  const ft = foldName(rule);
  if (fr === ft)
    return { exact: row.appName, folded: foldName(row.appName), how: row.ruleName === rule ? 'rule' : 'case' };
  const key = `${fr}_${foldName(row.appName)}`;
  if (!key.startsWith(`${ft}_`)) return undefined;
  const raw = `${row.ruleName}_${row.appName}`;
  return {
    exact: raw.startsWith(`${rule}_`) ? raw.slice(rule.length + 1) : undefined,
    folded: key.slice(ft.length + 1),
    how: 'key',
  };
}

export function rowName(row: OldCounterRow): string {
  const when =
    row.loggedWallMs === undefined
      ? `node_offset ${row.nodeOffset}, counter ${row.counter}, update_time ${row.updateTime}`
      : `counter ${row.counter}, logged at ${new Date(row.loggedWallMs).toISOString().slice(0, 19).replace('T', ' ')} local`;
  return `${row.source ?? 'counter table row'} (rule "${row.ruleName}", app "${row.appName}", ${when})`;
}

/** A period of a rule as people read it: its first local time ("2026-11-27 00:00"), or "all time". */
export function describePeriod(period: number, rule: RuleSpec): string {
  if (rule.resetSeconds === 0) return 'all time';
  return new Date(period * rule.resetSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ');
}
