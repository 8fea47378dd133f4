// What each case of `npm run bench:idempotency` sends and how its answers are checked: the
// server and path, the Idempotency-Key of each request (none, a new one each time, or the one
// kept key of a replay), and the check of every 2xx body (IDs increasing per connection and
// never twice in a case; a replay's answer the kept one).
import { countRepeats, IdList } from '../../tools/duplicates.js';
import type { Server } from '../server.js';
import { TAGS, type Case, type Order } from './cases.js';
import type { Target } from './load-run.js';

/** Checks {"id":"<n>"} bodies: increasing on each connection, none twice in the case. */
function idsCheck(): { check: Target['check']; repeats: () => number } {
  const last = new WeakMap<object, bigint>();
  const ids = new IdList();
  return {
    check(conn, body) {
      const m = /^\{"id":"([1-9]\d{0,18})"\}$/.exec(body);
      if (!m) return `unexpected body ${body.slice(0, 100)}`;
      const id = BigInt(m[1]);
      const prev = last.get(conn);
      last.set(conn, id);
      ids.push(id);
      return prev !== undefined && !(id > prev) ? `id ${id} after ${prev} on one connection` : undefined;
    },
    repeats: () => countRepeats(ids.values),
  };
}

/** The servers the cases load: the bare routes, idmint, and idmint at --before when there is one. */
export interface Servers {
  readonly bare: Server;
  readonly incr: Server;
  readonly idmint: Server;
  readonly before?: Server;
}

/**
 * The target of each case: id names this run's keys (`<id>-<n>` new, `<id>-replay-<order>` kept),
 * kept holds the answer each tag's replay must give again.
 */
export function targetsOf(servers: Servers, id: string, kept: Partial<Record<Order, string>>): (c: Case) => Target & { repeats: () => number } {
  const { bare, incr, idmint, before } = servers;
  let seq = 0;
  return (c) => {
    if (c.kind === 'bare' || c.kind === 'incr') {
      const ids = idsCheck();
      const server = c.kind === 'bare' ? bare : incr;
      return {
        server,
        path: '/v1/id/bench',
        key: () => undefined,
        check: c.kind === 'bare' ? (_c, b) => (b === '{"id":"1"}' ? undefined : `body ${b}`) : ids.check,
        repeats: c.kind === 'bare' ? () => 0 : ids.repeats,
      };
    }
    const order = c.order as Order;
    const path = `/v1/id/${TAGS[order]}${c.kind === 'router' ? '?' : ''}`;
    if (c.kind === 'replay') {
      const key = `${id}-replay-${order}`;
      const answer = kept[order];
      return {
        server: idmint,
        path,
        key: () => key,
        check: (_c, b) => (b === answer ? undefined : `replay answered ${b}, kept ${answer}`),
        repeats: () => 0,
      };
    }
    const ids = idsCheck();
    return { server: c.kind === 'before' ? before! : idmint, path, key: c.kind === 'fresh' ? () => `${id}-${seq++}` : () => undefined, ...ids };
  };
}
