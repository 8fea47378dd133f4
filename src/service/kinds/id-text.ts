// The number an ID text of 1 to 19 digits stands for, as the kinds that decode IDs read it.
import { invalid } from '../../errors.js';

/** The ID written `idText` (1 to 19 digits), refused when it is not below 2^63. */
export function idBelow63(idText: string): bigint {
  const id = BigInt(idText);
  if (id > (1n << 63n) - 1n) throw invalid('id must be below 2^63');
  return id;
}
