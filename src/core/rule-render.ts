// Rendering a rule ID from a compiled template (rule-template.ts): one pass over its pieces
// with the counter, the salt, the app name and the local time of the moment, no parsing and
// no regex per ID.
import type { LocalParts } from './period.js';
import { PIECE, type CompiledTemplate } from './rule-template.js';

export interface RenderInput {
  readonly counter: number;
  /** Validated with isValidSalt by the caller; '' when absent. */
  readonly salt?: string;
  readonly app: string;
  /** Local date and time in the rule's zone (period.ts localParts). */
  readonly parts: LocalParts;
}

const PAD2: readonly string[] = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const PAD3: readonly string[] = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));

/**
 * Renders one ID. The counter must lie within the rule's range (a RangeError otherwise: an ID
 * outside it could repeat another); salt and app are used as given (validate them first).
 */
export function render(template: CompiledTemplate, input: RenderInput): string {
  const { counter, parts } = input;
  if (!Number.isSafeInteger(counter) || counter < template.rule.minCounter || counter > template.rule.maxCounter) {
    throw new RangeError(`counter ${counter} lies outside ${template.rule.minCounter}..${template.rule.maxCounter}`);
  }
  let out = '';
  const ps = template.pieces;
  for (let i = 0; i < ps.length; i++) {
    const piece = ps[i];
    switch (piece.kind) {
      case PIECE.LITERAL:
        out += piece.text;
        break;
      case PIECE.YYYY:
        out += parts.year >= 0 && parts.year < 1000 ? String(parts.year).padStart(4, '0') : String(parts.year);
        break;
      case PIECE.YY:
        out += PAD2[((parts.year % 100) + 100) % 100];
        break;
      case PIECE.Y10:
        out += String(((parts.year % 10) + 10) % 10);
        break;
      case PIECE.MONTH:
        out += PAD2[parts.month];
        break;
      case PIECE.DAY:
        out += PAD2[parts.day];
        break;
      case PIECE.HOUR:
        out += PAD2[parts.hour];
        break;
      case PIECE.MINUTE:
        out += PAD2[parts.minute];
        break;
      case PIECE.SECOND:
        out += PAD2[parts.second];
        break;
      case PIECE.MILLI:
        out += PAD3[parts.millisecond];
        break;
      case PIECE.COUNTER:
        out += piece.width === 0 ? String(counter) : String(counter).padStart(piece.width, '0');
        break;
      case PIECE.SALT:
        out += input.salt ?? '';
        break;
      case PIECE.APP:
        out += input.app;
        break;
    }
  }
  return out;
}
