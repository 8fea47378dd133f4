// Turns every failure into the one error shape {"error":{"code","message"}} with the
// registry's status; nothing a client sends produces a 500 or a stack trace.
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
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
  if (fe && fe.validation) return new IdmintError('INVALID_ARGUMENT', `${fe.validationContext ?? 'request'} ${fe.validation.map((v) => `${v.instancePath || ''} ${v.message ?? ''}`.trim()).join('; ')}`);
  if (fe && typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new IdmintError('INVALID_ARGUMENT', fe.message);
  }
  return new IdmintError('INTERNAL', 'internal error', { cause: err });
}

export function installErrorHandling(app: FastifyInstance, onError: (code: string) => void = () => undefined): void {
  app.setErrorHandler((err, req, reply) => {
    const e = toIdmintError(err);
    onError(e.code);
    if (e.code === 'INTERNAL') req.log.error({ err }, 'unexpected failure');
    else if (e.status >= 500) req.log.warn({ code: e.code, msg: e.message }, 'request failed');
    // Fastify's own 4xx (bad JSON 400, body too large 413, bad media type 415) keep their status.
    const own = (err as FastifyError).statusCode;
    const status = e.code === 'INVALID_ARGUMENT' && own !== undefined && own >= 400 && own < 500 ? own : e.status;
    if (e.retryAfter !== undefined) reply.header('retry-after', String(e.retryAfter));
    return reply.code(status).send(e.toJSON());
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, new IdmintError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`)),
  );
}
