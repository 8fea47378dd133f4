// Decoding what the stream sends: binary blocks (u32 req, u32 count, count u64 IDs, all
// little-endian) and the JSON messages (block with ids or ranges, done, error).
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';

export interface BinaryBlock {
  readonly req: number;
  /** The IDs; a view over the frame when it is aligned, else a copy. */
  readonly ids: BigUint64Array;
}

/** A binary block, or undefined when the frame is not one (too short, or the count disagrees). */
export function decodeBinary(frame: Buffer): BinaryBlock | undefined {
  if (frame.length < 8) return undefined;
  const req = frame.readUInt32LE(0);
  const count = frame.readUInt32LE(4);
  if (frame.length !== 8 + 8 * count) return undefined;
  if (LITTLE_ENDIAN && (frame.byteOffset + 8) % 8 === 0) {
    return { req, ids: new BigUint64Array(frame.buffer, frame.byteOffset + 8, count) };
  }
  const ids = new BigUint64Array(count);
  for (let i = 0; i < count; i++) ids[i] = frame.readBigUInt64LE(8 + 8 * i);
  return { req, ids };
}

export type ServerMessage =
  | { readonly op: 'block'; readonly req: number; readonly ids?: string[]; readonly ranges?: [string, string][] }
  | { readonly op: 'done'; readonly req: number }
  | { readonly op: 'error'; readonly req: number | null; readonly code: string; readonly message: string };

export function decodeText(frame: Buffer): ServerMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(frame.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const op = (parsed as { op?: unknown }).op;
  return op === 'block' || op === 'done' || op === 'error' ? (parsed as ServerMessage) : undefined;
}

const BLOCK_HEAD = Buffer.from('{"op":"block","req":');
const IDS_HEAD = Buffer.from(',"ids":["');
const QUOTE = 0x22;
const COMMA = 0x2c;
const ZERO = 0x30;

/**
 * A JSON block of numeric IDs (`{"op":"block","req":7,"ids":["1001","1002"]}`, exactly as the
 * server writes it) decoded straight into bigints. JSON.parse interns every string of up to
 * ten characters, which makes it slow for the short IDs of young segment tags; this reads the
 * digits instead. Undefined when the frame is anything else (the caller falls back to JSON.parse).
 */
export function decodeIdsBlock(frame: Buffer): { req: number; ids: bigint[] } | undefined {
  const len = frame.length;
  if (
    len < BLOCK_HEAD.length + IDS_HEAD.length + 4 ||
    frame.compare(BLOCK_HEAD, 0, BLOCK_HEAD.length, 0, BLOCK_HEAD.length) !== 0
  )
    return undefined;
  let offset = BLOCK_HEAD.length;
  let req = 0;
  const reqStart = offset;
  for (let c = frame[offset]; c >= ZERO && c <= ZERO + 9; c = frame[++offset]) req = req * 10 + (c - ZERO);
  if (
    offset === reqStart ||
    offset - reqStart > 10 ||
    frame.compare(IDS_HEAD, 0, IDS_HEAD.length, offset, offset + IDS_HEAD.length) !== 0
  )
    return undefined;
  offset += IDS_HEAD.length;
  const ids: bigint[] = [];
  for (;;) {
    const start = offset;
    let value = 0;
    for (let c = frame[offset]; c >= ZERO && c <= ZERO + 9; c = frame[++offset]) value = value * 10 + (c - ZERO);
    const digits = offset - start;
    if (digits === 0 || digits > 20 || frame[offset] !== QUOTE) return undefined;
    // Up to 15 digits the number is exact; longer ones are read from the text.
    ids.push(digits <= 15 ? BigInt(value) : BigInt(frame.toString('latin1', start, offset)));
    offset++;
    if (frame[offset] === COMMA && frame[offset + 1] === QUOTE) {
      offset += 2;
      continue;
    }
    // The end: "]}" and nothing after it.
    return frame[offset] === 0x5d && frame[offset + 1] === 0x7d && offset + 2 === len ? { req, ids } : undefined;
  }
}

/** Every ID of inclusive [first, last] runs, ascending. */
export function expandRanges(ranges: readonly [string, string][], out: bigint[]): void {
  for (const [first, last] of ranges) {
    const lastId = BigInt(last);
    for (let v = BigInt(first); v <= lastId; v++) out.push(v);
  }
}
