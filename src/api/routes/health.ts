// Liveness and readiness. /healthz: the process answers. /readyz: Redis and MySQL answer and
// the schema is migrated (a node that is not ready still serves buffered IDs).
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../../runtime.js';

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
    const [redis, mysql] = await Promise.all([
      check(() => rt.redis.ping()),
      check(() => rt.pool.query('SELECT 1 FROM idmint_schema_migrations LIMIT 1')),
    ]);
    const ready = redis === 'ok' && mysql === 'ok';
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks: { redis, mysql } });
  });
}
