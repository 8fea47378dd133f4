// The kinds of tag, as one discriminated union on `mode`, and how a definition is read from
// and written back to its stored form. Every kind keeps the same row (the counter settings
// and segment layout live in columns, which a snowflake tag fills with the defaults and never
// reads); what only one kind has sits beside its mode and is never null there:
//   segment    permute: the keyed permutation of its IDs, or null (an option of the segment:
//              the counter, shards, blocks and floors are the segment's own; only the last
//              step, counter to ID, differs, and core/layout.ts owns that step)
//   rule       rule: the template and the counter bounds of its periods
//   snowflake  snowflake: the time, worker and sequence layout, with its preset
// A definition is parsed once where it is read (the tag store, a create or update body) and
// serialized back to the same shape (the options column's JSON, the admin API's fields).
import type { SegmentLayout } from './layout.js';
import type { PermuteSpec } from './permute.js';
import type { RuleSpec } from './rule-spec.js';
import type { PresetName, SnowflakeLayout } from './snowflake-layout.js';

export const MODES = ['segment', 'snowflake', 'rule'] as const;
export type Mode = (typeof MODES)[number];

export interface SnowflakeSpec extends SnowflakeLayout {
  /** The preset the layout started from. */
  readonly preset: PresetName;
}

/** What every tag's row holds, whatever its kind. */
export interface TagBase extends Omit<SegmentLayout, 'permute'> {
  readonly tag: string;
  readonly order: 'global' | 'node';
  /** Size of the first segment, and of later ones while there is no rate history. */
  readonly step: number;
  readonly minStep: number;
  readonly maxStep: number;
  /** A segment should last about this long at the observed consumption rate. */
  readonly targetSeconds: number;
  /** Fraction of the current segment consumed at which the next one is requested. */
  readonly prefetch: number;
  /** IDs never exceed this (decimal string of a 63-bit value); a rule's: counter values per period. */
  readonly maxIdLimit: string;
  /** `order: node`: IDs a process takes from Redis at once into its memory. */
  readonly nodeBlock: number;
  readonly enabled: boolean;
  readonly description: string;
  /** How long a request's idempotency key is remembered, in seconds. */
  readonly keyRetentionSeconds: number;
}

/** A segment tag: IDs from counters, plain or sharded, maybe interleaved or permuted. */
export interface SegmentTagSpec extends TagBase {
  readonly mode: 'segment';
  /**
   * A permuted segment tag: its IDs are a keyed permutation of its counter (core/permute.ts);
   * null for a plain one. The key is empty until the tag store gives the tag one.
   */
  readonly permute: PermuteSpec | null;
}

/** A rule tag: each (app, period) counter rendered through a template. */
export interface RuleTagSpec extends TagBase {
  readonly mode: 'rule';
  readonly rule: RuleSpec;
  readonly permute?: null;
}

/** A snowflake tag: time, worker id and sequence, under a lease. */
export interface SnowflakeTagSpec extends TagBase {
  readonly mode: 'snowflake';
  readonly snowflake: SnowflakeSpec;
  readonly permute?: null;
}

export type TagSpec = SegmentTagSpec | RuleTagSpec | SnowflakeTagSpec;

/** The spec of one kind. */
export type SpecOf<M extends Mode> = Extract<TagSpec, { readonly mode: M }>;

/** The settings kept as JSON in a tag row's options column, in the order they are written. */
export interface StoredOptions {
  readonly snowflake?: SnowflakeSpec;
  readonly rule?: RuleSpec;
  readonly permute?: PermuteSpec;
  readonly keyRetentionSeconds?: number;
}

/** What a row holds besides its mode and options column. */
export type TagColumns = Omit<TagBase, 'keyRetentionSeconds'>;

/** Retention of idempotency keys of a row whose options name none (rows older than the setting). */
export const DEFAULT_KEY_RETENTION_SECONDS = 86_400;

/**
 * A stored definition, parsed once: the kind named by the row's mode, with the settings of that
 * kind from its options. A row whose kind lacks its settings, or whose mode this version does
 * not know, is refused (a server fault, not a request's).
 */
export function tagFromStorage(mode: string, columns: TagColumns, options: StoredOptions): TagSpec {
  const base = { ...columns, keyRetentionSeconds: options.keyRetentionSeconds ?? DEFAULT_KEY_RETENTION_SECONDS };
  const missing = (what: string) => new Error(`tag "${columns.tag}" is stored as a ${mode} tag without its ${what}`);
  switch (mode) {
    case 'segment':
      return { ...base, mode, permute: options.permute ?? null };
    case 'rule':
      if (options.rule === undefined) throw missing('rule');
      return { ...base, mode, rule: options.rule };
    case 'snowflake':
      if (options.snowflake === undefined) throw missing('layout');
      return { ...base, mode, snowflake: options.snowflake };
    default:
      throw new Error(`tag "${columns.tag}" is stored with mode "${mode}", which this version does not know`);
  }
}

/** The options column of a definition: its kind's settings and the key retention, as stored before the union. */
export function storedOptions(spec: TagSpec): StoredOptions {
  return {
    snowflake: spec.mode === 'snowflake' ? spec.snowflake : undefined,
    rule: spec.mode === 'rule' ? spec.rule : undefined,
    permute: spec.mode === 'segment' ? (spec.permute ?? undefined) : undefined,
    keyRetentionSeconds: spec.keyRetentionSeconds,
  };
}

/** The options column parsed (a row without one holds the defaults). */
export function parseOptions(raw: string | null): StoredOptions {
  return (raw ? JSON.parse(raw) : {}) as StoredOptions;
}

/**
 * The spec of the kind `mode`, or an Error naming `what` expected it: for code that made the spec
 * of that kind itself (an import plan creating a rule), where another kind is a bug.
 */
export function specOfMode<M extends Mode>(spec: TagSpec, mode: M, what: string): SpecOf<M> {
  if (spec.mode !== mode) throw new Error(`${what}: tag "${spec.tag}" is a ${spec.mode} tag, not a ${mode} tag`);
  return spec as SpecOf<M>;
}

/** The worker-id widths the snowflake tags among `specs` lease (one lease per width and process). */
export function workerWidths(specs: readonly TagSpec[]): Set<number> {
  const out = new Set<number>();
  for (const spec of specs) if (spec.mode === 'snowflake') out.add(spec.snowflake.workerBits);
  return out;
}
