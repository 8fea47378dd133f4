// The Redis servers (GET /v1/admin/redis): each connection with where it points, the master it
// talks to now (after a Sentinel failover, the new one), its state and how many tags it holds;
// then tags on a server this process has no connection for.
import { fill, fmtNumber, h, thead } from './dom.js';

export function renderRedis(root, servers) {
  const unknown = servers.unknown ?? [];
  fill(
    root,
    h(
      'table',
      { id: 'redis-table' },
      thead(['name', 'address', 'master now', 'connection', 'tags']),
      h(
        'tbody',
        {},
        servers.redis.map((r) =>
          h(
            'tr',
            { 'data-redis': r.name },
            h('td', {}, r.name),
            h('td', {}, r.address),
            h('td', { class: r.master ? 'master' : 'master problems' }, r.master ?? 'not connected'),
            h('td', {}, r.status),
            h('td', { class: 'num' }, fmtNumber(r.tags)),
          ),
        ),
      ),
    ),
    unknown.length > 0 &&
      h(
        'p',
        { class: 'error', id: 'redis-unknown' },
        `Tags on servers this process has no connection for (REDIS_URLS differs between processes): ${unknown.map((u) => `${u.name} (${u.tags})`).join(', ')}`,
      ),
  );
}
