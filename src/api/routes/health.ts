// Liveness and readiness. /healthz: the process answers. /readyz: Redis and MySQL answer, the
// schema is migrated, and when snowflake tags exist this process holds (or can take now) a
// valid worker-id lease for each width they use (a node that is not ready may still serve
// buffered segment IDs). A Redis Cluster is ready when it reports cluster_state:ok and every
// master answers. Every other Redis server (REDIS_URLS) is reported in `redis_servers` without
// deciding readiness: it is shared by every node and holds only some tags, so failing them all
// would take the whole fleet out of the load balancer for a fault of those tags; `degraded`
// says one is down, and requests for its tags answer UNAVAILABLE meanwhile.
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../../runtime.js';
import { DEFAULT_REDIS } from '../../store/redis/segments.js';
import { isDegraded, redisServerStates } from '../../store/redis/server-health.js';

async function check(fn: () => Promise<unknown>, timeoutMs = 1000): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([fn(), new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)))]);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  } finally {
    clearTimeout(timer);
  }
}

export async function healthRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  app.get('/healthz', async () => ({ status: 'ok', node: rt.config.nodeId }));
  app.get('/readyz', async (_req, reply) => {
    const [servers, mysql, lease] = await Promise.all([
      redisServerStates(rt.segments),
      check(() => rt.pool.query('SELECT 1 FROM idmint_schema_migrations LIMIT 1')),
      check(async () => {
        const widths = new Set((await rt.tags.list()).flatMap((t) => (t.snowflake && t.enabled ? [t.snowflake.workerBits] : [])));
        // Taken here when missing: a node a load balancer keeps out until it is ready would
        // otherwise never see the request that takes its lease.
        for (const bits of widths) {
          await rt.leases.get(bits).catch((err: Error) => {
            throw new Error(`no valid worker-id lease of width ${bits}: ${err.message}`);
          });
        }
      }),
    ]);
    const redis = servers[DEFAULT_REDIS];
    const checks = { redis, mysql, lease };
    const ready = redis === 'ok' && mysql === 'ok' && lease === 'ok';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', degraded: isDegraded(servers), checks, redis_servers: servers });
  });
}
