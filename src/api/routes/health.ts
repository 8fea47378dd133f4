// Liveness and readiness. /healthz: the process answers. /readyz: see src/service/readiness.ts
// (a node that is not ready may still serve buffered segment IDs; a draining one serves until
// SHUTDOWN_DRAIN_MS is over).
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../../runtime.js';

export async function healthRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  app.get('/healthz', async () => ({ status: 'ok', node: rt.config.nodeId }));
  app.get('/readyz', async (_req, reply) => {
    const r = await rt.readiness();
    const status = r.ready ? 'ready' : r.draining ? 'draining' : 'not ready';
    return reply
      .code(r.ready ? 200 : 503)
      .send({ status, degraded: r.degraded, checks: r.checks, redis_servers: r.redisServers, redis_master: r.redisMasters });
  });
}
