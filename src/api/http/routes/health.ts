// Liveness and readiness. /healthz: the process answers. /readyz: see src/service/readiness.ts
// (a node that is not ready may still serve buffered segment IDs; a draining one serves until
// SHUTDOWN_DRAIN_MS is over). To anyone, the status alone (and the HTTP status); the details
// (node id, checks, the Redis servers and their masters' addresses) only to a request that
// carries the admin, viewer or metrics token as `Authorization: Bearer`.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../runtime/runtime.js';
import { seesMore, type AdminAccess } from '../auth.js';

export async function healthRoutes(app: FastifyInstance, opts: { rt: Services; access: AdminAccess }): Promise<void> {
  const { rt } = opts;
  const details = seesMore(opts.access, rt.config.metricsToken);
  app.get('/healthz', async (req) => (details(req) ? { status: 'ok', node: rt.config.nodeId } : { status: 'ok' }));
  app.get('/readyz', async (req, reply) => {
    const readiness = await rt.readiness();
    const status = readiness.ready ? 'ready' : readiness.draining ? 'draining' : 'not ready';
    reply.code(readiness.ready ? 200 : 503);
    if (!details(req)) return reply.send({ status });
    return reply.send({
      status,
      degraded: readiness.degraded,
      checks: readiness.checks,
      redis_servers: readiness.redisServers,
      redis_master: readiness.redisMasters,
    });
  });
}
