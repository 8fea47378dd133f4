// idmint's error codes (src/errors.ts) as gRPC statuses: each code has one gRPC status code;
// the idmint code travels in the trailing metadata `idmint-code` and leads the message, and
// retryable failures carry when to retry (`retry-after` in seconds, as the HTTP header, and
// gRPC's own `grpc-retry-pushback-ms`, which clients with a retry policy honour).
import { Metadata, status, type StatusObject } from '@grpc/grpc-js';
import type { ErrorCode, IdmintError } from '../../errors.js';

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

/** The name of a gRPC status code (OK, NOT_FOUND...), for metrics labels. */
export const statusName = (code: status): string => status[code] ?? String(code);

/** The status a call ends with for an idmint error. */
export function grpcStatus(e: IdmintError): StatusObject {
  const metadata = new Metadata();
  metadata.set('idmint-code', e.code);
  if (e.retryAfter !== undefined) {
    metadata.set('retry-after', String(e.retryAfter));
    metadata.set('grpc-retry-pushback-ms', String(e.retryAfter * 1000));
  }
  return { code: GRPC_STATUS[e.code], details: `${e.code}: ${e.message}`, metadata };
}
