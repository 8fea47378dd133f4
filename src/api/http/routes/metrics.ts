// GET /metrics: the Prometheus metrics of this process (src/metrics/metrics.ts), or, in a
// serving process of `serve --processes N`, of all N processes (cluster-metrics.ts). With a
// metrics token (METRICS_TOKEN), only to a scrape that sends `Authorization: Bearer <token>`,
// everything, every tag by name; without one, to anyone, but without the series of tags that
// are not public (src/metrics/public-series.ts: protected tags, and permuted tags, whose volume
// their IDs hide).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { IdmintError } from '../../../errors.js';
import type { Metrics } from '../../../metrics/metrics.js';
import { withoutPrivateTags } from '../../../metrics/public-series.js';
import type { StoredTag } from '../../../service/tag-admin.js';
import { bearerToken } from '../../credentials.js';
import { clusterMetricsClient, inProcessGroup } from '../../../process/cluster-metrics.js';

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

export async function metricsRoutes(
  app: FastifyInstance,
  opts: {
    metrics: Metrics;
    token: string;
    /** A tag's definition, for the open page's filter. */
    lookup: (tag: string) => Promise<StoredTag | undefined>;
    /** The request carries the admin or viewer token, which sees the whole page. */
    staff: (req: FastifyRequest) => boolean;
  },
): Promise<void> {
  const registry = opts.metrics.registry;
  const ofAll = inProcessGroup() ? clusterMetricsClient(registry) : undefined;
  const onRequest = opts.token === '' ? [] : [metricsGuard(opts.token)];
  app.get('/metrics', { schema: { hide: true }, onRequest }, async (req, reply) => {
    let body: string;
    if (ofAll) {
      // Never this process's share alone: counters would seem to jump between scrapes.
      body = await ofAll().catch((err: Error) => {
        throw new IdmintError('UNAVAILABLE', `the metrics of all processes could not be collected: ${err.message}`, {
          cause: err,
        });
      });
    } else {
      body = await registry.metrics();
    }
    if (opts.token === '' && !opts.staff(req)) body = await withoutPrivateTags(body, opts.lookup);
    return reply.type(registry.contentType).send(body);
  });
}
