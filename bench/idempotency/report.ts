// The report of `npm run bench:idempotency`: per case the medians of its rounds, what it costs
// over its reference in the same round (its tag's unkeyed request; the bare route for the INCR
// route; the floor's unkeyed request for the floor's keyed ones) in µs and in Redis round trips,
// Redis's own time per call alone, and the notes: the round trip, the load generator, the floor,
// and the goals of docs/GUARANTEES.md#idempotency-keys judged against the floor (goals.ts).
import { fmt } from '../../tools/table.js';
import { medianOrNaN } from '../stats.js';
import { findCase, LABELS, type Case, type Kind, type Order } from './cases.js';
import { goalNote, medianRatio } from './goals.js';
import type { Measured } from './load-run.js';
import type { Options } from './options.js';
import type { AloneCall } from './redis-alone.js';

/** The table (a header, a row per case, the Redis-alone rows) and the notes, in order. */
export function idempotencyReport(
  opts: Pick<Options, 'rounds' | 'connections'>,
  cases: readonly Case[],
  results: ReadonlyMap<Case, Measured[]>,
  alone: Record<AloneCall, number>,
): { rows: string[][]; notes: string[] } {
  // Per round: what a case costs over its reference (its tag's unkeyed request; the bare route for the INCR route).
  const cost = (m: Measured, clients: number) => (clients === 1 ? m.p50us : 1e6 / m.rps);
  const find = (kind: Kind, clients: number, order?: Order) => findCase(cases, kind, clients, order);
  const extraOver = (c: Case, ref: Case, round: number) =>
    cost(results.get(c)![round], c.clients) - cost(results.get(ref)![round], c.clients);
  const rounds = [...Array(opts.rounds).keys()];
  const roundTrip = (clients: number, r: number) => extraOver(find('incr', clients), find('bare', clients), r);
  const rows: string[][] = [];
  const notes: string[] = [];
  rows.push([
    'case',
    'clients',
    'req/s',
    'p50 ms',
    'p99 ms',
    'server µs/req',
    'extra µs',
    '÷ round trip',
    'extra µs over router',
    'load CPU %',
    'Redis CPU %',
    'other CPU %',
    'Redis µs/call',
  ]);
  for (const c of cases) {
    const ms = results.get(c)!;
    const med = (f: (m: Measured) => number) => medianOrNaN(ms.map(f));
    // What is compared: the INCR route with the bare one; the floor's keyed requests with its
    // unkeyed one; the unkeyed request now with the same request before keys; every other case
    // with its tag's unkeyed request.
    const pair: [Case, Case] | undefined =
      c.kind === 'incr'
        ? [c, find('bare', c.clients)]
        : c.kind === 'floorFresh' || c.kind === 'floorReplay'
          ? [c, find('floorUnkeyed', c.clients)]
          : c.kind === 'before'
            ? [find('unkeyed', c.clients, c.order), c]
            : c.order && c.kind !== 'unkeyed'
              ? [c, find('unkeyed', c.clients, c.order)]
              : undefined;
    const extra = pair ? medianOrNaN(rounds.map((r) => extraOver(...pair, r))) : NaN;
    const trips = pair ? medianOrNaN(rounds.map((r) => extraOver(...pair, r) / roundTrip(c.clients, r))) : NaN;
    const overRouter =
      c.kind === 'fresh' || c.kind === 'replay'
        ? medianOrNaN(rounds.map((r) => extraOver(c, find('router', c.clients, c.order), r)))
        : NaN;
    rows.push([
      c.name,
      String(c.clients),
      fmt(med((m) => m.rps)),
      fmt(med((m) => m.p50us) / 1000, 3),
      fmt(med((m) => m.p99us) / 1000, 3),
      fmt(
        med((m) => m.serverUsPerReq),
        1,
      ),
      fmt(extra, 1),
      fmt(trips, 2),
      fmt(overRouter, 1),
      fmt(med((m) => m.client)),
      fmt(med((m) => m.redis)),
      fmt(med((m) => m.other)),
      '-',
    ]);
  }
  const aloneRow = (name: string, us: number) => [
    name,
    '1',
    ...Array<string>(rows[0].length - 3).fill('-'),
    fmt(us, 2),
  ];
  rows.push(
    aloneRow('Redis alone: INCR', alone.incr),
    aloneRow('Redis alone: take script (unkeyed, order global)', alone.take),
    aloneRow('Redis alone: take in the key’s call, new key (order global)', alone.inKey),
    aloneRow('Redis alone: claim script, new key (order node)', alone.claim),
    aloneRow('Redis alone: record script, over the claim', alone.record),
    aloneRow('Redis alone: claim script, kept key (replay)', alone.replay),
    aloneRow('Redis alone: the key’s call, kept key (replay, order global)', alone.replayInKey),
  );
  const rt = (clients: number) => medianOrNaN(rounds.map((r) => roundTrip(clients, r)));
  const bareRps = medianOrNaN(results.get(find('bare', opts.connections))!.map((m) => m.rps));
  const idmintRps = Math.max(
    ...cases
      .filter((c) => c.order && c.clients === opts.connections)
      .map((c) => medianOrNaN(results.get(c)!.map((m) => m.rps))),
  );
  notes.push(
    `one Redis round trip (bare route + INCR minus bare route): ${fmt(rt(1), 1)} µs at 1 client (p50 latency), ${fmt(rt(opts.connections), 1)} µs of wall time per request at ${opts.connections} clients`,
    `load generator: the bare route reached ${fmt(bareRps)} req/s at ${opts.connections} clients, ${fmt(bareRps / idmintRps, 2)}× the fastest idmint case, with the same generator`,
  );
  const worst = Math.max(
    ...cases
      .filter((c) => c.kind === 'fresh' || c.kind === 'replay')
      .map((c) =>
        medianOrNaN(rounds.map((r) => extraOver(c, find('unkeyed', c.clients, c.order), r) / roundTrip(c.clients, r))),
      ),
  );
  notes.push(
    `Redis's own time per call on a private server: INCR ${fmt(alone.incr, 2)} µs; the take ${fmt(alone.take, 2)} µs; a new key's one call of order global ${fmt(alone.inKey, 2)} µs; of order node its claim script ${fmt(alone.claim, 2)} µs and record script ${fmt(alone.record, 2)} µs; ` +
      `a replay's one call ${fmt(alone.replayInKey, 2)} µs of order global (the key's call), ` +
      `${fmt(alone.replay, 2)} µs of order node (the claim script)`,
  );
  // The goals of docs/GUARANTEES.md#idempotency-keys: throughput at N clients over the tag's
  // unkeyed request, median of the per-round ratios; those of order global judged against the floor's.
  const at = (kind: Kind, order?: Order) => results.get(find(kind, opts.connections, order))!;
  const floorUnkeyed = at('floorUnkeyed');
  notes.push(
    `the floor's unkeyed request (one take per turn, nothing of idmint around it) ran at ` +
      `${fmt(medianRatio(floorUnkeyed, at('unkeyed', 'global')), 2)}x idmint's unkeyed order-global throughput ` +
      `at ${opts.connections} clients`,
  );
  for (const [kind, floorKind, goal, what] of [
    ['fresh', 'floorFresh', 0.8, 'a new key'],
    ['replay', 'floorReplay', 0.9, 'a replay'],
  ] as const) {
    const unkeyed = at('unkeyed', 'global');
    notes.push(
      goalNote({
        label: LABELS[kind],
        what,
        goal,
        clients: opts.connections,
        idmint: medianRatio(at(kind, 'global'), unkeyed),
        floor: medianRatio(at(floorKind), floorUnkeyed),
        floorOverIdmint: medianRatio(at(floorKind), unkeyed),
      }),
    );
  }
  for (const [kind, goal] of [
    ['fresh', 0.8],
    ['replay', 0.9],
  ] as const)
    notes.push(
      `order node, ${LABELS[kind]}: ${fmt(medianRatio(at(kind, 'node'), at('unkeyed', 'node')), 2)}x the unkeyed ` +
        `throughput at ${opts.connections} clients (goal ${goal}x, stated for order global)`,
    );
  notes.push(
    `keyed requests: at most ${fmt(worst, 2)} round trips over the unkeyed request of their tag (median of the rounds)`,
  );
  return { rows, notes };
}
