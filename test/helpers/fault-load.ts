// Load for fault-injection tests: clients that fetch batches of IDs in a loop and record
// every request (send time, answer time, IDs or error), and checks of the promises over
// those records: no duplicates, per-client order, real-time order, only clean 503s.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { findDuplicates } from '../../tools/duplicates.js';
import { realTimeOrder } from '../../tools/order.js';

export interface Rec {
  readonly client: string;
  readonly tag: string;
  /** Where the request went (the node's base URL). */
  readonly url: string;
  readonly count: number;
  /** performance.now() just before the request was sent / just after the answer was read. */
  readonly sent: number;
  readonly done: number;
  /** HTTP status, or 0 when no answer arrived (connection refused or reset). */
  readonly status: number;
  /** Only on a 200 holding exactly `count` decimal IDs. */
  readonly ids?: bigint[];
  readonly code?: string;
  readonly retryAfter?: string | null;
  /** What was wrong: a transport error, or a 200 that was not a well-formed answer. */
  readonly detail?: string;
}

export const now = (): number => performance.now();

/** One GET /v1/ids/:tag?count=n (plus `query`, e.g. "&app=x"), recorded; never throws. */
export async function fetchRecorded(
  client: string,
  url: string,
  tag: string,
  count: number,
  timeoutMs = 15000,
  query = '',
): Promise<Rec> {
  const sent = now();
  const base = { client, tag, url, count, sent };
  try {
    const res = await fetch(`${url}/v1/ids/${tag}?count=${count}${query}`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    const done = now();
    let body: { ids?: unknown; error?: { code?: string; message?: string } } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return { ...base, done, status: res.status, detail: `not JSON: ${text.slice(0, 200)}` };
    }
    if (res.status === 200) {
      const ids = body.ids;
      if (
        !Array.isArray(ids) ||
        ids.length !== count ||
        !ids.every((s) => typeof s === 'string' && /^[1-9]\d*$/.test(s))
      ) {
        return { ...base, done, status: 200, detail: `200 without ${count} IDs: ${text.slice(0, 200)}` };
      }
      return { ...base, done, status: 200, ids: (ids as string[]).map(BigInt) };
    }
    return {
      ...base,
      done,
      status: res.status,
      code: body.error?.code,
      retryAfter: res.headers.get('retry-after'),
      detail: body.error?.message,
    };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return { ...base, done: now(), status: 0, detail: `${e.message} ${e.cause?.code ?? ''}`.trim() };
  }
}

export interface ClientSpec {
  readonly name: string;
  readonly tag: string;
  /** Base URL for the next request (may change, e.g. when a node is replaced). */
  readonly url: () => string;
  /** Batch size of the next request. */
  readonly count: () => number;
  /** Pause after a failed request, ms (default 20). */
  readonly pauseOnError?: number;
  /** Pause after every successful request, ms (default 0). */
  readonly pauseOnSuccess?: number;
  /** Appended to every request's query string, e.g. "&app=x" for a rule. */
  readonly query?: string;
}

/** Clients looping until stop(); every request lands in `records`. */
export class Load {
  readonly records: Rec[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(clients: ClientSpec[]) {
    this.loops = clients.map((c) => this.loop(c));
  }

  private async loop(c: ClientSpec): Promise<void> {
    while (this.running) {
      const r = await fetchRecorded(c.name, c.url(), c.tag, c.count(), 15000, c.query);
      this.records.push(r);
      const pause = r.ids ? (c.pauseOnSuccess ?? 0) : (c.pauseOnError ?? 20);
      if (pause > 0) await sleep(pause);
    }
  }

  async stop(): Promise<Rec[]> {
    this.running = false;
    await Promise.all(this.loops);
    return this.records;
  }

  /** Successful requests sent at or after time t (performance.now()). */
  okSince(t: number, tag?: string): Rec[] {
    return this.records.filter((r) => r.ids !== undefined && r.sent >= t && (tag === undefined || r.tag === tag));
  }
}

/** Deterministic pseudo-random batch sizes from 1 to max (xorshift32). */
export function counter(seed: number, max: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return 1 + (s % max);
  };
}

type OkRec = Rec & { ids: bigint[] };
export const answered = (recs: readonly Rec[]): OkRec[] => recs.filter((r): r is OkRec => r.ids !== undefined);
export const maxId = (recs: readonly Rec[]): bigint =>
  answered(recs).reduce((m, r) => (r.ids.length && r.ids[r.ids.length - 1] > m ? r.ids[r.ids.length - 1] : m), 0n);

/** No ID answered twice within the records (which should be of one tag). Returns the number of IDs. */
export function assertNoDuplicates(recs: readonly Rec[], what = ''): number {
  const { total, repeats } = findDuplicates(answered(recs), (r) => r.ids);
  const d = repeats[0];
  assert.ok(
    d === undefined,
    `${what}: ID ${d?.id} answered twice: to ${d?.first.client} at ${d?.first.done.toFixed(1)} ms and to ${d?.again.client} at ${d?.again.done.toFixed(1)} ms`,
  );
  return total;
}

