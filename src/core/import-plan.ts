// Planning an import from Leaf, Tinyid or id_server: from what the old system's store holds
// and what idmint holds now, which tags to create, which to raise and which to leave, with
// the counter floor that puts every later ID above every ID the old system could have handed
// out. Pure: the importer reads both stores and writes the plan in one transaction.
import { EVERY_APP, FOLD_SHARD, foldApp } from './app-fold.js';
import { counterAtOrBelow, counterLimit, shardBits, type Interleave } from './layout.js';
import { periodOf } from './period.js';
import type { IdServerRule } from './idserver-lua.js';
import { firstCounter, periodCapacity } from './rule-spec.js';
import { isValidAppName } from './rule-template.js';
import { SpecProblems, TAG_NAME } from './spec-problems.js';
import { specFromCreate, type TagSpec } from './tag-spec.js';

export const SYSTEMS = ['leaf', 'tinyid', 'id_server'] as const;
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
  /** Seconds since 1970. */
  readonly updateTime: number;
  readonly ruleName: string;
  readonly appName: string;
  /** Where a value other than the counter table's comes from ("<log>:<line>"). */
  readonly source?: string;
}

export interface OldRule extends Interleave {
  readonly tag: string;
  readonly file: string;
  readonly rule: IdServerRule;
  readonly timeZone: string;
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
  readonly mode: 'segment' | 'rule';
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

/** Low bits below a segment tag's counter in its IDs (sharded layouts). */
function lowBits(s: TagSpec): number {
  return s.layout === 'sharded' ? shardBits(s.shards) + s.appBits : 0;
}

/**
 * The counter floor of a segment tag above an old maximum ID: counter k writes the sequence
 * value k * stride + offset, as the ID (plain) or shifted past the shard and app bits
 * (sharded); so every counter above the largest one whose sequence value is at most
 * maxId >> low writes IDs above maxId. The tag must still have a counter above the floor whose
 * ID its max_id_limit allows: the floor is a counter, smaller than the ID by the stride, so
 * comparing it with the largest counter alone lets through maxima whose tag could never
 * answer (stride 2, maximum 2^53: floor 2^52, every later ID above the default limit 2^53-1).
 */
export function segmentFloor(spec: TagSpec, maxId: bigint): number {
  const floor = counterAtOrBelow(spec, maxId >> BigInt(lowBits(spec)));
  if (floor >= BigInt(counterLimit(spec, BigInt(spec.maxIdLimit))))
    throw new SpecProblems([
      `tag "${spec.tag}": the old maximum ${maxId} leaves no room below the tag's max_id_limit ${spec.maxIdLimit} (2^53-1 unless raised): it could never hand out an ID`,
    ]);
  return Number(floor);
}

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

/** The highest mark of (shard, scope), or the tag's floor for a counter not yet used. */
function markOf(cur: CurrentTag, shard: number, scope: string): number {
  return cur.marks.get(markKey(shard, scope)) ?? (scope === '' ? cur.counterFloor : 0);
}

/** Whether a counter may still hand out a value at or below `floor`. */
function below(cur: CurrentTag, shard: number, scope: string, floor: number): boolean {
  return markOf(cur, shard, scope) < floor || (cur.lowestLive.get(markKey(shard, scope)) ?? Infinity) <= floor;
}

/** Problems that stop the whole import for a name idmint already has. */
function clash(current: Current, want: TagSpec, what: string): string | undefined {
  const name = want.tag;
  const cur = current.live.get(name);
  if (!cur && current.deleted.has(name))
    return `tag "${name}" was deleted in idmint; re-create it (or choose another name in the old system) before importing ${what}`;
  if (!cur) return undefined;
  if (cur.spec.mode !== want.mode) return `tag "${name}" exists in idmint as a ${cur.spec.mode} tag; ${what} needs a ${want.mode} tag: rename one of them`;
  const [a, b] = [cur.spec, want];
  if (a.stride !== b.stride || a.offset !== b.offset) {
    return `tag "${name}" exists in idmint with stride ${a.stride} and offset ${a.offset}; ${what} needs stride ${b.stride} and offset ${b.offset}`;
  }
  if (want.rule && cur.spec.rule) {
    const [x, y] = [cur.spec.rule, want.rule];
    if (x.template !== y.template || x.minCounter !== y.minCounter || x.resetSeconds !== y.resetSeconds || x.timeZone !== y.timeZone) {
      return `rule "${name}" exists in idmint with template ${x.template} (counter from ${x.minCounter}, reset ${x.resetSeconds} s, ${x.timeZone}); ${what} writes ${y.template} (from ${y.minCounter}, reset ${y.resetSeconds} s, ${y.timeZone}): its counters would not continue the old IDs`;
    }
  }
  return undefined;
}

function checkName(tag: string, problems: string[], what: string): boolean {
  if (TAG_NAME.test(tag)) return true;
  problems.push(`${what} "${tag}" is not a valid idmint tag name ([A-Za-z0-9_.-]{1,64}); rename it in the old system first`);
  return false;
}

function specOf(body: Record<string, unknown>, problems: string[], what: string): TagSpec | undefined {
  try {
    return specFromCreate(body);
  } catch (e) {
    if (!(e instanceof SpecProblems)) throw e;
    problems.push(...e.problems.map((p) => `${what}: ${p}`));
    return undefined;
  }
}

/**
 * What a Tinyid biz_type's report must say about who can reach it: tokens whose row spells the
 * biz_type otherwise (Tinyid's table matched them ignoring case; idmint's routes match tag
 * names exactly), and a biz_type no token reaches (created disabled, or an idmint tag that
 * stays as open as it was).
 */
function tinyidNotes(o: OldSegmentTag, cur: CurrentTag | undefined): string[] {
  const notes: string[] = [];
  const spellings = new Map<string, string[]>();
  for (const t of o.tokens) {
    if (t.bizType === undefined || t.bizType === o.tag) continue;
    spellings.set(t.bizType, [...(spellings.get(t.bizType) ?? []), t.name]);
  }
  for (const [spelled, names] of spellings) {
    notes.push(
      `token(s) ${names.join(', ')} name bizType "${spelled}", which Tinyid's table matched to "${o.tag}" ignoring case: they open tag "${o.tag}", but callers sending bizType=${spelled} get code 5 (idmint's tag names match exactly) until they send bizType=${o.tag}`,
    );
  }
  if (o.tokens.length > 0) return notes;
  if (!cur) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type, so Tinyid served it to no caller: created disabled (TAG_DISABLED on every route); to serve it, add a client token (POST /v1/admin/tags/${o.tag}/tokens) and enable it (PATCH /v1/admin/tags/${o.tag} {"enabled":true})`,
    );
  } else if (!cur.spec.enabled) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type, and idmint's tag "${o.tag}" is disabled: it serves nothing until an operator enables it (PATCH /v1/admin/tags/${o.tag} {"enabled":true}), after adding a client token to keep it closed to callers without one`,
    );
  } else if (cur.tokenHashes.size === 0) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type (Tinyid served it to no caller), but idmint's tag "${o.tag}" has no client token and is enabled: it stays open to every caller, as it was; add a token or disable it to close it`,
    );
  }
  return notes;
}

