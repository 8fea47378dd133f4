// Bull Board at /admin/queues for idmint's queues (refills, lease renewals, janitor), inside
// the admin scope (the same tokens as the admin API). Two boards over the same queues: a full
// one for the admin token, and a read-only one (bull-board's readOnlyMode on every queue: no
// retry, clean, pause, promote, ...) for the viewer token. Both answer at the same address; the
// read-only board lives in a private Fastify instance that viewer requests are handed to.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { adminRole } from '../auth.js';
import { installErrorHandling } from '../error-policy.js';

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

function board(queues: Queue[], readOnlyMode: boolean): FastifyPluginAsync {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUES_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode })), serverAdapter });
  return serverAdapter.registerPlugin() as unknown as FastifyPluginAsync;
}

async function readOnlyBoard(queues: Queue[], log: FastifyBaseLogger): Promise<FastifyInstance> {
  const inner = Fastify({ loggerInstance: log });
  installErrorHandling(inner);
  await inner.register(board(queues, true), { prefix: QUEUES_PATH });
  await inner.ready();
  return inner;
}

export async function queueBoard(app: FastifyInstance, opts: { queues: Queue[] }): Promise<void> {
  const viewerBoard = await readOnlyBoard(opts.queues, app.log);
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
      const res = await viewerBoard.inject({ method: req.method as 'GET' | 'HEAD', url: req.url, headers: req.headers });
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined && !HOP_HEADERS.has(k)) reply.header(k, v);
      return reply.code(res.statusCode).send(res.rawPayload);
    });
    await scope.register(board(opts.queues, false), { prefix: QUEUES_PATH });
  });
}
