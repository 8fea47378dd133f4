// Closing a BullMQ worker without hanging on a connection Redis dropped.
// A graceful close interrupts the worker's blocking wait by disconnecting its blocking
// connection and waits for that connection's 'end'. ioredis never emits 'end' for a connection
// that is between reconnects (Redis restarted or unreachable, connections killed or timed
// out): the reconnect timer is cleared and nothing else happens, so the close would wait until
// the shutdown deadline and the process would be forced down. So a close first gives the
// blocking connection a moment to be live again; if it is, the close is graceful (the job
// running finishes); if not, it is forced (the job running is left to its lock: another worker
// runs it again, which is safe, see docs/GUARANTEES.md).
// The graceful close itself is bounded too (GRACEFUL_CLOSE_MS): it waits for the job running
// and for its blocking connection's 'end', and either may never come (a job waiting on a store
// that stopped answering, a connection that dropped right after the check above, a cluster
// closed right after it started). Past the bound the worker is dropped: its lock renewals stop,
// its blocking connection is disconnected, and the close goes on in the background.
import type { IRedisClient, Worker } from 'bullmq';
import { settleWithin } from '../settle-within.js';

/** How long a close waits for the worker's blocking connection to be live before forcing. */
export const LIVE_WAIT_MS = 2000;

/** How long a graceful close may take before the worker is dropped. */
export const GRACEFUL_CLOSE_MS = 5000;

/** The worker's blocking connection once BullMQ has it, or undefined if not within ms. */
function blockingClient(worker: Worker, ms: number): Promise<IRedisClient | undefined> {
  const client = worker.backend.blockingClient;
  return client ? settleWithin<IRedisClient | undefined>(client, ms, undefined) : Promise.resolve(undefined);
}

/** True when client is ready (or already ended) now or within ms. */
function live(client: IRedisClient, ms: number): Promise<boolean> {
  if (client.status === 'ready' || client.status === 'end') return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const settle = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', yes);
      client.off('end', yes);
      resolve(ok);
    };
    const yes = () => settle(true);
    const timer = setTimeout(() => settle(false), ms);
    client.on('ready', yes);
    client.on('end', yes);
  });
}

/**
 * Closes worker: gracefully when its blocking connection is live within liveWaitMs, forced
 * otherwise; a close still running after gracefulMs is given up and the worker dropped.
 * Resolves with 'dropped' then (the job running, if any, is left to its lock), else 'closed'.
 */
export async function closeWorker(
  worker: Worker,
  liveWaitMs = LIVE_WAIT_MS,
  gracefulMs = GRACEFUL_CLOSE_MS,
): Promise<'closed' | 'dropped'> {
  const t0 = performance.now();
  const client = await blockingClient(worker, liveWaitMs);
  const forced = client === undefined || !(await live(client, Math.max(0, liveWaitMs - (performance.now() - t0))));
  const closing = worker.close(forced).then(
    () => true,
    () => true,
  );
  if (await settleWithin(closing, gracefulMs, false)) return 'closed';
  // BullMQ stops renewing locks only once the jobs running have finished: stop it now, or its
  // timer keeps the job locked (and the process alive) for as long as the job hangs.
  await (worker as unknown as { lockManager?: { close(): Promise<void> } }).lockManager?.close().catch(() => undefined);
  await dropWorker(worker);
  return 'dropped';
}

/**
 * Drops the worker's blocking connection without waiting for it to end (BullMQ's disconnect
 * waits for an 'end' that a connection between reconnects never emits).
 */
export async function dropWorker(worker: Worker): Promise<void> {
  const client = await blockingClient(worker, 100);
  if (client && client.status !== 'end') client.disconnect();
}
