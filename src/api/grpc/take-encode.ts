// A TakeBlock of IDs encoded straight into its message bytes: field 1 (`repeated string ids`)
// once per ID, a one-byte length and the ID's ASCII characters. Decimal IDs are always such
// strings; anything else (a formatted ID of 128 characters or more, or one with a character
// outside ASCII) is left to the schema's own encoder, which writes the same bytes more slowly.
// A segment tag's block is written from its counter runs without a string per ID.
import type { Packing } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';
import type { TakeBlock } from './requests.js';

/** Tag byte of `TakeBlock.ids` (field 1, length-delimited). */
const IDS_FIELD = 0x0a;

/** ids[start, end) as an encoded TakeBlock; `encode` (the schema's encoder) for what is not short ASCII. */
export function encodeIdsBlock(
  ids: readonly string[],
  start: number,
  end: number,
  encode: (block: TakeBlock) => Buffer,
): Buffer {
  const slow = () => encode({ ids: ids.slice(start, end) });
  let total = 0;
  for (let i = start; i < end; i++) {
    const length = ids[i].length;
    if (length >= 0x80) return slow();
    total += 2 + length;
  }
  const buf = Buffer.allocUnsafe(total);
  let pos = 0;
  for (let i = start; i < end; i++) {
    const id = ids[i];
    const length = id.length;
    buf[pos++] = IDS_FIELD;
    buf[pos++] = length;
    for (let j = 0; j < length; j++) {
      const code = id.charCodeAt(j);
      if (code >= 0x80) return slow();
      buf[pos++] = code;
    }
  }
  return buf;
}

/** Room for the longest decimal ID written from runs (below 2^53: 16 digits) and its two bytes. */
const MOST_PER_ID = 18;
const WIDTH = 20;
let scratch = Buffer.allocUnsafe(0);
/** The current ID's decimal digits, right-aligned (ASCII), and the step's (values 0 to 9). */
const digits = new Uint8Array(WIDTH);
const stepDigits = new Uint8Array(WIDTH);

/**
 * The encoded TakeBlock of the IDs of counter runs holding `count` counters, written from the
 * runs by adding the step to the decimal digits of the last ID (the bytes idsFromRuns' strings
 * encode to, without a string per ID); undefined when an ID reaches 2^53 (the caller writes
 * strings then) or the block would pass maxBytes.
 */
export function encodeRunsBlock(
  runs: readonly Range[],
  count: number,
  packing: Packing,
  maxBytes: number,
): Buffer | undefined {
  for (const [, lastCounter] of runs)
    if (lastCounter * packing.step + packing.base > Number.MAX_SAFE_INTEGER) return undefined;
  const size = Math.min(count * MOST_PER_ID, maxBytes + MOST_PER_ID);
  if (scratch.length < size) scratch = Buffer.allocUnsafe(size);
  const buf = scratch;
  const step = String(packing.plain ? 1 : packing.step);
  stepDigits.fill(0);
  for (let i = 0; i < step.length; i++) stepDigits[WIDTH - step.length + i] = step.charCodeAt(i) - 48;
  const stepFrom = WIDTH - step.length;
  let pos = 0;
  for (const [firstCounter, lastCounter] of runs) {
    const first = String(packing.plain ? firstCounter : firstCounter * packing.step + packing.base);
    let from = WIDTH - first.length;
    for (let i = 0; i < first.length; i++) digits[from + i] = first.charCodeAt(i);
    for (let n = lastCounter - firstCounter + 1; n > 0; n--) {
      if (pos > maxBytes) return undefined;
      const len = WIDTH - from;
      buf[pos++] = IDS_FIELD;
      buf[pos++] = len;
      for (let i = from; i < WIDTH; i++) buf[pos++] = digits[i];
      // The next ID: the step added digit by digit.
      let carry = 0;
      let place = WIDTH - 1;
      for (; place >= stepFrom || carry > 0; place--) {
        const sum = (place >= from ? digits[place] - 48 : 0) + stepDigits[place] + carry;
        carry = sum >= 10 ? 1 : 0;
        digits[place] = 48 + sum - 10 * carry;
      }
      if (place + 1 < from) from = place + 1;
    }
  }
  if (pos > maxBytes) return undefined;
  // A copy of its own size: the scratch is the next block's.
  return Buffer.from(buf.subarray(0, pos));
}
