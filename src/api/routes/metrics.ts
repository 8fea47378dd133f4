// GET /metrics: the Prometheus metrics of this process (src/metrics/metrics.ts), or, in a
// serving process of `serve --processes N`, of all N processes (cluster-metrics.ts). With a
// metrics token (METRICS_TOKEN), only to a scrape that sends `Authorization: Bearer <token>`:
// the metrics name every tag, token-protected ones included, with their counts. Without one,
// the series of permuted tags are left out (metrics/hide-tags.ts): their volume is hidden.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { IdmintError } from '../../errors.js';
import { withoutTags } from '../../metrics/hide-tags.js';
import type { Metrics } from '../../metrics/metrics.js';
import { bearerToken } from '../bearer.js';
import { clusterMetricsClient, inProcessGroup } from '../cluster-metrics.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Throws UNAUTHORIZED unless the request carries the metrics token (compared in constant time). */
function metricsGuard(token: string): (req: FastifyRequest) => Promise<void> {
  const want = digest(token);
  return async (req) => {
    const given = bearerToken(req.headers.authorization);
    if (given === undefined) throw new IdmintError('UNAUTHORIZED', 'send Authorization: Bearer <metrics token>');
    if (!timingSafeEqual(digest(given), want)) throw new IdmintError('UNAUTHORIZED', 'the metrics token is wrong');
  };
}

export interface MetricsRouteOptions {
  readonly metrics: Metrics;
  /** METRICS_TOKEN; '' leaves /metrics open, without the series of permuted tags. */
  readonly token: string;
  /** The names of the permuted tags (read when an open /metrics is scraped). */
  readonly permuted: () => Promise<ReadonlySet<string>>;
}

export async function metricsRoutes(app: FastifyInstance, opts: MetricsRouteOptions): Promise<void> {
  const registry = opts.metrics.registry;
  const ofAll = inProcessGroup() ? clusterMetricsClient(registry) : undefined;
  const onRequest = opts.token === '' ? [] : [metricsGuard(opts.token)];
  app.get('/metrics', { schema: { hide: true }, onRequest }, async (_req, reply) => {
    let body: string;
    if (ofAll) {
      // Never this process's share alone: counters would seem to jump between scrapes.
      body = await ofAll().catch((err: Error) => {
        throw new IdmintError('UNAVAILABLE', `the metrics of all processes could not be collected: ${err.message}`, { cause: err });
      });
    } else {
      body = await registry.metrics();
    }
    // Open: a permuted tag's series are left out (all per-tag series when the tags cannot be read).
    if (opts.token === '') body = withoutTags(body, await opts.permuted().catch(() => undefined));
    return reply.type(registry.contentType).send(body);
  });
}