/** Every answer is ascending, and each client's answers follow each other. Returns answers checked. */
export function assertClientOrder(recs: readonly Rec[], what = ''): number {
  const last = new Map<string, bigint>();
  let n = 0;
  for (const r of answered(recs).sort((a, b) => a.sent - b.sent)) {
    for (let i = 1; i < r.ids.length; i++)
      assert.ok(
        r.ids[i] > r.ids[i - 1],
        `${what}: answer to ${r.client} not ascending: ${r.ids[i - 1]} then ${r.ids[i]}`,
      );
    const prev = last.get(r.client);
    assert.ok(
      prev === undefined || r.ids[0] > prev,
      `${what}: client ${r.client} got ${r.ids[0]} after already holding ${prev}`,
    );
    last.set(r.client, r.ids[r.ids.length - 1]);
    n++;
  }
  return n;
}

/**
 * Real-time order: no answer holds an ID at or below the largest ID of any answer that had
 * arrived before its request was sent. Returns the number of answers that had such a
 * predecessor (so callers can check the test had teeth).
 */
export function assertRealTimeOrder(recs: readonly Rec[], what = ''): number {
  const { checked, violations } = realTimeOrder(answered(recs), (r) => ({
    sent: r.sent,
    answered: r.done,
    min: r.ids[0],
    max: r.ids[r.ids.length - 1],
  }));
  const v = violations[0];
  assert.ok(
    v === undefined,
    `${what}: ${v?.item.client} (sent at ${v?.item.sent.toFixed(1)} ms) got ${v?.itemMin}, but ${v?.earlier.client} had already been answered ${v?.earlierMax} at ${v?.earlier.done.toFixed(1)} ms`,
  );
  return checked;
}

/**
 * Every request that got no IDs got a 503 UNAVAILABLE with Retry-After (or, where allowed,
 * no answer at all, e.g. from a node that was killed, or a 503 with another code, e.g.
 * LEASE_LOST). A 200 that is not exactly the IDs asked for fails. Returns the number of 503s.
 */
export function assertOnlyCleanUnavailable(
  recs: readonly Rec[],
  opts: { transportOk?: (r: Rec) => boolean; codeOk?: (r: Rec) => boolean; what?: string } = {},
): number {
  const what = opts.what ?? '';
  let n503 = 0;
  for (const r of recs) {
    if (r.ids) continue;
    if (r.status === 0) {
      assert.ok(opts.transportOk?.(r), `${what}: request of ${r.client} to ${r.url} got no answer: ${r.detail}`);
      continue;
    }
    assert.notEqual(r.status, 200, `${what}: ${r.client} got a malformed 200: ${r.detail}`);
    assert.equal(r.status, 503, `${what}: ${r.client} got status ${r.status} (${r.code ?? r.detail})`);
    if (!opts.codeOk?.(r)) assert.equal(r.code, 'UNAVAILABLE', `${what}: ${r.client} got 503 with code ${r.code}`);
    assert.ok(r.retryAfter && /^\d+$/.test(r.retryAfter), `${what}: 503 without a Retry-After header`);
    n503++;
  }
  return n503;
}

/** Polls fn until it returns a truthy value or the time runs out. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs: number,
  everyMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > until)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${(lastErr as Error).message})` : ''}`,
      );
    await sleep(everyMs);
  }
}

/** `perTag` clients per (node, tag), each with its own seeded batch sizes (1 to maxBatch). */
export function clientsPerNode(
  urls: readonly string[],
  tags: readonly string[],
  perTag: number,
  seed: number,
  extra: Partial<ClientSpec> = {},
  maxBatch = 20,
): ClientSpec[] {
  const clients: ClientSpec[] = [];
  urls.forEach((url, ni) => {
    for (const tag of tags) {
      for (let c = 0; c < perTag; c++)
        clients.push({
          name: `${tag}-node${ni}-c${c}`,
          tag,
          url: () => url,
          count: counter(seed++, maxBatch),
          ...extra,
        });
    }
  });
  return clients;
}

/**
 * The promises over a load of a global-order tag and a node-order tag served by `urls`: no
 * duplicate in either, per-client order for both, real-time order across every client for the
 * global tag and among each node's clients for the node tag. Returns the IDs checked per tag.
 */
export function assertGlobalAndNodeOrder(
  recs: readonly Rec[],
  urls: readonly string[],
  globalTag = 'g',
  nodeTag = 'n',
): { global: number; node: number } {
  const of = (tag: string, url?: string) => recs.filter((r) => r.tag === tag && (url === undefined || r.url === url));
  const global = assertNoDuplicates(of(globalTag), 'global tag');
  const node = assertNoDuplicates(of(nodeTag), 'node tag');
  assertClientOrder(of(globalTag), 'global tag');
  assertRealTimeOrder(of(globalTag), 'global tag');
  assertClientOrder(of(nodeTag), 'node tag');
  for (const url of urls) assertRealTimeOrder(of(nodeTag, url), `node tag on ${url}`);
  return { global, node };
}

/** idmint_redis_instance_changes_total of these tags, summed over the processes at `urls`. */
export async function instanceChanges(urls: readonly string[], tags: readonly string[]): Promise<number> {
  let changes = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const m of text.matchAll(/^idmint_redis_instance_changes_total\{tag="([^"]+)"\} (\d+)/gm))
      if (tags.includes(m[1])) changes += Number(m[2]);
  }
  return changes;
}
