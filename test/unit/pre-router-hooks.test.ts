// The pre-router path's check of GET /v1/id/:tag (src/api/http/pre-router-hooks.ts) on plain Fastify
// apps: it reads the route's context through the router's buildPrettyMeta hook and passes only
// what it stands in for, compared by identity; anything else keeps the path off.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type onRequestHookHandler, type onResponseHookHandler } from 'fastify';
import { marked } from '../../src/api/marked.js';
import { idRouteProblems, RouteContexts, type Honoured } from '../../src/api/http/pre-router-hooks.js';

const refuseWhileClosing = marked<onRequestHookHandler>((_req, _reply, done) => done(), 'refuseWhileClosing');
const observeResponse = marked<onResponseHookHandler>((_req, _reply, done) => done(), 'observeResponse');
const handleError = marked(
  (_err: unknown, _req: unknown, reply: { send(x: unknown): unknown }) => reply.send({}),
  'handleError',
);

/** An app shaped as idmint's: the two hooks, the error handler, the route; `more` adds to it before the route. */
async function problemsOf(
  more: (app: FastifyInstance) => void | Promise<void> = () => undefined,
  route = '/v1/id/:tag',
): Promise<string[]> {
  const contexts = new RouteContexts();
  const routerOptions = { maxParamLength: 200, buildPrettyMeta: contexts.buildPrettyMeta };
  const app = Fastify({ routerOptions });
  app.setErrorHandler(handleError);
  app.addHook('onRequest', refuseWhileClosing);
  app.addHook('onResponse', observeResponse);
  await more(app);
  app.get(route, async () => ({ id: '1' }));
  await app.ready();
  const honoured: Honoured = {
    hooks: { onRequest: [refuseWhileClosing], onResponse: [observeResponse] },
    errorHandler: handleError,
  };
  try {
    return idRouteProblems(contexts.contextOf(app, 'GET', '/v1/id/:tag'), honoured);
  } finally {
    await app.close();
  }
}

describe('the pre-router check of GET /v1/id/:tag', () => {
  it('passes the route with exactly the hooks and error handler it stands in for', async () => {
    assert.deepEqual(await problemsOf(), []);
  });

  it('names every other hook, by function name or as anonymous, whatever its name says', async () => {
    assert.deepEqual(
      await problemsOf((app) => {
        app.addHook('onRequest', function countRequests(_req, _reply, done) {
          done();
        });
        app.addHook('preHandler', (_req, _reply, done) => done());
        // Named as the honoured one, but another function: refused.
        app.addHook('onResponse', function observeResponse(_req, _reply, done) {
          done();
        });
      }),
      ['onRequest countRequests', 'preHandler anonymous', 'onResponse observeResponse'],
    );
    assert.deepEqual(
      await problemsOf((app) => {
        app.addHook('onSend', async (_req, _reply, payload) => payload);
      }),
      ['onSend anonymous'],
    );
  });

  it('refuses an error handler or a reply serializer of the route other than the app’s', async () => {
    assert.deepEqual(
      await problemsOf((app) => {
        app.setErrorHandler(function otherHandler(_err, _req, reply) {
          return reply.send({});
        });
      }),
      ['errorHandler otherHandler'],
    );
    assert.deepEqual(
      await problemsOf((app) => {
        app.setReplySerializer((payload) => JSON.stringify(payload));
      }),
      ['reply serializer'],
    );
  });

  it('fails closed when the route is not there, or its context cannot be read', async () => {
    assert.deepEqual(await problemsOf(undefined, '/v1/other/:tag'), ['no route GET /v1/id/:tag']);
    const honoured: Honoured = { hooks: {}, errorHandler: handleError };
    // A context whose shape is not Fastify's: every part it cannot vouch for is a problem.
    assert.deepEqual(idRouteProblems({ onRequest: refuseWhileClosing, somethingNew: [() => undefined] }, honoured), [
      'onRequest: not a list of hooks',
      'errorHandler anonymous',
      'somethingNew: unknown to the pre-router path',
      'reply serializer: not found in the route context',
    ]);
  });

  it('still answers the metadata printRoutes shows', async () => {
    const contexts = new RouteContexts();
    const routerOptions = { maxParamLength: 200, buildPrettyMeta: contexts.buildPrettyMeta };
    const app = Fastify({ routerOptions });
    app.addHook('onRequest', refuseWhileClosing);
    app.get('/v1/id/:tag', async () => ({ id: '1' }));
    await app.ready();
    assert.match(
      app.printRoutes({ includeMeta: true, method: 'GET' }),
      /• \(onRequest\) \["refuseWhileClosing#[0-9a-f]{12}\(\)"\]/,
    );
    await app.close();
  });
});
