// GET /metrics: the Prometheus metrics of this process (src/metrics/metrics.ts), or, in a
// serving process of `serve --processes N`, of all N processes (cluster-metrics.ts).
import type { FastifyInstance } from 'fastify';
import { IdmintError } from '../../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import { clusterMetricsClient, inProcessGroup } from '../cluster-metrics.js';

export async function metricsRoutes(app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  const registry = opts.metrics.registry;
  const ofAll = inProcessGroup() ? clusterMetricsClient(registry) : undefined;
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    let body: string;
    if (ofAll) {
      // Never this process's share alone: counters would seem to jump between scrapes.
      body = await ofAll().catch((err: Error) => {
        throw new IdmintError('UNAVAILABLE', `the metrics of all processes could not be collected: ${err.message}`, { cause: err });
      });
    } else {
      body = await registry.metrics();
    }
    return reply.type(registry.contentType).send(body);
  });
}
