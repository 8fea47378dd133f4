// GET /metrics: this process's Prometheus metrics (src/service/metrics.ts).
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../service/metrics.js';

export async function metricsRoutes(app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    const body = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(body);
  });
}
