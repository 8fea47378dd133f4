// The Redis servers (GET /v1/admin/redis): each connection with where it points, the master it
// talks to now (after a Sentinel failover, the new one), its state, any other connection to it
// that is not ready (one that ended by itself is being opened again: how often tried, for how
// long) and how many tags it holds; then tags on a server this process has no connection for.
import { fill, fmtNumber, h, thead } from './dom.js';

/** The connections of a server that are not ready, one phrase each. */
function notReady(connections) {
  return (connections ?? []).map((c) =>
    c.reopening
      ? `${c.role}: ended (${c.reopening.reason}), reopening, attempt ${c.reopening.attempts}, down ${Math.round(c.reopening.down_ms / 1000)} s`
      : `${c.role}: ${c.status}`,
  );
}

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
            h(
              'td',
              notReady(r.connections).length ? { class: 'problems' } : {},
              [r.status, ...notReady(r.connections)].join('; '),
            ),
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
