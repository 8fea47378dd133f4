// What every transport answers for an idmint error, in one place. Each table below is total
// over the registry's codes (src/errors.ts, `Record<ErrorCode, ...>`): a new code does not
// compile until every transport says how it answers it.
//
// - HTTP (idmint's API, the ID route in JSON or text/plain, Leaf's routes): the registry's
//   status with {"error":{"code","message"}} and Retry-After when the error has one (errorAnswer).
// - The websocket stream: {"op":"error","req","code","message"} with the registry's code, and
//   retry_after where HTTP sends Retry-After (streamErrorFrame).
// - gRPC: a status code per idmint code (GRPC_STATUS; grpc/status.ts adds the metadata).
// - UDP: id_server's numeric codes (UDP_CODE, errorReplyFor).
// - Tinyid: code 5 where Tinyid's token check refuses, 6 with idmint's reason otherwise, ""
//   from the Simple routes (TINYID_ANSWER, tinyidReply).
import { status } from '@grpc/grpc-js';
import { responseJson, TINYID_SYS_ERR_CODE, TINYID_TOKEN_ERR } from '../core/tinyid.js';
import { errorReply, type UdpCodeName, type UdpReply, type UdpRequest } from '../core/udp-protocol.js';
import type { ErrorCode, IdmintError } from '../errors.js';
import { JSON_TYPE } from './http/id-route-spec.js';

/** An HTTP error answer: status, headers, body. */
export interface HttpErrorAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: string;
}

/**
 * The HTTP answer to an error, the same on every route and path (Fastify's error handler, the
 * pre-router path, Node's parser refusals): `status` is the registry's unless the request was
 * refused by Fastify or Node with a 4xx of their own (413, 415, 431, 408).
 */
export function errorAnswer(error: IdmintError, status: number = error.status): HttpErrorAnswer {
  const body = JSON.stringify(error.toJSON());
  const headers: Record<string, string | number> = {
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(body),
  };
  if (error.retryAfter !== undefined) headers['retry-after'] = String(error.retryAfter);
  return { status, headers, body };
}

/**
 * A websocket error frame; retryAfter: seconds to wait before retrying, as HTTP's Retry-After (sent as retry_after).
 */
export function streamErrorFrame(req: number | null, code: ErrorCode, message: string, retryAfter?: number): string {
  return JSON.stringify(
    retryAfter === undefined
      ? { op: 'error', req, code, message }
      : { op: 'error', req, code, message, retry_after: retryAfter },
  );
}

/** The gRPC status code a call ends with, per idmint code (docs/GRPC.md lists the same table). */
export const GRPC_STATUS: { readonly [C in ErrorCode]: status } = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  UNAUTHORIZED: status.UNAUTHENTICATED,
  FORBIDDEN: status.PERMISSION_DENIED,
  TAG_NOT_FOUND: status.NOT_FOUND,
  NOT_FOUND: status.NOT_FOUND,
  TAG_EXISTS: status.ALREADY_EXISTS,
  CONFLICT: status.ABORTED,
  // The tag exists but is switched off: the request is valid, the tag is not in a state to serve.
  TAG_DISABLED: status.FAILED_PRECONDITION,
  ID_SPACE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  LIMIT_EXCEEDED: status.RESOURCE_EXHAUSTED,
  // The request is well formed; what refuses it is the key's state (used before, otherwise).
  IDEMPOTENCY_KEY_MISMATCH: status.FAILED_PRECONDITION,
  // Another call under the key is being served: a concurrency conflict to retry, as CONFLICT.
  IDEMPOTENCY_KEY_IN_FLIGHT: status.ABORTED,
  IDEMPOTENCY_KEYS_FULL: status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: status.UNAVAILABLE,
  CLOCK_BACKWARDS: status.UNAVAILABLE,
  LEASE_LOST: status.UNAVAILABLE,
  INTERNAL: status.INTERNAL,
};

/** The UDP code of each idmint code (docs/UDP.md). INTERNAL replies say "internal error", no details. */
export const UDP_CODE: { readonly [C in ErrorCode]: UdpCodeName } = {
  INVALID_ARGUMENT: 'INVALID_FIELD',
  UNAUTHORIZED: 'UNAUTHORIZED',
  // Admin-route answers, never raised on UDP; listed so that every code has its answer.
  FORBIDDEN: 'UNAUTHORIZED',
  TAG_EXISTS: 'INTERNAL',
  // HTTP's unknown route: UDP has no routes.
  NOT_FOUND: 'INTERNAL',
  TAG_NOT_FOUND: 'UNKNOWN_RULE',
  ID_SPACE_EXHAUSTED: 'ID_SPACE_EXHAUSTED',
  TAG_DISABLED: 'UNAVAILABLE',
  CONFLICT: 'UNAVAILABLE',
  LIMIT_EXCEEDED: 'UNAVAILABLE',
  UNAVAILABLE: 'UNAVAILABLE',
  CLOCK_BACKWARDS: 'UNAVAILABLE',
  LEASE_LOST: 'UNAVAILABLE',
  IDEMPOTENCY_KEY_MISMATCH: 'IDEMPOTENCY_KEY_MISMATCH',
  IDEMPOTENCY_KEY_IN_FLIGHT: 'UNAVAILABLE',
  IDEMPOTENCY_KEYS_FULL: 'UNAVAILABLE',
  INTERNAL: 'INTERNAL',
};

/** The UDP reply to a refusal: the error's message under its code; INTERNAL without its details. */
export function errorReplyFor(req: UdpRequest | null, error: IdmintError): UdpReply {
  const name = UDP_CODE[error.code];
  if (name === 'INTERNAL') return errorReply(req, 'INTERNAL', 'internal error');
  return errorReply(req, name, error.message !== '' ? error.message : undefined);
}

/**
 * How Tinyid's routes answer each code: `token`, Tinyid's token refusal (code 5, "token is
 * error"), for whatever its token check would refuse (no such bizType, a missing or wrong
 * token, whatever REVEAL_PROTECTED_TAGS says); `failure`, code 6 with idmint's reason.
 */
export const TINYID_ANSWER: { readonly [C in ErrorCode]: 'token' | 'failure' } = {
  TAG_NOT_FOUND: 'token',
  UNAUTHORIZED: 'token',
  INVALID_ARGUMENT: 'failure',
  FORBIDDEN: 'failure',
  NOT_FOUND: 'failure',
  TAG_EXISTS: 'failure',
  CONFLICT: 'failure',
  TAG_DISABLED: 'failure',
  ID_SPACE_EXHAUSTED: 'failure',
  LIMIT_EXCEEDED: 'failure',
  IDEMPOTENCY_KEY_MISMATCH: 'failure',
  IDEMPOTENCY_KEY_IN_FLIGHT: 'failure',
  IDEMPOTENCY_KEYS_FULL: 'failure',
  UNAVAILABLE: 'failure',
  CLOCK_BACKWARDS: 'failure',
  LEASE_LOST: 'failure',
  INTERNAL: 'failure',
};

/** Tinyid's answer to a refusal (always HTTP 200): its Response JSON, or "" from a Simple route. */
export function tinyidReply(error: IdmintError, simple: boolean): string {
  if (simple) return '';
  return TINYID_ANSWER[error.code] === 'token'
    ? responseJson('null', TINYID_TOKEN_ERR.code, TINYID_TOKEN_ERR.message)
    : responseJson('null', TINYID_SYS_ERR_CODE, error.message);
}
