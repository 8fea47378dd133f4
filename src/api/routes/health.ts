// Liveness and readiness. /healthz: the process answers. /readyz: see src/service/readiness.ts
// (a node that is not ready may still serve buffered segment IDs).
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { readiness } from '../../service/readiness.js';

export async function healthRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  app.get('/healthz', async () => ({ status: 'ok', node: rt.config.nodeId }));
  app.get('/readyz', async (_req, reply) => {
    const r = await readiness(rt);
    return reply
      .code(r.ready ? 200 : 503)
      .send({ status: r.ready ? 'ready' : 'not ready', degraded: r.degraded, checks: r.checks, redis_servers: r.redisServers });
  });
}
