// The one error policy of every transport: a refused or failed request becomes an
// IdmintError, is counted in idmint_errors_total{transport, code} and is logged when it is the
// server's fault (noteFailure); each transport then answers it as api/error-replies.ts says
// (HTTP's error shape with the registry's status, sent by Fastify's handlers below; a gRPC
// status; a UDP code; a stream error frame; Tinyid's answer). Nothing a client sends produces
// a 500 or a stack trace.
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../errors.js';
import { SpecProblems } from '../core/tag-spec.js';
import { errorAnswer } from './error-replies.js';
import { marked } from './marked.js';

/** The transports whose refusals are counted, as the `transport` label of idmint_errors_total. */
export const TRANSPORTS = ['http', 'leaf', 'tinyid', 'grpc', 'stream', 'udp'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** idmint_errors_total, as noteFailure counts into it. */
export interface ErrorCounter {
  inc(labels: { transport: Transport; code: string }): void;
}

export type FailureLog = Pick<FastifyBaseLogger, 'error' | 'warn'>;

/**
 * Sends errorAnswer's answer through Fastify: its status and Retry-After, and the body as an
 * object for Fastify to serialize into the same bytes (so an embedder's preSerialization hooks
 * see errors as they always did).
 */
function send(reply: FastifyReply, error: IdmintError, status?: number): FastifyReply {
  const answer = errorAnswer(error, status);
  const retryAfter = answer.headers['retry-after'];
  if (retryAfter !== undefined) reply.header('retry-after', retryAfter);
  return reply.code(answer.status).send(error.toJSON());
}

export function sendError(reply: FastifyReply, err: IdmintError): FastifyReply {
  return send(reply, err);
}

export function toIdmintError(err: unknown): IdmintError {
  if (err instanceof IdmintError) return err;
  if (err instanceof SpecProblems) return new IdmintError('INVALID_ARGUMENT', err.message);
  const fe = err as FastifyError;
  if (fe && fe.validation)
    return new IdmintError(
      'INVALID_ARGUMENT',
      `${fe.validationContext ?? 'request'} ${fe.validation.map((v) => `${v.instancePath || ''} ${v.message ?? ''}`.trim()).join('; ')}`,
    );
  if (fe && typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new IdmintError('INVALID_ARGUMENT', fe.message);
  }
  return new IdmintError('INTERNAL', 'internal error', { cause: err });
}

/**
 * Fastify's `clientErrorHandler`: requests Node's parser refuses before any route sees them
 * (a head over the header size limit, an unknown method, broken framing) get the API's error
 * shape too, with Node's status (431, 408, else 400), instead of Fastify's own body; counted
 * as every refusal.
 */
export function clientErrorHandler(
  errors: ErrorCounter,
): (err: Error & { code?: string; rawPacket?: unknown }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // The answer to a HEAD request has no body, even here.
    const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
    const [status, text, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'the request head is larger than the server accepts (16 KiB)']
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'the request did not arrive in time']
          : [400, 'Bad Request', 'the request is not valid HTTP/1.1'];
    const error = new IdmintError('INVALID_ARGUMENT', message);
    errors.inc({ transport: 'http', code: error.code });
    const answer = errorAnswer(error, status);
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${answer.status} ${text}\r\nContent-Length: ${answer.headers['content-length']}\r\nContent-Type: ${answer.headers['content-type']}\r\nConnection: close\r\n\r\n${head ? '' : answer.body}`,
      );
    }
    socket.destroy(err);
  };
}

/**
 * Fastify's `frameworkErrors`: a path with broken percent-encoding or a segment over the
 * router's length limit is refused before routing; answered in the API's error shape.
 */
export function frameworkErrors(
  errors: ErrorCounter,
): (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  return (err, req, reply) => {
    const message =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'a path segment is too long'
        : 'the path is not valid percent-encoded UTF-8';
    sendError(reply, noteFailure(transportOf(req), new IdmintError('INVALID_ARGUMENT', message), req.log, errors));
  };
}

/**
 * Every refusal and failure of every transport passes here: counted by transport and code,
 * logged when it is the server's fault (an unexpected one at error, unavailability at warn),
 * returned as an IdmintError for the transport to encode.
 */
export function noteFailure(transport: Transport, err: unknown, log: FailureLog, errors: ErrorCounter): IdmintError {
  const error = toIdmintError(err);
  errors.inc({ transport, code: error.code });
  if (error.code === 'INTERNAL') log.error({ err, transport }, 'unexpected failure');
  else if (error.status >= 500) log.warn({ transport, code: error.code, reason: error.message }, 'request failed');
  return error;
}

/** The websocket stream's path: a plain GET of it (no upgrade) is refused as the stream's. */
const STREAM_PATH = '/v1/stream';

/**
 * The transport of a request Fastify routes: Leaf's routes, Tinyid's, the websocket stream's, or idmint's own HTTP API.
 */
export function transportOf(req: FastifyRequest): Transport {
  const url = req.url;
  if (url.startsWith(STREAM_PATH) && (url.length === STREAM_PATH.length || url[STREAM_PATH.length] === '?'))
    return 'stream';
  return url.startsWith('/api/') ? 'leaf' : url.startsWith('/tinyid/') ? 'tinyid' : 'http';
}

/**
 * Sets the app's error and not-found handlers; answers the error handler (the pre-router path checks a route's by
 * identity).
 */
export function installErrorHandling(app: FastifyInstance, errors?: ErrorCounter): unknown {
  const handler = marked((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    const error = errors === undefined ? toIdmintError(err) : noteFailure(transportOf(req), err, req.log, errors);
    // Fastify's own 4xx (bad JSON 400, body too large 413, bad media type 415) keep their status.
    const own = (err as FastifyError).statusCode;
    const status =
      error.code === 'INVALID_ARGUMENT' && own !== undefined && own >= 400 && own < 500 ? own : error.status;
    return send(reply, error, status);
  }, 'handleError');
  app.setErrorHandler(handler);
  app.setNotFoundHandler((req, reply) => {
    const error = new IdmintError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`);
    sendError(reply, errors === undefined ? error : noteFailure(transportOf(req), error, req.log, errors));
  });
  return handler;
}

/** The answer to every request that arrives while the node is closing (HTTP 503, gRPC UNAVAILABLE). */
export const shuttingDown = (): IdmintError =>
  new IdmintError('UNAVAILABLE', 'this node is shutting down; retry on another', { retryAfter: 1 });
