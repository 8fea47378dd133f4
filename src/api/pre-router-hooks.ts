// Which Fastify hooks the pre-router path (fast-path.ts) honours, decided here and nowhere
// else. The pre-router path answers GET /v1/id/:tag before Fastify routes the request, so no
// Fastify hook runs for what it answers; it does the work of the two hooks below itself:
//
// - onRequest `refuseWhileClosing`: it declines while the app is closing (Fastify then
//   answers 503 through this hook);
// - onResponse `observeResponse`: it observes the same request-duration series;
// - the onRequest and onResponse hooks of @fastify/websocket (unnamed: `anonymous`, one of
//   each): they act only on websocket upgrades, which never reach the pre-router path.
//
// Once the app is ready, honoursHooks() compares the hooks Fastify runs for GET /v1/id/:tag
// with these. Any other hook there (a rate limit, CORS, a request id, an auth check, added by
// the app or a plugin) makes the pre-router path step aside for good: every request then goes
// through Fastify and its hooks. Teach the pre-router path what a new hook does and name it
// here, or accept that the route is served by Fastify.
import type { FastifyInstance, onRequestHookHandler, onResponseHookHandler } from 'fastify';
import type { Metrics } from '../metrics/metrics.js';
import { ID_ROUTE, shuttingDown } from './id-route-spec.js';

/** The hooks the pre-router path does the work of, by hook and function name (each name once per entry). */
export const HONOURED_HOOKS: Readonly<Record<string, readonly string[]>> = {
  onRequest: ['refuseWhileClosing', 'anonymous'],
  onResponse: ['observeResponse', 'anonymous'],
};

/** onRequest: a request that arrives while closing gets idmint's 503, in the API's error shape. */
export function closingGuard(closing: () => boolean): onRequestHookHandler {
  // Callback-style hooks: no promise per request on the hot path.
  return function refuseWhileClosing(_req, _reply, done) {
    done(closing() ? shuttingDown() : undefined);
  };
}

/** onResponse: every answer in the request-duration histogram, by route, method and status. */
export function responseObserver(metrics: Metrics): onResponseHookHandler {
  return function observeResponse(req, reply, done) {
    metrics.observeHttp(req.routeOptions.url ?? 'unmatched', req.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  };
}

/**
 * The lifecycle hooks Fastify runs for GET /v1/id/:tag, by hook name: the function names its
 * route listing shows (`printRoutes({ includeHooks: true })`); undefined when the route is
 * not found there. Call once the app is ready.
 */
export function idRouteHooks(app: FastifyInstance): Map<string, string[]> | undefined {
  const lines = app.printRoutes({ includeHooks: true, commonPrefix: false, method: 'GET' }).split('\n');
  const at = lines.findIndex((l) => l.includes(` ${ID_ROUTE} (GET)`));
  if (at < 0) return undefined;
  const hooks = new Map<string, string[]>();
  for (const line of lines.slice(at + 1)) {
    const m = /^[\s│]*• \((\w+)\) (\[.*\])\s*$/.exec(line);
    if (!m) break;
    const names = (JSON.parse(m[2]) as string[]).map((n) => n.replace(/\(\)$/, '').replace(/^bound /, ''));
    hooks.set(m[1], names);
  }
  return hooks;
}

/**
 * The hooks of GET /v1/id/:tag that the pre-router path does not honour (empty: it may answer
 * the route); the route itself missing counts as one.
 */
export function unhonouredHooks(app: FastifyInstance): string[] {
  const hooks = idRouteHooks(app);
  if (hooks === undefined) return [`no route ${ID_ROUTE}`];
  const out: string[] = [];
  for (const [hook, names] of hooks) {
    const honoured = [...(HONOURED_HOOKS[hook] ?? [])];
    for (const n of names) {
      const i = honoured.indexOf(n);
      if (i < 0) out.push(`${hook} ${n}`);
      else honoured.splice(i, 1);
    }
  }
  return out;
}
