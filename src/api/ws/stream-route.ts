// GET /v1/stream: the websocket stream of ID blocks for bulk consumers (docs/STREAM.md).
// Owns the sockets: the cap per client address, one StreamSession per socket, and closing
// them all when the app closes.
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { Config } from '../../config.js';
import { IdmintError, invalid } from '../../errors.js';
import type { IdService } from '../../service/id-service.js';
import { errorMessage, MAX_CONTROL_BYTES, protocolError } from './protocol.js';
import { noteFailure, type ErrorCounter } from '../error-policy.js';
import { clientToken } from '../credentials.js';
import { StreamSession } from './session.js';
import { processTurns } from '../bulk-turns.js';

export interface StreamRouteOptions {
  readonly ids: IdService;
  readonly config: Config;
  /** idmint_errors_total, where refusals are counted. */
  readonly errors: ErrorCounter;
}

/** Sockets still open this long after the app began closing, or after a protocol error began their close, are cut. */
const CLOSE_GRACE_MS = 1000;

export const streamRoutes = Object.assign(streamPlugin, {
  // Not encapsulated (as fastify-plugin does): the app itself carries `websocketServer`, so
  // operators and tests see the stream's sockets.
  [Symbol.for('skip-override')]: true,
});

async function streamPlugin(app: FastifyInstance, opts: StreamRouteOptions): Promise<void> {
  // @fastify/websocket and the stream route in a context of their own: its hooks (an onRequest
  // and an onResponse) run for the routes of that context only, not for the app's other routes.
  let stream: FastifyInstance | undefined;
  await app.register(async (child) => {
    stream = child;
    await streamContext(child, opts);
  });
  const inner = stream;
  if (inner === undefined) throw new Error('the stream context was not registered');
  app.decorate('websocketServer', { getter: () => inner.websocketServer });
}

async function streamContext(app: FastifyInstance, opts: StreamRouteOptions): Promise<void> {
  const { ids, config } = opts;
  processTurns.setShare(config.bulkSharePercent / 100);
  const perClient = new Map<string, number>();
  const sockets = new Set<WebSocket>();

  await app.register(websocket, {
    options: { maxPayload: MAX_CONTROL_BYTES, perMessageDeflate: false },
    // Replaces the default (close and wait up to 30 s): a reader that stopped reading would
    // hold the shutdown for as long.
    preClose: (done) => {
      for (const socket of sockets) {
        socket.close(1001, 'server shutting down');
        setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
      }
      done();
    },
    errorHandler: (err, socket, request) => {
      request.log.debug({ err: err.message }, 'websocket error');
      noteFailure('stream', protocolError(err), request.log, opts.errors);
      // A protocol error (a message over the size limit, a bad frame) has already started the
      // close with its code (1009, 1002...): that close frame waits behind whatever blocks are
      // still being written, so give the client a moment to read up to it rather than cutting
      // the connection (which it would see as 1006). Other errors end the socket at once.
      if (socket.readyState === socket.CLOSING) setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
      else socket.terminate();
    },
  });

  app.route({
    method: 'GET',
    url: '/v1/stream',
    schema: { hide: true },
    // A plain GET (no Upgrade) gets the API's error shape, not @fastify/websocket's empty 404.
    handler: async () => {
      throw invalid('GET /v1/stream is the websocket stream: open it with "Upgrade: websocket" (see docs/STREAM.md)');
    },
    wsHandler: (socket, request) => {
      const client = request.ip;
      const open = perClient.get(client) ?? 0;
      if (open >= config.streamMaxSocketsPerClient) {
        const error = noteFailure(
          'stream',
          new IdmintError(
            'LIMIT_EXCEEDED',
            `at most ${config.streamMaxSocketsPerClient} stream sockets per client address`,
          ),
          request.log,
          opts.errors,
        );
        socket.send(errorMessage(null, error.code, error.message));
        socket.close(1008, 'too many sockets from this address');
        return;
      }
      perClient.set(client, open + 1);
      sockets.add(socket);
      const session = new StreamSession(
        socket,
        ids,
        {
          limits: { maxCount: config.streamMaxCount, maxBlock: config.streamMaxBlock },
          maxInFlight: config.streamMaxInFlight,
          maxBufferBytes: config.streamMaxBufferBytes,
          chunkIds: config.coalesceMax,
          turns: processTurns,
          errors: opts.errors,
          upgradeToken: clientToken(request.headers),
        },
        request.log,
      );
      // Attached before the handler returns, so no message is missed.
      socket.on('message', (data: Buffer, isBinary: boolean) => session.onMessage(data, isBinary));
      socket.once('close', () => {
        session.onClose();
        sockets.delete(socket);
        const remaining = (perClient.get(client) ?? 1) - 1;
        if (remaining > 0) perClient.set(client, remaining);
        else perClient.delete(client);
      });
    },
  });
}
