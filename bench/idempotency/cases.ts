// The cases of `npm run bench:idempotency`: the bare routes, the floor of order global (the
// unkeyed, new-key and replay requests of a bare route doing only idmint's Redis calls:
// floor-server.ts), then per tag (a segment tag of order global and one of order node) the
// unkeyed, router, new-key and replay requests, each at one client and at --connections
// clients. Their names are the rows of the recorded run.

export type Order = 'global' | 'node';
export type Kind = 'bare' | 'incr' | FloorKind | 'unkeyed' | 'before' | 'router' | 'fresh' | 'replay';
/** The floor's cases: its unkeyed request, a new key, a replay. */
export type FloorKind = 'floorUnkeyed' | 'floorFresh' | 'floorReplay';
export const FLOOR_KINDS: readonly FloorKind[] = ['floorUnkeyed', 'floorFresh', 'floorReplay'];
export const ORDERS = ['global', 'node'] as const;
export const TAGS: Record<Order, string> = { global: 'idem.global', node: 'idem.node' };
/** The cases of no tag: the bare routes and the floor. */
const BARE_KINDS: readonly Kind[] = ['bare', 'incr', ...FLOOR_KINDS];
/** The cases of each tag. */
const KINDS: readonly Kind[] = ['unkeyed', 'before', 'router', 'fresh', 'replay'];
export const LABELS: Record<Kind, string> = {
  bare: 'bare route',
  incr: 'bare route + one Redis INCR',
  floorUnkeyed: 'floor, unkeyed',
  floorFresh: 'floor, keyed, new key',
  floorReplay: 'floor, keyed, replay',
  unkeyed: 'unkeyed',
  before: 'unkeyed, before keys',
  router: 'unkeyed, router',
  fresh: 'keyed, new key',
  replay: 'keyed, replay',
};

export interface Case {
  readonly kind: Kind;
  readonly order?: Order;
  readonly clients: number;
  readonly name: string;
}

/** Every case in the order a round runs them; the unkeyed request before keys only with an idmint at --before. */
export function idempotencyCases(connections: number, withBefore: boolean): Case[] {
  const cases: Case[] = [];
  for (const clients of [1, connections]) {
    for (const kind of BARE_KINDS) cases.push({ kind, clients, name: LABELS[kind] });
    for (const order of ORDERS)
      for (const kind of KINDS)
        if (kind !== 'before' || withBefore)
          cases.push({ kind, order, clients, name: `order ${order}, ${LABELS[kind]}` });
  }
  return cases;
}

/** The case of kind at clients (of the tag of order). */
export const findCase = (cases: readonly Case[], kind: Kind, clients: number, order?: Order): Case =>
  cases.find((c) => c.kind === kind && c.clients === clients && c.order === order)!;
