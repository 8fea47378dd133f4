// The `permute` setting of a segment tag: its wire form ({"digits": D} or {"bits": B}), its
// bounds, and which tags may have it. The permutation itself is core/permute.ts.
import { domainMax, type PermuteSpec } from './permute.js';

/** IDs of 6 to 18 digits, or 20 to 63 bits: every ID stays below 2^63. */
export const PERMUTE_DIGITS = { min: 6, max: 18 } as const;
export const PERMUTE_BITS = { min: 20, max: 63 } as const;

const SHAPE = `permute must be {"digits": D} (D from ${PERMUTE_DIGITS.min} to ${PERMUTE_DIGITS.max}) or {"bits": B} (B from ${PERMUTE_BITS.min} to ${PERMUTE_BITS.max})`;

/**
 * The setting of a create body's `permute` (null: absent or null). Its key is empty: the tag
 * store gives it one when it stores the tag.
 */
export function permuteFromBody(setting: unknown, problems: string[]): PermuteSpec | null | undefined {
  if (setting === undefined || setting === null) return null;
  if (typeof setting !== 'object' || Array.isArray(setting)) {
    problems.push(SHAPE);
    return undefined;
  }
  const entries = Object.entries(setting);
  if (entries.length !== 1 || (entries[0][0] !== 'digits' && entries[0][0] !== 'bits')) {
    problems.push(SHAPE);
    return undefined;
  }
  const [unit, width] = entries[0] as ['digits' | 'bits', unknown];
  const bounds = unit === 'digits' ? PERMUTE_DIGITS : PERMUTE_BITS;
  if (typeof width !== 'number' || !Number.isInteger(width) || width < bounds.min || width > bounds.max) {
    problems.push(`permute.${unit} must be an integer from ${bounds.min} to ${bounds.max}`);
    return undefined;
  }
  return { unit, width, key: '' };
}

/** The wire form of the setting: never the key. */
export function permuteToJson(spec: PermuteSpec): Record<string, number> {
  return { [spec.unit]: spec.width };
}

export interface PermutedShape {
  readonly mode: string;
  readonly layout: string;
  readonly stride: number;
  readonly offset: number;
  readonly maxIdLimit: string;
}

/**
 * Why a tag may not have this setting: only plain segment tags without interleaving have one
 * counter whose values can be permuted as they are (a sharded ID packs its shard and app in
 * its low bits, an interleaved one its offset, a rule ID is a template, a snowflake ID a
 * time); and max_id_limit, which bounds the counter of a permuted tag, must stay in the domain.
 */
export function permuteProblems(spec: PermuteSpec, shape: PermutedShape, problems: string[]): void {
  if (shape.mode !== 'segment') {
    problems.push(
      `permute applies to segment tags only (a ${shape.mode} tag's IDs are ${shape.mode === 'rule' ? 'formatted from a template' : 'made of time, worker and sequence'})`,
    );
    return;
  }
  if (shape.layout !== 'plain')
    problems.push('permute applies to layout "plain" only: a sharded ID keeps its shard and app id in its low bits');
  if (shape.stride !== 1 || shape.offset !== 0)
    problems.push('permute applies to tags without interleaving only (stride 1, offset 0)');
  const max = domainMax(spec);
  if (BigInt(shape.maxIdLimit) > max) {
    problems.push(
      `max_id_limit ${shape.maxIdLimit} does not fit permute ${JSON.stringify(permuteToJson(spec))}: a permuted tag issues at most ${max} IDs (from 1 to ${max}); leave max_id_limit out or set it at most ${max}`,
    );
  }
}
