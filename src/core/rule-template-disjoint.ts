// Whether two compiled templates can never render the same ID (a running rule's template may
// only change to one disjoint from the old, so no ID of either repeats one of the other).
import { PIECE, type CompiledTemplate, type Kind } from './rule-template.js';

/** Digits each fixed-width piece writes; undefined for pieces of varying width. */
const FIXED_DIGITS: Partial<Record<Kind, number>> = {
  [PIECE.YYYY]: 4,
  [PIECE.YY]: 2,
  [PIECE.Y10]: 1,
  [PIECE.MONTH]: 2,
  [PIECE.DAY]: 2,
  [PIECE.HOUR]: 2,
  [PIECE.MINUTE]: 2,
  [PIECE.SECOND]: 2,
  [PIECE.MILLI]: 3,
};

/** Per character: the literal character, or '' for "some digit"; undefined if the length varies. */
function shape(template: CompiledTemplate): string[] | undefined {
  const out: string[] = [];
  for (const piece of template.pieces) {
    if (piece.kind === PIECE.LITERAL) out.push(...piece.text);
    else if (piece.kind === PIECE.COUNTER && piece.width > 0) for (let i = 0; i < piece.width; i++) out.push('');
    else if (FIXED_DIGITS[piece.kind] !== undefined) for (let i = 0; i < FIXED_DIGITS[piece.kind]!; i++) out.push('');
    else return undefined;
  }
  return out;
}

/**
 * True when no string rendered by one template can equal one rendered by the other: both have
 * a fixed length and the lengths differ, or at some position one writes a literal character
 * the other cannot write there. False when that cannot be shown (the sets may overlap).
 * A rule's template may change while it runs only to a template disjoint from the old one.
 */
export function templatesDisjoint(first: CompiledTemplate, second: CompiledTemplate): boolean {
  const firstShape = shape(first);
  const secondShape = shape(second);
  if (!firstShape || !secondShape) return false;
  if (firstShape.length !== secondShape.length) return true;
  for (let i = 0; i < firstShape.length; i++) {
    const [firstChar, secondChar] = [firstShape[i], secondShape[i]];
    if (firstChar !== '' && secondChar !== '' && firstChar !== secondChar) return true;
    if (
      (firstChar === '' && secondChar !== '' && !/[0-9]/.test(secondChar)) ||
      (secondChar === '' && firstChar !== '' && !/[0-9]/.test(firstChar))
    )
      return true;
  }
  return false;
}
