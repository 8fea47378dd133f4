// The HTTP app as a plugin over a runtime: ID routes for everyone, admin routes behind the
// admin token. Process concerns (listening, signals) live in server.ts.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { IdmintError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { adminGuard } from './auth.js';
import { adminTagRoutes } from './admin/tags.js';
import { adminWorkerRoutes } from './admin/workers.js';
import { installErrorHandling } from './errors.js';
import { healthRoutes } from './routes/health.js';
import { idRoutes } from './routes/ids.js';

export async function buildApp(rt: Runtime): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: rt.log as FastifyBaseLogger,
    // Per-request access logs would cost more than serving an ID; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024,
    routerOptions: { maxParamLength: 200 },
    // Requests that arrive while closing get idmint's own 503 (below), in the API's error shape.
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: true, removeAdditional: false, allErrors: false } },
  });
  installErrorHandling(app);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw new IdmintError('UNAVAILABLE', 'this node is shutting down; retry on another', { retryAfter: 1 });
  });
  await app.register(idRoutes, { dispenser: rt.dispenser });
  await app.register(healthRoutes, { rt });
  await app.register(async (admin) => {
    admin.addHook('onRequest', adminGuard(rt.config.adminToken));
    await admin.register(adminTagRoutes, { rt });
    await admin.register(adminWorkerRoutes, { rt });
  });
  return app;
}
