// Admin API for the named Redis servers (REDIS_URL is "default", REDIS_URLS adds others): list
// them with their tags, and move a tag from one to another (through the door,
// service/tag-admin.ts, which announces the move).
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../runtime/runtime.js';
import { isSentinelUrl, parseSentinelUrl, type HostPort } from '../../../core/redis-sentinel.js';
import { tagParam } from '../schemas.js';

const moveBody = {
  type: 'object',
  required: ['to'],
  additionalProperties: false,
  properties: {
    to: { type: 'string', minLength: 1, maxLength: 32, description: 'name of the Redis server to move the tag to' },
    force: {
      type: 'boolean',
      description: 'move even when the current server is unreachable (only if it will never come back with this data)',
    },
  },
} as const;

/** host:port of a Redis URL (a Sentinel URL: the master's name and its sentinels); credentials are never shown. */
function where(url: string): string {
  if (isSentinelUrl(url)) {
    const sentinel = parseSentinelUrl(url);
    return sentinelWhere(sentinel.master, sentinel.sentinels);
  }
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '6379'}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
}

function sentinelWhere(master: string, sentinels: readonly HostPort[]): string {
  return `sentinel master ${master} via ${sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`;
}

export async function adminRedisRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;

  app.get('/v1/admin/redis', async () => {
    const { servers, unknown } = await rt.adminReads.redisServers();
    const { config } = rt;
    const redis = servers.map((server) => ({
      name: server.name,
      default: server.isDefault,
      address:
        server.isDefault && config.redisClusterNodes.length > 0
          ? `cluster ${config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`
          : server.isDefault && config.redisSentinels.length > 0
            ? sentinelWhere(config.redisSentinelMaster, config.redisSentinels)
            : where(config.redisUrls[server.name]),
      // The master the connection talks to now (after a Sentinel failover, the new one).
      master: server.master,
      status: server.status,
      // Every connection to it (queues, workers, subscriber too) that is not ready, and why.
      connections: server.connections
        .filter((c) => c.status !== 'ready' || c.reopening)
        .map((c) => ({
          role: c.role,
          status: c.status,
          ...(c.reopening
            ? { reopening: { attempts: c.reopening.attempts, down_ms: c.reopening.downMs, reason: c.reopening.reason } }
            : {}),
        })),
      tags: server.tags,
    }));
    // Tags on a server this process has no connection for (REDIS_URLS differs between processes).
    return { redis, ...(unknown.length ? { unknown } : {}) };
  });

  app.post<{ Params: { tag: string }; Body: { to: string; force?: boolean } }>(
    '/v1/admin/tags/:tag/migrate',
    {
      schema: { params: tagParam, body: moveBody },
    },
    async (req) => {
      const move = await rt.tagAdmin.moveTag(req.params.tag, req.body.to, { force: req.body.force === true });
      return {
        tag: move.tag,
        from: move.from,
        to: move.to,
        moved: move.moved,
        incarnation: move.epoch,
        paused_ms: move.pausedMs,
      };
    },
  );
}
