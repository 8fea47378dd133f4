// Planning an import from Leaf or Tinyid (segment mode): a segment tag per old key whose first
// counter lies above the old maximum, Tinyid's delta and remainder kept as stride and offset,
// Tinyid's tokens attached as its own lookup finds them. Pure; the shared shapes are in
// import-plan.ts.
import { counterAtOrBelow, counterLimit, shardBits } from './layout.js';
import { SpecProblems } from './spec-problems.js';
import type { TagSpec } from './tag-spec.js';
import {
  below,
  checkName,
  clash,
  specOf,
  type Current,
  type CurrentTag,
  type ImportPlan,
  type OldSegmentTag,
  type TagPlan,
} from './import-plan.js';

/** Low bits below a segment tag's counter in its IDs (sharded layouts). */
function lowBits(spec: TagSpec): number {
  return spec.layout === 'sharded' ? shardBits(spec.shards) + spec.appBits : 0;
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
 * What a Tinyid biz_type's report must say about who can reach it: tokens whose row spells the
 * biz_type otherwise (Tinyid's table matched them ignoring case; idmint's routes match tag
 * names exactly), and a biz_type no token reaches (created disabled, or an idmint tag that
 * stays as open as it was).
 */
function tinyidNotes(oldTag: OldSegmentTag, cur: CurrentTag | undefined): string[] {
  const notes: string[] = [];
  const spellings = new Map<string, string[]>();
  for (const row of oldTag.tokens) {
    if (row.bizType === undefined || row.bizType === oldTag.tag) continue;
    spellings.set(row.bizType, [...(spellings.get(row.bizType) ?? []), row.name]);
  }
  for (const [spelled, names] of spellings) {
    notes.push(
      `token(s) ${names.join(', ')} name bizType "${spelled}", which Tinyid's table matched to "${oldTag.tag}" ignoring case: they open tag "${oldTag.tag}", but callers sending bizType=${spelled} get code 5 (idmint's tag names match exactly) until they send bizType=${oldTag.tag}`,
    );
  }
  if (oldTag.tokens.length > 0) return notes;
  if (!cur) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type, so Tinyid served it to no caller: created disabled (TAG_DISABLED on every route); to serve it, add a client token (POST /v1/admin/tags/${oldTag.tag}/tokens) and enable it (PATCH /v1/admin/tags/${oldTag.tag} {"enabled":true})`,
    );
  } else if (!cur.spec.enabled) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type, and idmint's tag "${oldTag.tag}" is disabled: it serves nothing until an operator enables it (PATCH /v1/admin/tags/${oldTag.tag} {"enabled":true}), after adding a client token to keep it closed to callers without one`,
    );
  } else if (cur.tokenHashes.size === 0) {
    notes.push(
      `no token in tiny_id_token reaches this biz_type (Tinyid served it to no caller), but idmint's tag "${oldTag.tag}" has no client token and is enabled: it stays open to every caller, as it was; add a token or disable it to close it`,
    );
  }
  return notes;
}

/** Plans Leaf's or Tinyid's tags. Throws SpecProblems listing every reason to refuse. */
export function planSegments(
  system: 'leaf' | 'tinyid',
  old: readonly OldSegmentTag[],
  current: Current,
  hash: (token: string) => string,
): ImportPlan {
  const problems: string[] = [];
  const tags: TagPlan[] = [];
  const label = system === 'leaf' ? 'Leaf biz_tag' : 'Tinyid biz_type';
  for (const oldTag of old) {
    if (!checkName(oldTag.tag, problems, label)) continue;
    const notes: string[] = [];
    let step = oldTag.step;
    if (!(step >= 1)) step = 1000;
    if (step > 100_000_000) {
      notes.push(`step ${oldTag.step} lowered to idmint's largest, 100000000`);
      step = 100_000_000;
    }
    const body: Record<string, unknown> = {
      tag: oldTag.tag,
      mode: 'segment',
      step,
      description: oldTag.description.slice(0, 255),
    };
    // Tinyid's clients (tinyid-client) fetch segments and issue IDs from their own memory:
    // idmint serves nextSegmentId only for order node tags, which promise no more than that.
    // Leaf's callers get one ID per request: order global keeps Leaf's global order.
    if (system === 'tinyid') body.order = 'node';
    // Tinyid answers every call without a token of the biz_type with "token is error": one that
    // no token reaches served no caller, and is created closed (disabled) rather than open.
    if (system === 'tinyid' && oldTag.tokens.length === 0) body.enabled = false;
    if (oldTag.stride !== 1 || oldTag.offset !== 0)
      Object.assign(body, { stride: oldTag.stride, offset: oldTag.offset });
    const want = specOf(body, problems, `${label} "${oldTag.tag}"`);
    if (!want) continue;
    const cur = current.live.get(oldTag.tag);
    const why = clash(current, want, `${label} "${oldTag.tag}"`);
    if (why) {
      problems.push(why);
      continue;
    }
    if (cur && system === 'tinyid' && cur.spec.order !== 'node') {
      notes.push(
        `tag "${oldTag.tag}" exists in idmint with order ${cur.spec.order} (kept: order cannot change): nextId serves it, nextSegmentId (tinyid-client) is refused with code 6`,
      );
    }
    const spec = cur?.spec ?? want;
    let floor: number;
    try {
      floor = segmentFloor(spec, BigInt(oldTag.maxId));
    } catch (error) {
      if (error instanceof SpecProblems) problems.push(...error.problems);
      else throw error;
      continue;
    }
    const have = cur ? new Set(cur.tokenHashes) : new Set<string>();
    const tokens: { name: string; hash: string }[] = [];
    for (const row of oldTag.tokens) {
      const hashed = hash(row.token);
      if (have.has(hashed)) continue;
      have.add(hashed);
      tokens.push({ name: row.name.slice(0, 64), hash: hashed });
    }
    if (system === 'tinyid') notes.push(...tinyidNotes(oldTag, cur));
    if (!cur) {
      tags.push({
        tag: oldTag.tag,
        mode: 'segment',
        action: 'create',
        spec,
        counterFloor: floor,
        floors: [],
        tokens,
        oldMax: oldTag.maxId,
        notes,
      });
      continue;
    }
    const low = Array.from({ length: spec.shards }, (_, shard) => shard).filter((shard) =>
      below(cur, shard, '', floor),
    );
    const raise = low.length > 0;
    tags.push({
      tag: oldTag.tag,
      mode: 'segment',
      action: raise ? 'raise' : 'unchanged',
      spec,
      epoch: cur.epoch,
      counterFloor: raise ? Math.max(floor, cur.counterFloor) : undefined,
      floors: raise ? low.map((shard) => ({ shard, scope: '', counter: floor })) : [],
      tokens,
      oldMax: oldTag.maxId,
      notes,
    });
  }
  if (problems.length) throw new SpecProblems(problems);
  return { system, tags, notes: [] };
}

/** The bounds of one period: by app name, by folded app name, and for every app. */
