// Closing a BullMQ worker without hanging on a connection Redis dropped.
// A graceful close interrupts the worker's blocking wait by disconnecting its blocking
// connection and waits for that connection's 'end'. ioredis never emits 'end' for a connection
// that is between reconnects (Redis restarted or unreachable, connections killed or timed
// out): the reconnect timer is cleared and nothing else happens, so the close would wait until
// the shutdown deadline and the process would be forced down. So a close first gives the
// blocking connection a moment to be live again; if it is, the close is graceful (the job
// running finishes); if not, it is forced (the job running is left to its lock: another worker
// runs it again, which is safe, see docs/GUARANTEES.md).
import type { IRedisClient, Worker } from 'bullmq';

/** How long a close waits for the worker's blocking connection to be live before forcing. */
export const LIVE_WAIT_MS = 2000;

/** Resolves with p's value, or undefined when p has not settled within ms (or failed). */
function within<T>(p: Promise<T> | undefined, ms: number): Promise<T | undefined> {
  if (!p) return Promise.resolve(undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([p.catch(() => undefined), late]).finally(() => clearTimeout(timer));
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

/** Closes worker: gracefully when its blocking connection is live within liveWaitMs, forced otherwise. */
export async function closeWorker(worker: Worker, liveWaitMs = LIVE_WAIT_MS): Promise<{ forced: boolean }> {
  const t0 = performance.now();
  const client = await within(worker.backend.blockingClient, liveWaitMs);
  const forced = client === undefined || !(await live(client, Math.max(0, liveWaitMs - (performance.now() - t0))));
  await worker.close(forced);
  return { forced };
}

/**
 * Drops the worker's blocking connection without waiting for it to end (BullMQ's disconnect
 * waits for an 'end' that a connection between reconnects never emits).
 */
export async function dropWorker(worker: Worker): Promise<void> {
  const client = await within(worker.backend.blockingClient, 100);
  if (client && client.status !== 'end') client.disconnect();
}
