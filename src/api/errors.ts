// Turns every failure into the one error shape {"error":{"code","message"}} with the
// registry's status; nothing a client sends produces a 500 or a stack trace.
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../errors.js';
import { SpecProblems } from '../core/tag-spec.js';

export function sendError(reply: FastifyReply, err: IdmintError): FastifyReply {
  if (err.retryAfter !== undefined) reply.header('retry-after', String(err.retryAfter));
  return reply.code(err.status).send(err.toJSON());
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
 * shape too, with Node's status (431, 408, else 400), instead of Fastify's own body.
 */
export function clientErrorHandler(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // The answer to a HEAD request has no body, even here.
  const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  const [status, text, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'the request head is larger than the server accepts (16 KiB)']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request did not arrive in time']
        : [400, 'Bad Request', 'the request is not valid HTTP/1.1'];
  const body = JSON.stringify(new IdmintError('INVALID_ARGUMENT', message).toJSON());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${text}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  }
  socket.destroy(err);
}

/**
 * Fastify's `frameworkErrors`: a path with broken percent-encoding or a segment over the
 * router's length limit is refused before routing; answered in the API's error shape.
 */
export function frameworkErrors(err: FastifyError, _req: FastifyRequest, reply: FastifyReply): void {
  const message = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'the path is not valid percent-encoded UTF-8';
  sendError(reply, new IdmintError('INVALID_ARGUMENT', message));
}

/**
 * A failed request as the API answers it: counted by code, logged when it is the server's
 * fault (an unexpected one at error, unavailability at warn), as an IdmintError.
 */
export function noteFailure(err: unknown, log: Pick<FastifyBaseLogger, 'error' | 'warn'>, onError: (code: string) => void): IdmintError {
  const e = toIdmintError(err);
  onError(e.code);
  if (e.code === 'INTERNAL') log.error({ err }, 'unexpected failure');
  else if (e.status >= 500) log.warn({ code: e.code, msg: e.message }, 'request failed');
  return e;
}

export function installErrorHandling(app: FastifyInstance, onError: (code: string) => void = () => undefined): void {
  app.setErrorHandler((err, req, reply) => {
    const e = noteFailure(err, req.log, onError);
    // Fastify's own 4xx (bad JSON 400, body too large 413, bad media type 415) keep their status.
    const own = (err as FastifyError).statusCode;
    const status = e.code === 'INVALID_ARGUMENT' && own !== undefined && own >= 400 && own < 500 ? own : e.status;
    if (e.retryAfter !== undefined) reply.header('retry-after', String(e.retryAfter));
    return reply.code(status).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, new IdmintError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`)));
}
