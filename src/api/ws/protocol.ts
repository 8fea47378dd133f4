// The control messages of the websocket stream (GET /v1/stream): parsing and validation of
// what a client sends, and the shapes of what the server answers. Nothing here does I/O.
import { TAG_NAME, TAG_NAME_CHARS } from '../../core/tag-name.js';
import { IdmintError, type ErrorCode } from '../../errors.js';
import { streamErrorFrame } from '../error-replies.js';
import {
  BULK_FORMATS,
  DEFAULT_BLOCK,
  type BulkFormat,
  type BulkLimits,
  type BulkTake,
} from '../../service/bulk-take.js';

/** A validated `take` message: a bulk take under the client's `req`. */
export interface TakeMessage extends BulkTake {
  readonly req: number;
}

/** Largest control message accepted; a larger frame closes the socket (1009). */
export const MAX_CONTROL_BYTES = 16 * 1024;
/** `req` is echoed in the u32 header of binary frames. */
const MAX_REQ = 0xffff_ffff;
const TAKE_FIELDS = new Set([
  'op',
  'req',
  'tag',
  'count',
  'block',
  'format',
  'key',
  'app',
  'salt',
  'token',
  'idempotency_key',
]);

/** A refused control message: an idmint error, with the req to answer under when one could be read. */
export class ControlError extends IdmintError {
  constructor(
    readonly req: number | null,
    code: ErrorCode,
    message: string,
  ) {
    super(code, message);
    this.name = 'ControlError';
  }
}

/**
 * What a websocket error becomes for idmint_errors_total: a protocol error of the `ws` library
 * (a message over MAX_CONTROL_BYTES, a bad frame: codes WS_ERR_*, the socket already closing
 * with 1009, 1002...) is the client's INVALID_ARGUMENT; anything else is left as it is (an
 * unexpected fault).
 */
export function protocolError(err: Error & { code?: unknown }): unknown {
  return typeof err.code === 'string' && err.code.startsWith('WS_ERR_')
    ? new IdmintError('INVALID_ARGUMENT', err.message)
    : err;
}

/** An error frame (api/error-replies.ts); retryAfter: seconds to wait before retrying, sent as retry_after. */
export const errorMessage = streamErrorFrame;

export function doneMessage(req: number): string {
  return `{"op":"done","req":${req}}`;
}

const isReq = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_REQ;

function optString(message: Record<string, unknown>, name: string, max: number, req: number): string | undefined {
  const value = message[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > max)
    throw new ControlError(req, 'INVALID_ARGUMENT', `${name} must be a string of at most ${max} characters`);
  return value;
}

/** Parses one control frame into a take, or throws a ControlError naming what is wrong. */
export function parseControl(data: Buffer, isBinary: boolean, limits: BulkLimits): TakeMessage {
  if (isBinary)
    throw new ControlError(
      null,
      'INVALID_ARGUMENT',
      'control messages are JSON in text frames; binary frames are only sent by the server',
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    throw new ControlError(
      null,
      'INVALID_ARGUMENT',
      'a control message must be a JSON object, e.g. {"op":"take","req":1,"tag":"order","count":1000,"format":"json"}',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ControlError(null, 'INVALID_ARGUMENT', 'a control message must be a JSON object');
  const msg = parsed as Record<string, unknown>;
  const req = isReq(msg.req) ? msg.req : null;
  if (msg.op !== 'take') {
    throw new ControlError(
      req,
      'INVALID_ARGUMENT',
      msg.op === undefined
        ? 'op is missing; the only op is "take"'
        : `unknown op ${JSON.stringify(msg.op)}; the only op is "take"`,
    );
  }
  if (req === null)
    throw new ControlError(
      null,
      'INVALID_ARGUMENT',
      `req must be an integer from 0 to ${MAX_REQ}, chosen by the client to match replies to takes`,
    );
  for (const field of Object.keys(msg)) {
    if (!TAKE_FIELDS.has(field)) throw new ControlError(req, 'INVALID_ARGUMENT', `unknown field "${field}"`);
  }
  if (typeof msg.tag !== 'string' || !TAG_NAME.test(msg.tag))
    throw new ControlError(req, 'INVALID_ARGUMENT', `tag must match ${TAG_NAME_CHARS}`);
  const count = msg.count;
  if (!Number.isInteger(count) || (count as number) < 1 || (count as number) > limits.maxCount) {
    throw new ControlError(req, 'INVALID_ARGUMENT', `count must be an integer from 1 to ${limits.maxCount}`);
  }
  const block = msg.block ?? Math.min(count as number, DEFAULT_BLOCK, limits.maxBlock);
  if (!Number.isInteger(block) || (block as number) < 1 || (block as number) > limits.maxBlock) {
    throw new ControlError(req, 'INVALID_ARGUMENT', `block must be an integer from 1 to ${limits.maxBlock}`);
  }
  const format = msg.format ?? 'json';
  if (!BULK_FORMATS.includes(format as BulkFormat))
    throw new ControlError(req, 'INVALID_ARGUMENT', `format must be one of ${BULK_FORMATS.join(', ')}`);
  return {
    req,
    tag: msg.tag,
    count: count as number,
    block: block as number,
    format: format as BulkFormat,
    key: optString(msg, 'key', 256, req),
    app: optString(msg, 'app', 64, req),
    salt: optString(msg, 'salt', 64, req),
    token: optString(msg, 'token', 512, req),
    // What a key may be (1 to 255 visible ASCII) is checked with the take, as on every transport.
    idempotencyKey: optString(msg, 'idempotency_key', 1024, req),
  };
}

/** The reply for a failure of a take in flight. */
export function takeError(req: number, err: IdmintError): string {
  return streamErrorFrame(req, err.code, err.message, err.retryAfter);
}
