// What a tag is, its defaults, and the validation of admin input (create and update). Pure:
// the admin routes call these and turn the problems into one INVALID_ARGUMENT answer. The
// kinds of tag, one union (TagSpec), and their stored form are in tag-kinds.ts.
import { counterLimit, MAX_COUNTER, MAX_STRIDE } from './layout.js';
import { MIN_LIFETIME_YEARS, SpecProblems, TAG_NAME } from './spec-problems.js';
import { TAG_NAME_CHARS } from './tag-name.js';
import { domainMax, type PermuteSpec } from './permute.js';
import { permuteFromBody, permuteProblems, permuteToJson } from './permute-spec.js';
import {
  DEFAULT_KEY_RETENTION_SECONDS,
  MODES,
  type Mode,
  type SnowflakeSpec,
  type TagBase,
  type TagSpec,
} from './tag-kinds.js';

export { MIN_LIFETIME_YEARS, SpecProblems, TAG_NAME };
export { MODES, type Mode, type SnowflakeSpec, type TagSpec };
export type { RuleTagSpec, SegmentTagSpec, SnowflakeTagSpec, SpecOf } from './tag-kinds.js';
import { periodCapacity, ruleFromBody, ruleFromUpdate, RULE_FIELDS, ruleToJson, type RuleSpec } from './rule-spec.js';
import { layoutProblems, PRESETS, runsOutAt, type PresetName, type SnowflakeLayout } from './snowflake-layout.js';

/** Modes this version can serve; the others are refused at creation with a clear message. */
export const SERVED_MODES: readonly Mode[] = ['segment', 'snowflake', 'rule'];

export const DEFAULTS = {
  order: 'global',
  layout: 'plain',
  shards: 1,
  shardedShards: 64,
  appId: 0,
  appBits: 8,
  step: 1000,
  minStep: 100,
  maxStep: 1_000_000,
  targetSeconds: 60,
  prefetch: 0.2,
  maxIdLimit: String(MAX_COUNTER),
  nodeBlock: 1000,
  stride: 1,
  offset: 0,
  keyRetentionSeconds: DEFAULT_KEY_RETENTION_SECONDS,
} as const;

/** Bounds of key_retention_seconds: a minute to 30 days. */
export const KEY_RETENTION = { min: 60, max: 2_592_000 } as const;

type Body = Record<string, unknown>;

const FIELD_NAMES: Record<string, keyof TagSpec> = {
  tag: 'tag',
  mode: 'mode',
  order: 'order',
  layout: 'layout',
  shards: 'shards',
  app_id: 'appId',
  app_bits: 'appBits',
  step: 'step',
  min_step: 'minStep',
  max_step: 'maxStep',
  target_seconds: 'targetSeconds',
  prefetch: 'prefetch',
  max_id_limit: 'maxIdLimit',
  node_block: 'nodeBlock',
  stride: 'stride',
  offset: 'offset',
  enabled: 'enabled',
  description: 'description',
  key_retention_seconds: 'keyRetentionSeconds',
};
/** Snowflake layout fields (create only), and the segment fields a snowflake tag refuses. */
const SNOWFLAKE_FIELDS = ['preset', 'epoch', 'time_unit', 'time_bits', 'worker_bits', 'seq_bits', 'force'];
const SEGMENT_ONLY = [
  'order',
  'layout',
  'shards',
  'app_id',
  'app_bits',
  'step',
  'min_step',
  'max_step',
  'target_seconds',
  'prefetch',
  'max_id_limit',
  'node_block',
  'stride',
  'offset',
  'permute',
];
/** Segment fields that mean nothing for a rule (its counters are plain and bounded by max_counter). */
const NOT_FOR_RULES = ['layout', 'shards', 'app_id', 'app_bits', 'max_id_limit', 'permute'];
const SNOWFLAKE_ONLY = SNOWFLAKE_FIELDS.filter((k) => k !== 'force');
/** Fields fixed at creation: changing them would change what existing IDs mean. */
const IMMUTABLE = ['tag', 'mode', 'order', 'layout', 'shards', 'app_id', 'app_bits', 'stride', 'offset', 'permute'];

function intField(b: Body, name: string, min: number, max: number, problems: string[]): number | undefined {
  const v = b[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    problems.push(`${name} must be an integer from ${min} to ${max}`);
    return undefined;
  }
  return v;
}

