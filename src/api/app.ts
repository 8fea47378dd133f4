// The HTTP app as a plugin over a node's services (never its stores): ID routes for everyone, admin routes behind the
// admin token. Process concerns (listening, signals) live in server.ts.
import { readFileSync } from 'node:fs';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Services } from '../runtime/runtime.js';
import { adminGuard, seesMore, type AdminAccess } from './http/auth.js';
import { staffOf } from './credentials.js';
import { AuthFailures } from './http/auth-failures.js';
import { adminTagRoutes } from './http/admin/tags.js';
import { adminWorkerRoutes } from './http/admin/workers.js';
import { adminTokenRoutes } from './http/admin/tokens.js';
import { adminRedisRoutes } from './http/admin/redis.js';
import { adminImportRoutes } from './http/admin/import.js';
import { queueBoard } from './http/admin/queues.js';
import { registerDocs } from './http/docs.js';
import { metricsRoutes } from './http/routes/metrics.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './error-policy.js';
import { fastIdPath, serverWithFastPath } from './http/fast-path.js';
import { closingGuard, idRouteProblems, responseObserver, RouteContexts } from './http/pre-router-hooks.js';
import { ID_ROUTE } from './http/id-route-spec.js';
import { LazyChildLogger } from './http/lazy-logger.js';
import { sourceHooks } from './http/source-hooks.js';
import type { SourceLimits } from './source-limits.js';
import { healthRoutes } from './http/routes/health.js';
import { idRoutes } from './http/routes/ids.js';
import { tinyidRoutes } from './http/routes/tinyid.js';
import { streamRoutes } from './ws/stream-route.js';

const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

declare module 'fastify' {
  interface FastifyInstance {
    /** idmint's pre-router path answers GET /v1/id/:tag (fast-path.ts): decided once the app is ready. */
    readonly preRouter: boolean;
  }
}

export interface BuildOptions {
  /**
   * Plugins and hooks of an embedding application (a rate limit, CORS, request ids), added
   * ahead of the routes so that they apply to them. An extended app has no pre-router path:
   * Fastify serves every request, through what the embedder added.
   */
  readonly extend?: (app: FastifyInstance) => void | Promise<void>;
  /**
   * The per-source limits of the ID routes (source-limits.ts), shared with the UDP listener;
   * without them the routes have no per-source limit.
   */
  readonly sourceLimits?: SourceLimits;
}

export async function buildApp(rt: Services, opts: BuildOptions = {}): Promise<FastifyInstance> {
  let closing = false;
  /**
   * The single-ID route may be answered before routing (fast-path.ts): not with PRE_ROUTER=0, not in an extended app.
   */
  const withPreRouter = rt.config.preRouter && opts.extend === undefined;
  /**
   * The pre-router path may answer: the app is ready and the path stands in for everything on the route
   * (pre-router-hooks.ts).
   */
  let preRouter = false;
  const contexts = new RouteContexts();
  let requests = 0;
  /** Request ids, as Fastify's own (req-1, req-2...), for the router and the pre-router path alike. */
  const requestId = () => `req-${(++requests).toString(36)}`;
  const routerOptions = { maxParamLength: 200, buildPrettyMeta: contexts.buildPrettyMeta };
  const limits = opts.sourceLimits;
  const limitHooks = limits && sourceHooks(limits, rt.ids);
  const app = Fastify({
    ...(withPreRouter
      ? {
          serverFactory: serverWithFastPath(
            fastIdPath({
              ids: rt.ids,
              metrics: rt.metrics,
              log: rt.log,
              requestId,
              open: () => preRouter && !closing,
              limits,
            }),
          ),
        }
      : {}),
    genReqId: requestId,
    loggerInstance: rt.log as FastifyBaseLogger,
    // Per-request access logs would cost more than serving an ID; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings) => new LazyChildLogger(logger, bindings),
    bodyLimit: 64 * 1024,
    // find-my-way's buildPrettyMeta (missing from Fastify's types) catches the route contexts.
    routerOptions,
    // Requests that arrive while closing get idmint's own 503 (below), in the API's error shape.
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: true, removeAdditional: false, allErrors: false } },
    clientErrorHandler: clientErrorHandler(rt.metrics.errors),
    frameworkErrors: frameworkErrors(rt.metrics.errors),
  });
  const errorHandler = installErrorHandling(app, rt.metrics.errors);
  app.decorate('preRouter', { getter: () => preRouter });
  app.addHook('preClose', async () => {
    closing = true;
  });
  // The pre-router path does the work of these two itself (pre-router-hooks.ts).
  const onRequest = closingGuard(() => closing);
  const onResponse = responseObserver(rt.metrics);
  app.addHook('onRequest', onRequest);
  app.addHook('onResponse', onResponse);
  if (withPreRouter)
    app.addHook('onReady', function decidePreRouter() {
      const context = contexts.contextOf(app, 'GET', ID_ROUTE);
      const hooks: Record<string, readonly unknown[]> = limitHooks
        ? { onRequest: [onRequest], preHandler: [limitHooks.reserve], onResponse: [onResponse, limitHooks.settle] }
        : { onRequest: [onRequest], onResponse: [onResponse] };
      const problems = idRouteProblems(context, { hooks, errorHandler });
      preRouter = problems.length === 0;
      if (!preRouter)
        rt.log.warn(
          { problems },
          'GET /v1/id/:tag has what the pre-router path does not stand in for: Fastify serves every request of it',
        );
    });
  await opts.extend?.(app);
  await registerDocs(app, VERSION);
  // The ID routes in scopes of their own, where the per-source limits apply (source-hooks.ts).
  await app.register(async (scope) => {
    limitHooks?.install(scope, 'ids');
    await scope.register(idRoutes, { ids: rt.ids, staff: staffOf(rt.config) });
  });
  await app.register(async (scope) => {
    limitHooks?.install(scope, 'tinyid');
    await scope.register(tinyidRoutes, { ids: rt.ids, errors: rt.metrics.errors });
  });
  await app.register(streamRoutes, { ids: rt.ids, config: rt.config, errors: rt.metrics.errors });
  const access: AdminAccess = {
    adminToken: rt.config.adminToken,
    viewerToken: rt.config.viewerToken,
    failures: new AuthFailures(
      { maxFailures: rt.config.adminAuthMaxFailures, windowMs: rt.config.adminAuthWindowMs },
      { errors: rt.metrics.errors, authFailures: rt.metrics.adminAuthFailures },
      rt.log,
    ),
  };
  await app.register(healthRoutes, { rt, access });
  await app.register(metricsRoutes, {
    metrics: rt.metrics,
    token: rt.config.metricsToken,
    lookup: (tag) => rt.ids.reads.definition(tag),
    staff: seesMore(access),
  });
  await app.register(import('./http/admin/page-route.js'), { access });
  await app.register(async (admin) => {
    admin.addHook('onRequest', adminGuard(access));
    await admin.register(adminTagRoutes, { rt });
    await admin.register(adminWorkerRoutes, { rt });
    await admin.register(adminTokenRoutes, { rt });
    await admin.register(adminRedisRoutes, { rt });
    await admin.register(adminImportRoutes, { rt });
    await admin.register(queueBoard, { queues: rt.queues, errors: rt.metrics.errors });
    if (rt.config.testMode) await admin.register((await import('./http/routes/debug.js')).debugRoutes, { rt });
  });
  return app;
}
