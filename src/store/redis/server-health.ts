// Reachability of every Redis server this process uses: "default" (REDIS_URL, or the cluster
// of REDIS_CLUSTER_NODES, or the master REDIS_SENTINELS names) and each server REDIS_URLS
// names, and the master each one's connection talks to now. /readyz reports both;
// idmint_redis_up and idmint_redis_master_info export them.
import { withinLate } from '../../late-timeout.js';
import { checkRedis, isCluster, masterAddresses, type RedisClient } from './connection.js';
import { DEFAULT_REDIS, type SegmentStore } from './segments.js';

/** 'ok', or why the server cannot serve (not connected, no answer in time, cluster state). */
export type ServerState = string;

/** Throws with a readable reason unless the server answers within timeoutMs. */
export async function checkServer(client: RedisClient, timeoutMs = 1000): Promise<void> {
  // A single server's command connection queues nothing while away: say so rather than
  // ioredis's "Stream isn't writeable".
  if (!isCluster(client) && client.status !== 'ready') throw new Error(`not connected (${client.status})`);
  await withinLate(checkRedis(client), timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
}

/** Every server by name, "default" first, checked at once. */
export async function redisServerStates(
  segments: SegmentStore,
  timeoutMs = 1000,
): Promise<Record<string, ServerState>> {
  const names = segments.names();
  const states = await Promise.all(
    names.map((n) =>
      checkServer(segments.connection(n), timeoutMs).then(
        () => 'ok',
        (err: Error) => err.message,
      ),
    ),
  );
  const out: Record<string, ServerState> = {};
  names.forEach((n, i) => (out[n] = states[i]));
  return out;
}

/**
 * host:port of the master each server's connection talks to now ("default" first): a
 * Sentinel-managed server shows the master it follows, a cluster its masters separated by
 * commas; null while not connected.
 */
export function redisMasters(segments: SegmentStore): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const name of segments.names()) {
    const addresses = masterAddresses(segments.connection(name));
    out[name] = addresses.length ? addresses.join(',') : null;
  }
  return out;
}

/** True when a server other than "default" is not ok: only the tags on it are affected. */
export function isDegraded(states: Readonly<Record<string, ServerState>>): boolean {
  return Object.entries(states).some(([name, state]) => name !== DEFAULT_REDIS && state !== 'ok');
}
