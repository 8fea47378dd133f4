// The snowflake worker-id pools (GET /v1/admin/workers): per width the size, used and free
// ids and every lease with its owner and expiry, then this node's own leases and events.
import { fill, fmtMs, fmtNumber, h, thead } from './dom.js';

export function renderWorkers(root, pools) {
  const spaces = pools.spaces ?? [];
  const node = pools.this_node ?? {};
  fill(
    root,
    spaces.length === 0
      ? h('p', { class: 'note empty' }, 'No worker-id leases: no snowflake ID has been issued yet.')
      : spaces.map((s) =>
          h(
            'div',
            { class: 'space', 'data-worker-bits': s.worker_bits },
            h(
              'h3',
              {},
              `${s.worker_bits}-bit worker ids: ${fmtNumber(s.used)} used, ${fmtNumber(s.free)} free of ${fmtNumber(s.size)}`,
            ),
            h(
              'table',
              { class: 'leases' },
              thead(['worker id', 'owner', 'address', 'expires in', 'last timestamp']),
              h(
                'tbody',
                {},
                s.leases.map((l) =>
                  h(
                    'tr',
                    { 'data-worker-id': l.worker_id },
                    h('td', { class: 'num' }, l.worker_id),
                    h('td', { class: 'owner' }, l.owner),
                    h('td', {}, l.addr ?? ''),
                    h('td', { class: 'num' }, fmtMs(l.expires_in_ms)),
                    h('td', {}, l.last_timestamp),
                  ),
                ),
              ),
            ),
          ),
        ),
    h(
      'div',
      { class: 'this-node' },
      h('h3', {}, `This node: ${node.node_id ?? '?'}`),
      (node.leases ?? []).length === 0
        ? h('p', { class: 'note' }, 'It holds no lease.')
        : h(
            'ul',
            {},
            node.leases.map((l) =>
              h(
                'li',
                {},
                `${l.worker_bits}-bit worker id ${l.worker_id}: ${l.valid ? `valid for ${fmtMs(l.valid_for_ms)}` : 'NOT valid'}, floor ${l.floor}`,
              ),
            ),
          ),
      h(
        'p',
        { class: 'note' },
        `Lease events: ${JSON.stringify(node.lease_events ?? {})}; clock events: ${JSON.stringify(node.clock_events ?? {})}`,
      ),
    ),
  );
}
