// Snowflake IDs under worker-id leases for their tests: the lease TTL and margin the nodes run
// with, the worker id and time of an ID, a node's view of the worker pool, requests recorded
// with their outcome and the loops that send them, the check that no ID came twice, and
// stopping a child process (killing it if it will not stop).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { PRESETS, decode, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import type { LeaseEvents } from '../../src/service/lease-manager.js';
import { adminHeaders, type ChildNode } from '../../tools/node.js';

export const TTL = 3000;
export const MARGIN = 500;
export const LEASE_ENV = { LEASE_TTL_MS: String(TTL), LEASE_MARGIN_MS: String(MARGIN) };
export const SF = PRESETS.snowflake;
export const SMALL: SnowflakeLayout = { ...PRESETS.snowflake, workerBits: 2 };
export const silent = pino({ level: 'silent' });

export const workerOf = (id: bigint, l: SnowflakeLayout = SF) => decode(l, id).workerId;
export const msOf = (id: bigint, l: SnowflakeLayout = SF) => decode(l, id).timestamp.getTime();

export interface Workers {
  spaces: {
    worker_bits: number;
    size: number;
    used: number;
    free: number;
    leases: { worker_id: number; owner: string; addr: string; expires_in_ms: number; last_timestamp: string }[];
  }[];
  this_node: {
    node_id: string;
    leases: { worker_bits: number; worker_id: number; valid: boolean; valid_for_ms: number; floor: string }[];
    lease_events: LeaseEvents;
  };
}

export async function workers(url: string): Promise<Workers> {
  const r = await fetch(`${url}/v1/admin/workers`, { headers: adminHeaders, signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 200, `admin workers: ${r.status}`);
  return (await r.json()) as Workers;
}
export const spaceOf = (w: Workers, bits: number) => w.spaces.find((s) => s.worker_bits === bits);
export const ownWorker = (w: Workers, bits: number) =>
  w.this_node.leases.find((l) => l.worker_bits === bits)?.worker_id;

/** One request's outcome, with when it was sent and answered. */
export interface Rec {
  readonly sent: number;
  readonly recv: number;
  readonly ids?: bigint[];
  readonly status?: number;
  readonly code?: string;
  readonly retryAfter?: string | null;
}

export async function request(url: string, tag: string, count: number): Promise<Rec> {
  const sent = Date.now();
  try {
    const r = await fetch(`${url}/v1/ids/${tag}?count=${count}`, { signal: AbortSignal.timeout(8000) });
    const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
    const recv = Date.now();
    if (r.status === 200 && body.ids) return { sent, recv, ids: body.ids.map(BigInt) };
    return { sent, recv, status: r.status, code: body.error?.code, retryAfter: r.headers.get('retry-after') };
  } catch (err) {
    return { sent, recv: Date.now(), status: 0, code: `NETWORK ${(err as Error).message}` };
  }
}

/** Sequential requests until stop() says so; every request starts after the previous answer. */
export function loop(
  url: string,
  tag: string,
  count: number,
  out: Rec[],
  stop: () => boolean,
  pauseMs = 0,
): Promise<void> {
  return (async () => {
    while (!stop()) {
      const rec = await request(url, tag, count);
      out.push(rec);
      if (rec.status === 0) await sleep(20);
      if (pauseMs) await sleep(pauseMs);
    }
  })();
}

export const okIds = (recs: Rec[]) => recs.flatMap((r) => r.ids ?? []);

export function assertNoDuplicates(ids: bigint[], what: string): void {
  const seen = new Set<bigint>();
  const dups: bigint[] = [];
  for (const id of ids) {
    if (seen.has(id)) dups.push(id);
    seen.add(id);
  }
  assert.deepEqual(dups.slice(0, 10), [], `${what}: ${dups.length} duplicate IDs`);
}

/** SIGTERM, and SIGKILL when the process has not exited within 10 s. */
export async function stopOrKill(n: ChildNode): Promise<void> {
  const stopped = await Promise.race([n.stop(), sleep(10000).then(() => 'timeout' as const)]);
  if (stopped === 'timeout') await n.kill();
}
