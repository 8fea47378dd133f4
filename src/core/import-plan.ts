// Planning an import from Leaf, Tinyid or id_server: from what the old system's store holds
// and what idmint holds now, which tags to create, which to raise and which to leave, with
// the counter floor that puts every later ID above every ID the old system could have handed
// out. Pure: the importer reads both stores and writes the plan in one transaction. This file
// holds what the plans share; import-plan-segments.ts plans Leaf and Tinyid, import-plan-rules.ts
// plans id_server.
import type { Interleave } from './layout.js';
import type { IdServerRule } from './idserver-lua.js';
import { SpecProblems, TAG_NAME } from './spec-problems.js';
import { specFromCreate, type TagSpec } from './tag-spec.js';

export const SYSTEMS = ['leaf', 'tinyid', 'id_server', 'leaf-snowflake'] as const;
export type OldSystem = (typeof SYSTEMS)[number];

export type { Interleave };

/** A Leaf biz_tag or a Tinyid biz_type: every ID it handed out is at most maxId. */
export interface OldSegmentTag extends Interleave {
  readonly tag: string;
  /** Decimal string (BIGINT). */
  readonly maxId: string;
  readonly step: number;
  readonly description: string;
  /**
   * Tinyid tokens allowed to this biz_type (plain text as Tinyid stores them), with the bizType
   * as their tiny_id_token row spells it: the name Tinyid's callers send, which reached this
   * row under the table's collation (case-insensitive) even when spelled otherwise.
   */
  readonly tokens: readonly { readonly name: string; readonly token: string; readonly bizType?: string }[];
}

/** One row of id_server's counter table, or one save its log holds. */
export interface OldCounterRow {
  readonly nodeOffset: number;
  /**
   * The saved counter. When a node reaches it, id_server queues the next save (this value +
   * id_step * batch_save) and keeps handing out counters before that write lands; a failed
   * write is logged and dropped. So the node may have handed out up to id_step * batch_save
   * above the row after a crash, and more after failed writes.
   */
  readonly counter: number;
  /** Seconds since 1970; for a save known by its local time alone, the earliest instant it can be. */
  readonly updateTime: number;
  /**
   * A save id_server logged as failed on a full queue ("save failed ... counter:N"): the local
   * wall-clock time of its line (ms since 1970-01-01 00:00 local). Its instant and node are not
   * known (nodeOffset -1).
   */
  readonly loggedWallMs?: number;
  readonly ruleName: string;
  readonly appName: string;
  /** Where a value other than the counter table's comes from ("<log>:<line>"). */
  readonly source?: string;
}

export interface OldRule extends Interleave {
  readonly tag: string;
  readonly file: string;
  readonly rule: IdServerRule;
  /**
   * The IANA zone the operator says id_server ran in: the zone of the tag created. Undefined
   * when not given; a rule whose IDs carry a date or whose counter resets is then refused.
   */
  readonly timeZone: string | undefined;
  /** config.json's batch_save of the rule (1 when absent): saves lie id_step * batch_save apart. */
  readonly batchSave: number;
}

/** A floor the operator gives: the rule's counters (of one app, or of every app) continue above `counter`. */
export interface OperatorFloor {
  readonly rule: string;
  readonly app?: string;
  readonly counter: number;
}

export interface RulePlanOptions {
  readonly force?: boolean;
  /** Counter values added above every saved counter's bound (saved + id_step * batch_save). */
  readonly margin?: number;
  readonly floors?: readonly OperatorFloor[];
  /** Apply floors read from id_server's log even where they reach max_counter (--trust-log). */
  readonly trustLog?: boolean;
}

/** What idmint holds for a tag of the same name. */
export interface CurrentTag {
  readonly spec: TagSpec;
  readonly epoch: number;
  readonly counterFloor: number;
  /** High-water marks by "<shard>/<scope>". */
  readonly marks: ReadonlyMap<string, number>;
  /**
   * The lowest counter value of the segments allocated in the current epoch, by
   * "<shard>/<scope>": Redis may still hold them, so a mark above the old maximum is not
   * enough while one of them starts at or below it.
   */
  readonly lowestLive: ReadonlyMap<string, number>;
  readonly tokenHashes: ReadonlySet<string>;
}

/** idmint's tags of the names being imported: live ones, and names of deleted ones. */
export interface Current {
  readonly live: ReadonlyMap<string, CurrentTag>;
  readonly deleted: ReadonlySet<string>;
}

