// The one error type of the client: the server's code (TAG_NOT_FOUND, UNAVAILABLE, ...) or
// one of the client's own (DISCONNECTED, TIMEOUT, PROTOCOL).

/** Codes raised by the client itself rather than answered by the server. */
export type ClientCode = 'DISCONNECTED' | 'TIMEOUT' | 'PROTOCOL';

/** Codes after which the same request may succeed later (another try, another node). */
const TRANSIENT = new Set([
  'UNAVAILABLE',
  'CLOCK_BACKWARDS',
  'LEASE_LOST',
  'LIMIT_EXCEEDED',
  'INTERNAL',
  'DISCONNECTED',
  'TIMEOUT',
]);

export class IdmintClientError extends Error {
  /** The server's error code, or a ClientCode. */
  readonly code: string;
  /** HTTP status of the answer, for errors of the HTTP routes. */
  readonly status?: number;
  /** Seconds the server asked to wait before a retry (its Retry-After header), when it sent one. */
  readonly retryAfter?: number;

  constructor(code: string, message: string, opts: { status?: number; retryAfter?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'IdmintClientError';
    this.code = code;
    if (opts.status !== undefined) this.status = opts.status;
    if (opts.retryAfter !== undefined) this.retryAfter = opts.retryAfter;
  }

  /** Worth retrying: the service or the connection failed, not the request. */
  get transient(): boolean {
    return TRANSIENT.has(this.code);
  }
}
