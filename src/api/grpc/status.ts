// idmint's error codes (src/errors.ts) as gRPC statuses: each code has one gRPC status code
// (GRPC_STATUS, with every transport's table in api/error-replies.ts);
// the idmint code travels in the trailing metadata `idmint-code` and leads the message, and
// retryable failures carry when to retry (`retry-after` in seconds, as the HTTP header, and
// gRPC's own `grpc-retry-pushback-ms`, which clients with a retry policy honour).
import { Metadata, status, type StatusObject } from '@grpc/grpc-js';
import type { IdmintError } from '../../errors.js';
import { GRPC_STATUS } from '../error-replies.js';

/** The name of a gRPC status code (OK, NOT_FOUND...), for metrics labels. */
export const statusName = (code: status): string => status[code] ?? String(code);

/** The status a call ends with for an idmint error. */
export function grpcStatus(error: IdmintError): StatusObject {
  const metadata = new Metadata();
  metadata.set('idmint-code', error.code);
  if (error.retryAfter !== undefined) {
    metadata.set('retry-after', String(error.retryAfter));
    metadata.set('grpc-retry-pushback-ms', String(error.retryAfter * 1000));
  }
  return { code: GRPC_STATUS[error.code], details: `${error.code}: ${error.message}`, metadata };
}