function readFields(b: Body, problems: string[]): Partial<Record<keyof TagSpec, unknown>> {
  const out: Partial<Record<keyof TagSpec, unknown>> = {};
  for (const k of Object.keys(b))
    if (!(k in FIELD_NAMES) && k !== 'permute' && !SNOWFLAKE_FIELDS.includes(k) && !RULE_FIELDS.includes(k))
      problems.push(`unknown field "${k}"`);
  if (b.tag !== undefined && (typeof b.tag !== 'string' || !TAG_NAME.test(b.tag)))
    problems.push(`tag must match ${TAG_NAME_CHARS}`);
  else out.tag = b.tag;
  if (b.mode !== undefined) {
    if (!MODES.includes(b.mode as Mode)) problems.push(`mode must be one of ${MODES.join(', ')}`);
    else if (!SERVED_MODES.includes(b.mode as Mode))
      problems.push(`mode "${String(b.mode)}" is not available in this version; available: ${SERVED_MODES.join(', ')}`);
    else out.mode = b.mode;
  }
  if (b.order !== undefined && b.order !== 'global' && b.order !== 'node')
    problems.push('order must be "global" or "node"');
  else out.order = b.order;
  if (b.layout !== undefined && b.layout !== 'plain' && b.layout !== 'sharded')
    problems.push('layout must be "plain" or "sharded"');
  else out.layout = b.layout;
  out.shards = intField(b, 'shards', 1, 4096, problems);
  out.appBits = intField(b, 'app_bits', 0, 16, problems);
  out.appId = intField(b, 'app_id', 0, 65535, problems);
  out.step = intField(b, 'step', 1, 100_000_000, problems);
  out.minStep = intField(b, 'min_step', 1, 100_000_000, problems);
  out.maxStep = intField(b, 'max_step', 1, 100_000_000, problems);
  out.targetSeconds = intField(b, 'target_seconds', 1, 86_400, problems);
  out.nodeBlock = intField(b, 'node_block', 1, 1_000_000, problems);
  out.stride = intField(b, 'stride', 1, MAX_STRIDE, problems);
  out.offset = intField(b, 'offset', 0, MAX_STRIDE - 1, problems);
  out.keyRetentionSeconds = intField(b, 'key_retention_seconds', KEY_RETENTION.min, KEY_RETENTION.max, problems);
  if (b.prefetch !== undefined) {
    if (typeof b.prefetch !== 'number' || !(b.prefetch > 0 && b.prefetch < 1))
      problems.push('prefetch must be a number between 0 and 1 (exclusive)');
    else out.prefetch = b.prefetch;
  }
  if (b.max_id_limit !== undefined) {
    const v = b.max_id_limit;
    const s = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' ? v : '';
    if (!/^[1-9]\d{0,18}$/.test(s) || BigInt(s) > (1n << 63n) - 1n)
      problems.push('max_id_limit must be a positive integer (a decimal string above 2^53) no larger than 2^63-1');
    else out.maxIdLimit = s;
  }
  if (b.enabled !== undefined && typeof b.enabled !== 'boolean') problems.push('enabled must be true or false');
  else out.enabled = b.enabled;
  if (b.description !== undefined && (typeof b.description !== 'string' || b.description.length > 255))
    problems.push('description must be a string of at most 255 characters');
  else out.description = b.description;
  for (const k of Object.keys(out) as (keyof TagSpec)[]) if (out[k] === undefined) delete out[k];
  return out;
}

function checkWhole(s: Exclude<TagSpec, { mode: 'snowflake' }>, problems: string[]): void {
  if (s.minStep > s.maxStep) problems.push('min_step must not exceed max_step');
  if (s.step < s.minStep || s.step > s.maxStep) problems.push('step must lie between min_step and max_step');
  if (s.layout === 'sharded') {
    if (s.appId >= 2 ** s.appBits) problems.push(`app_id must be below 2^app_bits (${2 ** s.appBits})`);
  } else if (s.shards !== 1 || s.appId !== 0) {
    problems.push('shards and app_id apply to layout "sharded" only');
  }
  if (s.mode === 'segment' && s.permute) permuteProblems(s.permute, s, problems);
  if (s.offset >= s.stride) problems.push(`offset must be below stride (${s.stride})`);
  else if (s.mode === 'rule') {
    if (periodCapacity(s.rule, s) < 1)
      problems.push(`no counter value from min_counter to max_counter is ${s.offset} (mod ${s.stride})`);
  } else if (counterLimit(s, BigInt(s.maxIdLimit)) < 1)
    problems.push('max_id_limit is too small for this layout to issue any ID');
}