/** Plans Leaf's or Tinyid's tags. Throws SpecProblems listing every reason to refuse. */
export function planSegments(system: 'leaf' | 'tinyid', old: readonly OldSegmentTag[], current: Current, hash: (token: string) => string): ImportPlan {
  const problems: string[] = [];
  const tags: TagPlan[] = [];
  const label = system === 'leaf' ? 'Leaf biz_tag' : 'Tinyid biz_type';
  for (const o of old) {
    if (!checkName(o.tag, problems, label)) continue;
    const notes: string[] = [];
    let step = o.step;
    if (!(step >= 1)) step = 1000;
    if (step > 100_000_000) {
      notes.push(`step ${o.step} lowered to idmint's largest, 100000000`);
      step = 100_000_000;
    }
    const body: Record<string, unknown> = { tag: o.tag, mode: 'segment', step, description: o.description.slice(0, 255) };
    // Tinyid's clients (tinyid-client) fetch segments and issue IDs from their own memory:
    // idmint serves nextSegmentId only for order node tags, which promise no more than that.
    // Leaf's callers get one ID per request: order global keeps Leaf's global order.
    if (system === 'tinyid') body.order = 'node';
    // Tinyid answers every call without a token of the biz_type with "token is error": one that
    // no token reaches served no caller, and is created closed (disabled) rather than open.
    if (system === 'tinyid' && o.tokens.length === 0) body.enabled = false;
    if (o.stride !== 1 || o.offset !== 0) Object.assign(body, { stride: o.stride, offset: o.offset });
    const want = specOf(body, problems, `${label} "${o.tag}"`);
    if (!want) continue;
    const cur = current.live.get(o.tag);
    const why = clash(current, want, `${label} "${o.tag}"`);
    if (why) {
      problems.push(why);
      continue;
    }
    if (cur && system === 'tinyid' && cur.spec.order !== 'node') {
      notes.push(
        `tag "${o.tag}" exists in idmint with order ${cur.spec.order} (kept: order cannot change): nextId serves it, nextSegmentId (tinyid-client) is refused with code 6`,
      );
    }
    const spec = cur?.spec ?? want;
    let floor: number;
    try {
      floor = segmentFloor(spec, BigInt(o.maxId));
    } catch (e) {
      if (e instanceof SpecProblems) problems.push(...e.problems);
      else throw e;
      continue;
    }
    const have = cur ? new Set(cur.tokenHashes) : new Set<string>();
    const tokens: { name: string; hash: string }[] = [];
    for (const t of o.tokens) {
      const h = hash(t.token);
      if (have.has(h)) continue;
      have.add(h);
      tokens.push({ name: t.name.slice(0, 64), hash: h });
    }
    if (system === 'tinyid') notes.push(...tinyidNotes(o, cur));
    if (!cur) {
      tags.push({ tag: o.tag, mode: 'segment', action: 'create', spec, counterFloor: floor, floors: [], tokens, oldMax: o.maxId, notes });
      continue;
    }
    const low = Array.from({ length: spec.shards }, (_, shard) => shard).filter((shard) => below(cur, shard, '', floor));
    const raise = low.length > 0;
    tags.push({
      tag: o.tag,
      mode: 'segment',
      action: raise ? 'raise' : 'unchanged',
      spec,
      epoch: cur.epoch,
      counterFloor: raise ? Math.max(floor, cur.counterFloor) : undefined,
      floors: raise ? low.map((shard) => ({ shard, scope: '', counter: floor })) : [],
      tokens,
      oldMax: o.maxId,
      notes,
    });
  }
  if (problems.length) throw new SpecProblems(problems);
  return { system, tags, notes: [] };
}

