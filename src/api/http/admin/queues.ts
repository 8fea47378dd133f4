// Bull Board at /admin/queues for idmint's queues (refills, lease renewals, janitor), inside
// the admin scope (the same tokens as the admin API). Two boards over the same queues: a full
// one for the admin token, and a read-only one (bull-board's readOnlyMode on every queue: no
// retry, clean, pause, promote, ...) for the viewer token. Both answer at the same address; the
// read-only board lives in a private Fastify instance that viewer requests are handed to.
// Bull Board answers its own errors (its plugin sets its error handler); each is counted in
// idmint_errors_total{transport="http"} all the same, by an onError hook around both boards.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { adminRole } from '../auth.js';
import { installErrorHandling, noteFailure, type ErrorCounter } from '../../error-policy.js';

export const QUEUES_PATH = '/admin/queues';

/**
 * Bull Board's page: its own scripts and styles (and the inline styles React sets), the fonts
 * its stylesheet names, no framing by another origin (clickjacking), no plugin, no form
 * posting elsewhere.
 */
export const BOARD_SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; font-src 'self' https://fonts.gstatic.com; " +
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'",
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** Headers of the inner answer that belong to its own (injected) connection. */
const HOP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);

/**
 * A board, in a context of its own whose onError hook counts the errors Bull Board's error
 * handler answers (its answer is left as it is); nothing else of the app runs in that context.
 */
function board(queues: Queue[], readOnlyMode: boolean, errors: ErrorCounter | undefined): FastifyPluginAsync {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUES_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode })), serverAdapter });
  const plugin = serverAdapter.registerPlugin() as unknown as FastifyPluginAsync;
  return async (app) => {
    if (errors !== undefined) {
      app.addHook('onError', async (req, _reply, err) => {
        noteFailure('http', err, req.log, errors);
      });
    }
    await app.register(plugin);
  };
}

async function readOnlyBoard(
  queues: Queue[],
  log: FastifyBaseLogger,
  errors: ErrorCounter | undefined,
): Promise<FastifyInstance> {
  const inner = Fastify({ loggerInstance: log });
  installErrorHandling(inner, errors);
  await inner.register(board(queues, true, errors), { prefix: QUEUES_PATH });
  await inner.ready();
  return inner;
}

export async function queueBoard(
  app: FastifyInstance,
  opts: { queues: Queue[]; errors?: ErrorCounter },
): Promise<void> {
  const viewerBoard = await readOnlyBoard(opts.queues, app.log, opts.errors);
  app.addHook('onClose', async () => {
    await viewerBoard.close();
  });
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_req, reply) => {
      reply.headers(BOARD_SECURITY_HEADERS);
    });
    // The admin guard ran before this hook and let viewers through with reads only (GET,
    // HEAD), which carry no body: the request can be replayed as it is.
    scope.addHook('onRequest', async (req, reply) => {
      if (adminRole(req) !== 'viewer') return;
      const res = await viewerBoard.inject({
        method: req.method as 'GET' | 'HEAD',
        url: req.url,
        headers: req.headers,
      });
      for (const [name, value] of Object.entries(res.headers))
        if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
      return reply.code(res.statusCode).send(res.rawPayload);
    });
    await scope.register(board(opts.queues, false, opts.errors), { prefix: QUEUES_PATH });
  });
}
