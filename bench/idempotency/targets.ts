// What each case of `npm run bench:idempotency` sends and how its answers are checked: the
// server and path, the Idempotency-Key of each request (none, a new one each time, or the one
// kept key of a replay), and the check of every 2xx body (IDs increasing per connection and
// never twice in a case; a replay's answer the kept one). The floor's cases are sent and checked
// as idmint's of order global.
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

/** The servers the cases load: the bare routes, the floor, idmint, and idmint at --before when there is one. */
export interface Servers {
  readonly bare: Server;
  readonly incr: Server;
  readonly floor: Server;
  readonly idmint: Server;
  readonly before?: Server;
}

/** Where a replay case sends its key: a tag of idmint, or the floor. */
export type ReplayOf = Order | 'floor';

/** The answer each replay must give again, by where it is sent. */
export type Kept = Partial<Record<ReplayOf, string>>;

/** The kept key of the replay cases of `of`: `<id>-replay-<of>`. */
export const replayKey = (id: string, of: ReplayOf): string => `${id}-replay-${of}`;

/** What a case sends and checks, and how many of its IDs were answered twice. */
export type CaseTarget = Target & { repeats: () => number };

/**
 * The target of each case: id names this run's keys (`<id>-<n>` new, replayKey kept), kept
 * holds the answer each replay (of each tag, of the floor) must give again.
 */
export function targetsOf(servers: Servers, id: string, kept: Kept): (c: Case) => CaseTarget {
  const { bare, incr, floor, idmint, before } = servers;
  let seq = 0;
  const replayTarget = (server: Server, path: string, of: ReplayOf) => {
    const key = replayKey(id, of);
    const answer = kept[of];
    return {
      server,
      path,
      key: () => key,
      check: (_c: object, b: string) => (b === answer ? undefined : `replay answered ${b}, kept ${answer}`),
      repeats: () => 0,
    };
  };
  return (c) => {
    if (c.kind === 'floorReplay') return replayTarget(floor, `/v1/id/${TAGS.global}`, 'floor');
    if (c.kind === 'floorUnkeyed' || c.kind === 'floorFresh') {
      const ids = idsCheck();
      const key = c.kind === 'floorFresh' ? () => `${id}-${seq++}` : () => undefined;
      return { server: floor, path: `/v1/id/${TAGS.global}`, key, ...ids };
    }
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
    if (c.kind === 'replay') return replayTarget(idmint, path, order);
    const ids = idsCheck();
    return {
      server: c.kind === 'before' ? before! : idmint,
      path,
      key: c.kind === 'fresh' ? () => `${id}-${seq++}` : () => undefined,
      ...ids,
    };
  };
}