/** The bounds of one period: by app name, by folded app name, and for every app. */
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
 * counter and the current one. Throws SpecProblems listing every reason to refuse.
 */
export function planRules(rules: readonly OldRule[], rows: readonly OldCounterRow[], current: Current, nowMs: number, opts: RulePlanOptions = {}): ImportPlan {
  const problems: string[] = [];
  const notes: string[] = [];
  const tags: TagPlan[] = [];
  const known = new Set(rules.map((r) => r.tag));
  for (const name of new Set(rows.map((r) => r.ruleName))) {
    if (!known.has(name)) notes.push(`counters of rule "${name}" left out: config.json names no such rule`);
  }
  for (const f of opts.floors ?? []) {
    if (!known.has(f.rule)) problems.push(`a floor was given for rule "${f.rule}", which config.json does not name`);
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
    const logged = { saves: 0, failed: 0 };
    for (const row of rows) {
      if (row.ruleName !== o.tag) continue;
      const p = periodOf(row.updateTime * 1000, rule.timeZone, rule.resetSeconds);
      if (p < period) {
        earlier++;
        continue;
      }
      const folded = foldApp(row.appName);
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
        raiseTo(b.folded, foldApp(f.app), f.counter);
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
    if (logged.saves) tagNotes.push(`${logged.saves} save(s) of this period or later read from id_server's log, ${logged.failed} of them failed writes`);
    if (earlier) tagNotes.push(`${earlier} saved counter(s) of earlier periods left out: those periods' counters are never used again`);
    const oldMax = [...highest].map(([app, c]) => `${app}:${c}`).join(' ') || 'none this period';
    const action = !cur ? 'create' : floors.length ? 'raise' : 'unchanged';
    tags.push({ tag: o.tag, mode: 'rule', action, spec, epoch: cur?.epoch, floors, tokens: [], oldMax, notes: tagNotes });
  }
  if (problems.length) throw new SpecProblems(problems);
  return { system: 'id_server', tags, notes };
}
