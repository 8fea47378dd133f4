// Tinyid compatibility, the pure part: the segment a Tinyid client is handed (its fields and
// their meanings), the answers' exact bytes, and how a Spring MVC server binds an Integer
// request parameter. The routes are in src/api/http/routes/tinyid.ts.
import { seqOf, type Interleave } from './layout.js';
import type { Range } from './ranges.js';

/**
 * The largest batchSize the Tinyid routes serve: batch.size.max of the application.properties
 * Tinyid's server ships (its default build profile). Tinyid lowers a larger batchSize to it and
 * answers code 200 with fewer IDs than asked; idmint refuses it instead (code 6), so no caller
 * gets fewer IDs than it asked for without being told.
 */
export const TINYID_BATCH_MAX = 100_000;

/** Tinyid's ErrorCode: code and message. */
export const TINYID_TOKEN_ERR = { code: 5, message: 'token is error' } as const;
export const TINYID_SYS_ERR_CODE = 6;

/**
 * A Tinyid segment: the client issues currentId + delta, + 2 delta, ... up to maxId (the IDs
 * in (currentId, maxId] that are remainder (mod delta)), and fetches the next segment once it
 * reaches loadingId.
 */
export interface TinyidSegment {
  readonly currentId: bigint;
  readonly loadingId: bigint;
  readonly maxId: bigint;
  readonly delta: number;
  readonly remainder: number;
}

/**
 * The segment of the counter run [a, b] of a plain segment tag: currentId is the value of
 * counter a - 1 (itself remainder mod delta, so the client's first ID is the value of a),
 * maxId the value of b. loadingId lies `prefetch` of the way through, as Tinyid's 20 %.
 */
export function segmentOfRun(interleave: Interleave, run: Range, prefetch: number): TinyidSegment {
  const currentId = seqOf(interleave, run[0] - 1);
  const maxId = seqOf(interleave, run[1]);
  const permille = BigInt(Math.round(prefetch * 1000));
  return {
    currentId,
    loadingId: currentId + ((maxId - currentId) * permille) / 1000n,
    maxId,
    delta: interleave.stride,
    remainder: interleave.offset,
  };
}

/** The IDs a Tinyid client issues from a segment, in order (for checks and tests). */
export function idsOfSegment(segment: TinyidSegment): bigint[] {
  const out: bigint[] = [];
  const delta = BigInt(segment.delta);
  let id = segment.currentId;
  // Tinyid's client first moves currentId onto the remainder; ours always is.
  while (((id % delta) + delta) % delta !== BigInt(segment.remainder)) id++;
  for (id += delta; id <= segment.maxId; id += delta) out.push(id);
  return out;
}

/** The longest run (the first of equals): a segment is one run; the others are a gap. */
export function longestRun(runs: readonly Range[]): Range {
  let best = runs[0];
  for (const run of runs) if (run[1] - run[0] > best[1] - best[0]) best = run;
  return best;
}

/** `{"data":...,"code":200,"message":""}`, Tinyid's Response as Jackson writes it (data raw JSON). */
export function responseJson(data: string, code = 200, message = ''): string {
  return `{"data":${data},"code":${code},"message":${JSON.stringify(message)}}`;
}

/** SegmentId as Jackson writes it: fields in declaration order, numbers. */
export function segmentJson(segment: TinyidSegment): string {
  return `{"maxId":${segment.maxId},"loadingId":${segment.loadingId},"currentId":${segment.currentId},"delta":${segment.delta},"remainder":${segment.remainder}}`;
}

/** nextSegmentIdSimple's text: currentId,loadingId,maxId,delta,remainder. */
export function segmentText(segment: TinyidSegment): string {
  return `${segment.currentId},${segment.loadingId},${segment.maxId},${segment.delta},${segment.remainder}`;
}

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;

/**
 * An Integer request parameter as Spring MVC binds it: absent or empty is null; otherwise the
 * text with all whitespace removed, as a decimal int (sign allowed) or, after an optional
 * "-", a hexadecimal one (0x, 0X or #). Anything else, or a value outside int, throws a
 * BindError (Spring's NumberFormatException, answered 400 before the method runs).
 */
export function bindInteger(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return null;
  const stripped = raw.replace(/\s/g, '');
  let value: number;
  const hex = /^(-?)(?:0x|0X|#)([0-9a-fA-F]+)$/.exec(stripped);
  if (hex) value = (hex[1] === '-' ? -1 : 1) * parseInt(hex[2], 16);
  else if (/^[-+]?\d+$/.test(stripped)) value = Number(stripped);
  else throw new BindError(stripped);
  if (!Number.isSafeInteger(value) || value < INT_MIN || value > INT_MAX) throw new BindError(stripped);
  return value;
}

export class BindError extends Error {
  constructor(readonly input: string) {
    super(`For input string: "${input}"`);
  }
}
