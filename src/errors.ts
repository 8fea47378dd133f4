// The one registry of error codes idmint answers with. Every code has an HTTP status and a
// meaning; docs/API.md lists the same table and a test holds the two together.

export const ERROR_CODES = {
  INVALID_ARGUMENT: { status: 400, meaning: 'a parameter or body field is missing or out of range' },
  UNAUTHORIZED: {
    status: 401,
    meaning:
      "a token is missing or wrong: the admin or viewer token, the metrics token, or (with REVEAL_PROTECTED_TAGS) a tag's client token",
  },
  FORBIDDEN: { status: 403, meaning: 'the viewer token only reads: every admin change needs the admin token' },
  TAG_NOT_FOUND: {
    status: 404,
    meaning:
      'no tag of that name exists, or (unless REVEAL_PROTECTED_TAGS) the tag has client tokens and the request carries no valid one',
  },
  NOT_FOUND: { status: 404, meaning: 'no route of that method and path' },
  TAG_EXISTS: { status: 409, meaning: 'a tag of that name already exists' },
  CONFLICT: {
    status: 409,
    meaning: 'the tag changed while the request ran (deleted, re-created or moved); read it again and retry',
  },
  TAG_DISABLED: { status: 409, meaning: 'the tag exists but an operator disabled it' },
  ID_SPACE_EXHAUSTED: { status: 409, meaning: 'the tag reached its max_id_limit; no more IDs will be issued' },
  LIMIT_EXCEEDED: {
    status: 429,
    meaning:
      "a per-client limit was reached: the websocket stream's (sockets per client, takes in flight per socket), gRPC Take calls per client address, failed admin sign-ins per address, or the per-source limits of the ID routes (IDs of open finite tags, refused requests a second)",
  },
  IDEMPOTENCY_KEY_MISMATCH: {
    status: 422,
    meaning:
      'the idempotency key was already used for a different request of the tag (another count, app, salt, shard key or route); use a new key',
  },
  IDEMPOTENCY_KEY_IN_FLIGHT: {
    status: 409,
    meaning:
      'another request with the idempotency key is still being served (its IDs not yet taken and kept); retry after Retry-After with the same key to get its answer',
  },
  IDEMPOTENCY_KEYS_FULL: {
    status: 429,
    meaning:
      'the tag holds as many live idempotency keys as it may (IDEMPOTENCY_MAX_KEYS), or as many bytes of them (IDEMPOTENCY_MAX_BYTES); retry after Retry-After, when enough expire, or send fewer keyed requests',
  },
  UNAVAILABLE: {
    status: 503,
    meaning: 'Redis or MySQL cannot be reached past the buffered IDs, or a refill did not arrive in time',
  },
  CLOCK_BACKWARDS: { status: 503, meaning: 'the clock moved back further than the tolerated bound' },
  LEASE_LOST: { status: 503, meaning: 'this process holds no valid worker-id lease right now' },
  INTERNAL: { status: 500, meaning: 'an unexpected fault; the request received no ID' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class IdmintError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds a client should wait before retrying, sent as Retry-After (always on 503). */
  readonly retryAfter?: number;

  constructor(code: ErrorCode, message: string, opts: { retryAfter?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'IdmintError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    if (opts.retryAfter !== undefined) this.retryAfter = opts.retryAfter;
    else if (this.status === 503) this.retryAfter = 1;
  }

  toJSON(): { error: { code: ErrorCode; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

export const invalid = (message: string): IdmintError => new IdmintError('INVALID_ARGUMENT', message);
export const unavailable = (message: string, cause?: unknown): IdmintError =>
  new IdmintError('UNAVAILABLE', message, { cause });