/** Validates a create body and fills in the defaults. Throws SpecProblems. */
export function specFromCreate(body: unknown): TagSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SpecProblems(['body must be a JSON object']);
  const problems: string[] = [];
  const f = readFields(body as Body, problems);
  if (f.tag === undefined && !problems.some((p) => p.startsWith('tag'))) problems.push('tag is required');
  const layout = (f.layout as TagSpec['layout']) ?? DEFAULTS.layout;
  const b = body as Body;
  const mode = (f.mode as Mode) ?? 'segment';
  let snowflake: SnowflakeSpec | null = null;
  let rule: RuleSpec | null = null;
  if (mode !== 'rule') for (const k of RULE_FIELDS) if (k in b) problems.push(`${k} applies to rule tags only`);
  if (mode === 'snowflake') {
    for (const k of SEGMENT_ONLY) if (k in b) problems.push(`${k} applies to segment tags only`);
    snowflake = snowflakeFromBody(b, problems);
  } else if (mode === 'rule') {
    for (const k of [...NOT_FOR_RULES, ...SNOWFLAKE_ONLY])
      if (k in b) problems.push(`${k} does not apply to rule tags`);
    rule = ruleFromBody(b, problems);
  } else {
    for (const k of SNOWFLAKE_FIELDS) if (k in b) problems.push(`${k} applies to snowflake tags only`);
  }
  const permute = mode === 'segment' ? permuteFromBody(b.permute, problems) : null;
  const steps = defaultSteps(
    f.step as number | undefined,
    f.minStep as number | undefined,
    f.maxStep as number | undefined,
  );
  const interleave = {
    stride: (f.stride as number) ?? DEFAULTS.stride,
    offset: (f.offset as number) ?? DEFAULTS.offset,
  };
  const base: TagBase = {
    tag: (f.tag as string) ?? '',
    order: (f.order as TagSpec['order']) ?? DEFAULTS.order,
    layout,
    shards: (f.shards as number) ?? (layout === 'sharded' ? DEFAULTS.shardedShards : DEFAULTS.shards),
    appId: (f.appId as number) ?? DEFAULTS.appId,
    appBits: (f.appBits as number) ?? (layout === 'sharded' ? DEFAULTS.appBits : 0),
    step: steps.step,
    minStep: steps.minStep,
    maxStep: steps.maxStep,
    targetSeconds: (f.targetSeconds as number) ?? DEFAULTS.targetSeconds,
    prefetch: (f.prefetch as number) ?? DEFAULTS.prefetch,
    maxIdLimit: rule
      ? String(periodCapacity(rule, interleave))
      : ((f.maxIdLimit as string) ?? (permute ? String(domainMax(permute)) : DEFAULTS.maxIdLimit)),
    nodeBlock: (f.nodeBlock as number) ?? DEFAULTS.nodeBlock,
    ...interleave,
    enabled: (f.enabled as boolean) ?? true,
    description: (f.description as string) ?? '',
    keyRetentionSeconds: (f.keyRetentionSeconds as number) ?? DEFAULTS.keyRetentionSeconds,
  };
  if (problems.length > 0) throw new SpecProblems(problems);
  const spec = withKind(base, mode, snowflake, rule, permute ?? null);
  if (spec.mode !== 'snowflake') checkWhole(spec, problems);
  if (problems.length > 0) throw new SpecProblems(problems);
  return spec;
}

/** The spec of a create body's kind, with the settings of that kind (validated: present). */
function withKind(
  base: TagBase,
  mode: Mode,
  snowflake: SnowflakeSpec | null,
  rule: RuleSpec | null,
  permute: PermuteSpec | null,
): TagSpec {
  if (mode === 'snowflake' && snowflake) return { ...base, mode, snowflake };
  if (mode === 'rule' && rule) return { ...base, mode, rule };
  if (mode === 'segment') return { ...base, mode, permute };
  throw new Error(`a ${mode} tag without its settings passed validation`);
}