export const markKey = (shard: number, scope: string): string => `${shard}/${scope}`;

export interface Floor {
  readonly shard: number;
  /** '' for segment tags, "<app>/<period>" for rule counters. */
  readonly scope: string;
  /** The counter value every later one lies above (idmint_counters.max_id). */
  readonly counter: number;
}

export interface TagPlan {
  readonly tag: string;
  readonly mode: 'segment' | 'rule' | 'snowflake';
  readonly action: 'create' | 'raise' | 'unchanged';
  /** The definition created (action create), or the current one. */
  readonly spec: TagSpec;
  /** action raise: the epoch the tag must still have when the plan is written. */
  readonly epoch?: number;
  /** Segment tags: the tag's counter floor (counters of shards not yet used start above it). */
  readonly counterFloor?: number;
  /** High-water marks raised (or set on creation). */
  readonly floors: readonly Floor[];
  /** Client tokens to add, by name and SHA-256. */
  readonly tokens: readonly { readonly name: string; readonly hash: string }[];
  /** The highest ID (segment) or counter (rule, per app) of the old system, for the report. */
  readonly oldMax: string;
  readonly notes: readonly string[];
}

export interface ImportPlan {
  readonly system: OldSystem;
  readonly tags: readonly TagPlan[];
  readonly notes: readonly string[];
}

/** The highest mark of (shard, scope), or the tag's floor for a counter not yet used. */
function markOf(cur: CurrentTag, shard: number, scope: string): number {
  return cur.marks.get(markKey(shard, scope)) ?? (scope === '' ? cur.counterFloor : 0);
}

/** Whether a counter may still hand out a value at or below `floor`. */
export function below(cur: CurrentTag, shard: number, scope: string, floor: number): boolean {
  return markOf(cur, shard, scope) < floor || (cur.lowestLive.get(markKey(shard, scope)) ?? Infinity) <= floor;
}

/** Problems that stop the whole import for a name idmint already has. */
export function clash(current: Current, want: TagSpec, what: string): string | undefined {
  const name = want.tag;
  const cur = current.live.get(name);
  if (!cur && current.deleted.has(name))
    return `tag "${name}" was deleted in idmint; re-create it (or choose another name in the old system) before importing ${what}`;
  if (!cur) return undefined;
  if (cur.spec.mode !== want.mode)
    return `tag "${name}" exists in idmint as a ${cur.spec.mode} tag; ${what} needs a ${want.mode} tag: rename one of them`;
  if (cur.spec.permute)
    return `tag "${name}" has permuted IDs in idmint, spread over its whole domain: they cannot continue above the IDs of ${what}`;
  const [existing, wanted] = [cur.spec, want];
  if (existing.stride !== wanted.stride || existing.offset !== wanted.offset) {
    return `tag "${name}" exists in idmint with stride ${existing.stride} and offset ${existing.offset}; ${what} needs stride ${wanted.stride} and offset ${wanted.offset}`;
  }
  if (want.mode === 'rule' && cur.spec.mode === 'rule') {
    const [existingRule, wantedRule] = [cur.spec.rule, want.rule];
    if (
      existingRule.template !== wantedRule.template ||
      existingRule.minCounter !== wantedRule.minCounter ||
      existingRule.resetSeconds !== wantedRule.resetSeconds ||
      existingRule.timeZone !== wantedRule.timeZone
    ) {
      return `rule "${name}" exists in idmint with template ${existingRule.template} (counter from ${existingRule.minCounter}, reset ${existingRule.resetSeconds} s, ${existingRule.timeZone}); ${what} writes ${wantedRule.template} (from ${wantedRule.minCounter}, reset ${wantedRule.resetSeconds} s, ${wantedRule.timeZone}): its counters would not continue the old IDs`;
    }
  }
  return undefined;
}

export function checkName(tag: string, problems: string[], what: string): boolean {
  if (TAG_NAME.test(tag)) return true;
  problems.push(
    `${what} "${tag}" is not a valid idmint tag name ([A-Za-z0-9_.-]{1,64}); rename it in the old system first`,
  );
  return false;
}

export function specOf(body: Record<string, unknown>, problems: string[], what: string): TagSpec | undefined {
  try {
    return specFromCreate(body);
  } catch (error) {
    if (!(error instanceof SpecProblems)) throw error;
    problems.push(...error.problems.map((p) => `${what}: ${p}`));
    return undefined;
  }
}
