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

function intField(body: Body, name: string, min: number, max: number, problems: string[]): number | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${name} must be an integer from ${min} to ${max}`);
    return undefined;
  }
  return value;
}

function readFields(body: Body, problems: string[]): Partial<Record<keyof TagSpec, unknown>> {
  const out: Partial<Record<keyof TagSpec, unknown>> = {};
  for (const field of Object.keys(body))
    if (
      !(field in FIELD_NAMES) &&
      field !== 'permute' &&
      !SNOWFLAKE_FIELDS.includes(field) &&
      !RULE_FIELDS.includes(field)
    )
      problems.push(`unknown field "${field}"`);
  if (body.tag !== undefined && (typeof body.tag !== 'string' || !TAG_NAME.test(body.tag)))
    problems.push(`tag must match ${TAG_NAME_CHARS}`);
  else out.tag = body.tag;
  if (body.mode !== undefined) {
    if (!MODES.includes(body.mode as Mode)) problems.push(`mode must be one of ${MODES.join(', ')}`);
    else if (!SERVED_MODES.includes(body.mode as Mode))
      problems.push(
        `mode "${String(body.mode)}" is not available in this version; available: ${SERVED_MODES.join(', ')}`,
      );
    else out.mode = body.mode;
  }
  if (body.order !== undefined && body.order !== 'global' && body.order !== 'node')
    problems.push('order must be "global" or "node"');
  else out.order = body.order;
  if (body.layout !== undefined && body.layout !== 'plain' && body.layout !== 'sharded')
    problems.push('layout must be "plain" or "sharded"');
  else out.layout = body.layout;
  out.shards = intField(body, 'shards', 1, 4096, problems);
  out.appBits = intField(body, 'app_bits', 0, 16, problems);
  out.appId = intField(body, 'app_id', 0, 65535, problems);
  out.step = intField(body, 'step', 1, 100_000_000, problems);
  out.minStep = intField(body, 'min_step', 1, 100_000_000, problems);
  out.maxStep = intField(body, 'max_step', 1, 100_000_000, problems);
  out.targetSeconds = intField(body, 'target_seconds', 1, 86_400, problems);
  out.nodeBlock = intField(body, 'node_block', 1, 1_000_000, problems);
  out.stride = intField(body, 'stride', 1, MAX_STRIDE, problems);
  out.offset = intField(body, 'offset', 0, MAX_STRIDE - 1, problems);
  out.keyRetentionSeconds = intField(body, 'key_retention_seconds', KEY_RETENTION.min, KEY_RETENTION.max, problems);
  if (body.prefetch !== undefined) {
    if (typeof body.prefetch !== 'number' || !(body.prefetch > 0 && body.prefetch < 1))
      problems.push('prefetch must be a number between 0 and 1 (exclusive)');
    else out.prefetch = body.prefetch;
  }
  if (body.max_id_limit !== undefined) {
    const value = body.max_id_limit;
    const decimal =
      typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' ? value : '';
    if (!/^[1-9]\d{0,18}$/.test(decimal) || BigInt(decimal) > (1n << 63n) - 1n)
      problems.push('max_id_limit must be a positive integer (a decimal string above 2^53) no larger than 2^63-1');
    else out.maxIdLimit = decimal;
  }
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean') problems.push('enabled must be true or false');
  else out.enabled = body.enabled;
  if (body.description !== undefined && (typeof body.description !== 'string' || body.description.length > 255))
    problems.push('description must be a string of at most 255 characters');
  else out.description = body.description;
  for (const key of Object.keys(out) as (keyof TagSpec)[]) if (out[key] === undefined) delete out[key];
  return out;
}

function checkWhole(spec: Exclude<TagSpec, { mode: 'snowflake' }>, problems: string[]): void {
  if (spec.minStep > spec.maxStep) problems.push('min_step must not exceed max_step');
  if (spec.step < spec.minStep || spec.step > spec.maxStep)
    problems.push('step must lie between min_step and max_step');
  if (spec.layout === 'sharded') {
    if (spec.appId >= 2 ** spec.appBits) problems.push(`app_id must be below 2^app_bits (${2 ** spec.appBits})`);
  } else if (spec.shards !== 1 || spec.appId !== 0) {
    problems.push('shards and app_id apply to layout "sharded" only');
  }
  if (spec.mode === 'segment' && spec.permute) permuteProblems(spec.permute, spec, problems);
  if (spec.offset >= spec.stride) problems.push(`offset must be below stride (${spec.stride})`);
  else if (spec.mode === 'rule') {
    if (periodCapacity(spec.rule, spec) < 1)
      problems.push(`no counter value from min_counter to max_counter is ${spec.offset} (mod ${spec.stride})`);
  } else if (counterLimit(spec, BigInt(spec.maxIdLimit)) < 1)
    problems.push('max_id_limit is too small for this layout to issue any ID');
}

/** Validates a create body and fills in the defaults. Throws SpecProblems. */
export function specFromCreate(body: unknown): TagSpec {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new SpecProblems(['body must be a JSON object']);
  const problems: string[] = [];
  const fields = readFields(body as Body, problems);
  if (fields.tag === undefined && !problems.some((p) => p.startsWith('tag'))) problems.push('tag is required');
  const layout = (fields.layout as TagSpec['layout']) ?? DEFAULTS.layout;
  const raw = body as Body;
  const mode = (fields.mode as Mode) ?? 'segment';
  let snowflake: SnowflakeSpec | null = null;
  let rule: RuleSpec | null = null;
  if (mode !== 'rule')
    for (const field of RULE_FIELDS) if (field in raw) problems.push(`${field} applies to rule tags only`);
  if (mode === 'snowflake') {
    for (const field of SEGMENT_ONLY) if (field in raw) problems.push(`${field} applies to segment tags only`);
    snowflake = snowflakeFromBody(raw, problems);
  } else if (mode === 'rule') {
    for (const field of [...NOT_FOR_RULES, ...SNOWFLAKE_ONLY])
      if (field in raw) problems.push(`${field} does not apply to rule tags`);
    rule = ruleFromBody(raw, problems);
  } else {
    for (const field of SNOWFLAKE_FIELDS) if (field in raw) problems.push(`${field} applies to snowflake tags only`);
  }
  const permute = mode === 'segment' ? permuteFromBody(raw.permute, problems) : null;
  const steps = defaultSteps(
    fields.step as number | undefined,
    fields.minStep as number | undefined,
    fields.maxStep as number | undefined,
  );
  const interleave = {
    stride: (fields.stride as number) ?? DEFAULTS.stride,
    offset: (fields.offset as number) ?? DEFAULTS.offset,
  };
  const base: TagBase = {
    tag: (fields.tag as string) ?? '',
    order: (fields.order as TagSpec['order']) ?? DEFAULTS.order,
    layout,
    shards: (fields.shards as number) ?? (layout === 'sharded' ? DEFAULTS.shardedShards : DEFAULTS.shards),
    appId: (fields.appId as number) ?? DEFAULTS.appId,
    appBits: (fields.appBits as number) ?? (layout === 'sharded' ? DEFAULTS.appBits : 0),
    step: steps.step,
    minStep: steps.minStep,
    maxStep: steps.maxStep,
    targetSeconds: (fields.targetSeconds as number) ?? DEFAULTS.targetSeconds,
    prefetch: (fields.prefetch as number) ?? DEFAULTS.prefetch,
    maxIdLimit: rule
      ? String(periodCapacity(rule, interleave))
      : ((fields.maxIdLimit as string) ?? (permute ? String(domainMax(permute)) : DEFAULTS.maxIdLimit)),
    nodeBlock: (fields.nodeBlock as number) ?? DEFAULTS.nodeBlock,
    ...interleave,
    enabled: (fields.enabled as boolean) ?? true,
    description: (fields.description as string) ?? '',
    keyRetentionSeconds: (fields.keyRetentionSeconds as number) ?? DEFAULTS.keyRetentionSeconds,
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
  const raw = body as Body;
  const isRule = current.mode === 'rule';
  const changeable = isRule ? SNOWFLAKE_ONLY : SNOWFLAKE_FIELDS;
  for (const field of [...IMMUTABLE, ...changeable])
    if (field in raw) problems.push(`${field} cannot be changed after creation`);
  if (current.mode === 'snowflake')
    for (const field of SEGMENT_ONLY) if (field in raw) problems.push(`${field} applies to segment tags only`);
  const misplaced = isRule ? NOT_FOR_RULES : RULE_FIELDS;
  for (const field of misplaced)
    if (field in raw)
      problems.push(isRule ? `${field} does not apply to rule tags` : `${field} applies to rule tags only`);
  const fields = readFields(raw, problems);
  const rule = current.mode === 'rule' ? ruleFromUpdate(current.rule, raw, problems) : null;
  const spec = {
    ...current,
    ...fields,
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

function snowflakeFromBody(body: Body, problems: string[]): SnowflakeSpec | null {
  const presetName = body.preset ?? 'snowflake';
  if (typeof presetName !== 'string' || !(presetName in PRESETS)) {
    problems.push(`preset must be one of ${Object.keys(PRESETS).join(', ')}`);
    return null;
  }
  const base: SnowflakeLayout = PRESETS[presetName as PresetName];
  let epochMs = base.epochMs;
  if (body.epoch !== undefined) {
    const givenMs =
      typeof body.epoch === 'number' ? body.epoch : typeof body.epoch === 'string' ? Date.parse(body.epoch) : NaN;
    if (!Number.isSafeInteger(givenMs)) problems.push('epoch must be an ISO 8601 date or milliseconds since 1970');
    else if (givenMs > Date.now()) problems.push('epoch must not lie in the future');
    else epochMs = givenMs;
  }
  const num = (k: string, def: number) => (body[k] === undefined ? def : (body[k] as number));
  const layout: SnowflakeLayout = {
    epochMs,
    unit: (body.time_unit ?? base.unit) as SnowflakeLayout['unit'],
    timeBits: num('time_bits', base.timeBits),
    workerBits: num('worker_bits', base.workerBits),
    seqBits: num('seq_bits', base.seqBits),
  };
  problems.push(...layoutProblems(layout));
  if (body.force !== undefined && typeof body.force !== 'boolean') problems.push('force must be true or false');
  if (problems.length === 0) {
    const end = runsOutAt(layout);
    const minEnd = Date.now() + MIN_LIFETIME_YEARS * 365.25 * 86_400_000;
    if (end.getTime() < minEnd && body.force !== true) {
      problems.push(
        `this layout runs out at ${end.toISOString()}, in under ${MIN_LIFETIME_YEARS} years; send "force": true to create it anyway`,
      );
    }
  }
  return { ...layout, preset: presetName as PresetName };
}

/** The wire form of a spec (snake_case, as accepted by create). */
export function specToJson(spec: TagSpec): Record<string, unknown> {
  if (spec.mode === 'snowflake') {
    const layout = spec.snowflake;
    return {
      tag: spec.tag,
      mode: spec.mode,
      preset: layout.preset,
      epoch: new Date(layout.epochMs).toISOString(),
      time_unit: layout.unit,
      time_bits: layout.timeBits,
      worker_bits: layout.workerBits,
      seq_bits: layout.seqBits,
      enabled: spec.enabled,
      description: spec.description,
      key_retention_seconds: spec.keyRetentionSeconds,
    };
  }
  const out: Record<string, unknown> = {};
  for (const [wire, key] of Object.entries(FIELD_NAMES)) out[wire] = spec[key];
  if (spec.mode === 'segment') {
    if (spec.permute) out.permute = permuteToJson(spec.permute);
    return out;
  }
  for (const field of NOT_FOR_RULES) delete out[field];
  return Object.assign(out, ruleToJson(spec.rule));
}