/** Applies an update body to a stored spec. Throws SpecProblems. */
export function specFromUpdate(current: TagSpec, body: unknown): TagSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SpecProblems(['body must be a JSON object']);
  const problems: string[] = [];
  const b = body as Body;
  const isRule = current.mode === 'rule';
  const changeable = isRule ? SNOWFLAKE_ONLY : SNOWFLAKE_FIELDS;
  for (const k of [...IMMUTABLE, ...changeable]) if (k in b) problems.push(`${k} cannot be changed after creation`);
  if (current.mode === 'snowflake')
    for (const k of SEGMENT_ONLY) if (k in b) problems.push(`${k} applies to segment tags only`);
  const misplaced = isRule ? NOT_FOR_RULES : RULE_FIELDS;
  for (const k of misplaced)
    if (k in b) problems.push(isRule ? `${k} does not apply to rule tags` : `${k} applies to rule tags only`);
  const f = readFields(b, problems);
  const rule = current.mode === 'rule' ? ruleFromUpdate(current.rule, b, problems) : null;
  const spec = {
    ...current,
    ...f,
    ...(rule ? { rule, maxIdLimit: String(periodCapacity(rule, current)) } : {}),
  } as TagSpec;
  if (problems.length === 0 && spec.mode !== 'snowflake') checkWhole(spec, problems);
  if (problems.length > 0) throw new SpecProblems(problems);
  return spec;
}

/** Fills the step fields not given so that they agree with the ones given. */
function defaultSteps(
  step?: number,
  minStep?: number,
  maxStep?: number,
): { step: number; minStep: number; maxStep: number } {
  const lo = minStep ?? Math.min(DEFAULTS.minStep, step ?? DEFAULTS.minStep, maxStep ?? DEFAULTS.minStep);
  const hi = maxStep ?? Math.max(DEFAULTS.maxStep, step ?? 0, minStep ?? 0);
  return { step: step ?? Math.min(hi, Math.max(lo, DEFAULTS.step)), minStep: lo, maxStep: hi };
}

function snowflakeFromBody(b: Body, problems: string[]): SnowflakeSpec | null {
  const presetName = b.preset ?? 'snowflake';
  if (typeof presetName !== 'string' || !(presetName in PRESETS)) {
    problems.push(`preset must be one of ${Object.keys(PRESETS).join(', ')}`);
    return null;
  }
  const base: SnowflakeLayout = PRESETS[presetName as PresetName];
  let epochMs = base.epochMs;
  if (b.epoch !== undefined) {
    const e = typeof b.epoch === 'number' ? b.epoch : typeof b.epoch === 'string' ? Date.parse(b.epoch) : NaN;
    if (!Number.isSafeInteger(e)) problems.push('epoch must be an ISO 8601 date or milliseconds since 1970');
    else if (e > Date.now()) problems.push('epoch must not lie in the future');
    else epochMs = e;
  }
  const num = (k: string, def: number) => (b[k] === undefined ? def : (b[k] as number));
  const layout: SnowflakeLayout = {
    epochMs,
    unit: (b.time_unit ?? base.unit) as SnowflakeLayout['unit'],
    timeBits: num('time_bits', base.timeBits),
    workerBits: num('worker_bits', base.workerBits),
    seqBits: num('seq_bits', base.seqBits),
  };
  problems.push(...layoutProblems(layout));
  if (b.force !== undefined && typeof b.force !== 'boolean') problems.push('force must be true or false');
  if (problems.length === 0) {
    const end = runsOutAt(layout);
    const minEnd = Date.now() + MIN_LIFETIME_YEARS * 365.25 * 86_400_000;
    if (end.getTime() < minEnd && b.force !== true) {
      problems.push(
        `this layout runs out at ${end.toISOString()}, in under ${MIN_LIFETIME_YEARS} years; send "force": true to create it anyway`,
      );
    }
  }
  return { ...layout, preset: presetName as PresetName };
}

/** The wire form of a spec (snake_case, as accepted by create). */
export function specToJson(s: TagSpec): Record<string, unknown> {
  if (s.mode === 'snowflake') {
    const l = s.snowflake;
    return {
      tag: s.tag,
      mode: s.mode,
      preset: l.preset,
      epoch: new Date(l.epochMs).toISOString(),
      time_unit: l.unit,
      time_bits: l.timeBits,
      worker_bits: l.workerBits,
      seq_bits: l.seqBits,
      enabled: s.enabled,
      description: s.description,
      key_retention_seconds: s.keyRetentionSeconds,
    };
  }
  const out: Record<string, unknown> = {};
  for (const [wire, key] of Object.entries(FIELD_NAMES)) out[wire] = s[key];
  if (s.mode === 'segment') {
    if (s.permute) out.permute = permuteToJson(s.permute);
    return out;
  }
  for (const k of NOT_FOR_RULES) delete out[k];
  return Object.assign(out, ruleToJson(s.rule));
}
