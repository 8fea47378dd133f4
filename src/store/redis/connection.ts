// Redis connections by role. The request path fails fast while Redis is away (callers answer
// 503); BullMQ workers wait for Redis forever, as BullMQ requires. The "default" Redis is a
// single server (REDIS_URL), the master a Sentinel group names (REDIS_SENTINELS) or a Redis
// Cluster (REDIS_CLUSTER_NODES); all give the same roles, and RedisClient is either kind of
// client. A Sentinel-managed connection asks the sentinels for the master whenever it
// (re)connects, checks the server it reached is a master, and drops the connection when a
// sentinel announces +switch-master or when the server answers READONLY (it was demoted):
// commands in flight then fail (503) and the next ones go to the new master.
//
// A silent peer (blackholed network, no RST, no FIN) is found by time, never by TCP: on the
// request path a command without a reply within REDIS_COMMAND_TIMEOUT_MS fails ("Command
// timed out"), and a connection that receives nothing for that long while commands wait is
// destroyed and opened again, so later commands are not queued behind the silent one. BullMQ
// workers' connections (no command timeout: a job's blocking pop waits up to 10 s) are reset
// after WORKER_SOCKET_TIMEOUT_MS of silence with a command waiting. A pause of this process
// (SIGSTOP, a long GC) is not silence: replies that arrived meanwhile are read before either
// timeout acts (pause-tolerant.ts).
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '../../config.js';
import { isSentinelUrl, parseSentinelUrl, type SentinelTarget } from '../../core/redis-sentinel.js';
import { installCommandDeadlines } from './command-deadlines.js';
import { installPauseTolerance } from './pause-tolerant.js';
import { batchWrites } from './write-batching.js';
import { guardFailoverDetector } from './failover-detector.js';

export type RedisRole = 'command' | 'queue' | 'worker' | 'subscriber';

/** A single server or a cluster: everything idmint runs works on both. */
export type RedisClient = Redis | Cluster;

export function isCluster(client: RedisClient): client is Cluster {
  return client.isCluster;
}

/** Default of REDIS_COMMAND_TIMEOUT_MS. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 1000;

/**
 * Silence (ms) after which a BullMQ worker's or the subscriber's connection with a command
 * waiting is reset: above the longest blocking pop BullMQ sends (10 s).
 */
export const WORKER_SOCKET_TIMEOUT_MS = 15000;

/** Longest wait (ms) before a failover detector's connection to a sentinel is tried again. */
export const DETECTOR_RECONNECT_MAX_MS = 5000;

export function redisOptions(role: RedisRole, commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): RedisOptions {
  const base: RedisOptions = {
    lazyConnect: false,
    connectTimeout: 3000,
    keepAlive: 10000,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  };
  // Request path: a reply is due within commandTimeoutMs; a connection silent that long with
  // commands waiting is reset. A timed-out command may still have run in Redis: its reply is
  // dropped (for a take, a gap; for a lease renewal, an extension the process never counts).
  const bounded = { commandTimeout: commandTimeoutMs, socketTimeout: commandTimeoutMs };
  switch (role) {
    case 'command':
      // No auto-pipelining: the coalescer already decides how many takes of a tag are in
      // flight (COALESCE_PIPELINE), and ioredis's pipelining measured slower, with a worse p99.
      return { ...base, ...bounded, enableOfflineQueue: false, maxRetriesPerRequest: 1 };
    case 'queue':
      return { ...base, ...bounded, enableOfflineQueue: false, maxRetriesPerRequest: 1 };
    case 'worker':
      return { ...base, socketTimeout: WORKER_SOCKET_TIMEOUT_MS, maxRetriesPerRequest: null };
    case 'subscriber':
      return { ...base, socketTimeout: WORKER_SOCKET_TIMEOUT_MS, maxRetriesPerRequest: null };
  }
}

/**
 * A connection to one server: a redis:// or rediss:// URL, or a redis+sentinel:// URL whose
 * master is found through its sentinels (sentinelPassword: theirs, REDIS_SENTINEL_PASSWORD).
 */
export function createRedis(url: string, role: RedisRole, commandTimeoutMs?: number, sentinelPassword = ''): Redis {
  if (isSentinelUrl(url)) return createSentinelRedis(parseSentinelUrl(url), sentinelPassword, role, commandTimeoutMs);
  installPauseTolerance();
  const { options, deadlineMs } = withDeadlines(redisOptions(role, commandTimeoutMs), role);
  return forRequestPath(new Redis(url, options), deadlineMs);
}

/**
 * The request path's connection (role "command") of a single server or a Sentinel-managed
 * master bounds its commands with one timer per connection (command-deadlines.ts) instead of
 * ioredis's two timers per command: the same bounds, without a timer armed and cleared for
 * every take. Other roles, and the nodes of a cluster, keep ioredis's options.
 */
function withDeadlines(
  roleOptions: RedisOptions,
  role: RedisRole,
): { options: RedisOptions; deadlineMs: number | undefined } {
  if (role !== 'command' || roleOptions.commandTimeout === undefined)
    return { options: roleOptions, deadlineMs: undefined };
  const { commandTimeout, socketTimeout: _socketTimeout, ...options } = roleOptions;
  return { options, deadlineMs: commandTimeout };
}

/** The request path's connection: bounded (command-deadlines.ts), a turn's in one write (write-batching.ts). */
function forRequestPath(redis: Redis, deadlineMs: number | undefined): Redis {
  if (deadlineMs === undefined) return redis;
  batchWrites(redis, installCommandDeadlines(redis, deadlineMs));
  return redis;
}

/**
 * The master a Sentinel group names, in a role. ioredis asks the sentinels (in turn) for the
 * master's address on every connect, and checks with INFO that the server is a master
 * (role), reconnecting otherwise. failoverDetector: it also subscribes to +switch-master on
 * a sentinel and reconnects as soon as the master changes, instead of waiting for the old
 * master to fail or refuse. A server that answers READONLY has been demoted: reconnect (the
 * refused command fails; it never ran).
 */
export function createSentinelRedis(
  target: SentinelTarget,
  sentinelPassword: string,
  role: RedisRole,
  commandTimeoutMs?: number,
): Redis {
  installPauseTolerance();
  const { options, deadlineMs } = withDeadlines(redisOptions(role, commandTimeoutMs), role);
  const redis = new Redis({
    ...options,
    sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: target.master,
    role: 'master',
    ...(sentinelPassword ? { sentinelPassword } : {}),
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    db: target.db,
    // Every sentinel unreachable: ask again soon, as the connection's own retries do.
    sentinelRetryStrategy: (times: number) => Math.min(50 * times, 1000),
    sentinelCommandTimeout: options.connectTimeout,
    failoverDetector: true,
    // The detector's connection to a sentinel that went away: tried again within seconds (ioredis waits
    // a minute), so failovers are heard again soon after the sentinel is back.
    sentinelReconnectStrategy: (times: number) => Math.min(100 * times, DETECTOR_RECONNECT_MAX_MS),
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  });
  guardFailoverDetector(redis);
  return forRequestPath(redis, deadlineMs);
}

/** The default Redis's master through REDIS_SENTINELS: credentials and database from REDIS_URL. */
export function defaultSentinelTarget(
  config: Pick<Config, 'redisUrl' | 'redisSentinels' | 'redisSentinelMaster'>,
): SentinelTarget {
  const url = new URL(config.redisUrl);
  const db = url.pathname.replace(/^\//, '');
  return {
    sentinels: config.redisSentinels,
    master: config.redisSentinelMaster,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    db: db === '' ? 0 : Number(db),
  };
}

/**
 * The same roles on a Redis Cluster. The offline queue is the cluster's (commands sent while
 * it has no slot map); the per-node options (retries per request, timeouts, credentials and
 * TLS from `url`) apply to every node's connection. BullMQ reads maxRetriesPerRequest from
 * the per-node options, so workers and subscribers carry null there.
 */
export function createCluster(
  nodes: readonly { host: string; port: number }[],
  url: string,
  role: RedisRole,
  commandTimeoutMs?: number,
): Cluster {
  installPauseTolerance();
  const { lazyConnect, retryStrategy, enableOfflineQueue, ...perNode } = redisOptions(role, commandTimeoutMs);
  const parsedUrl = new URL(url);
  const options: ClusterOptions = {
    lazyConnect,
    enableOfflineQueue: enableOfflineQueue ?? true,
    clusterRetryStrategy: retryStrategy,
    // After a failover the slot map is stale until refreshed: retry moved slots soon.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    slotsRefreshTimeout: 2000,
    redisOptions: {
      ...perNode,
      ...(parsedUrl.username ? { username: decodeURIComponent(parsedUrl.username) } : {}),
      ...(parsedUrl.password ? { password: decodeURIComponent(parsedUrl.password) } : {}),
      ...(parsedUrl.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  };
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    options,
  );
}

/**
 * The "default" Redis of a role: the cluster when REDIS_CLUSTER_NODES is set, the master the
 * sentinels name when REDIS_SENTINELS is, else REDIS_URL.
 */
export function createDefaultRedis(
  config: Pick<
    Config,
    | 'redisUrl'
    | 'redisClusterNodes'
    | 'redisSentinels'
    | 'redisSentinelMaster'
    | 'redisSentinelPassword'
    | 'redisCommandTimeoutMs'
  >,
  role: RedisRole,
): RedisClient {
  const commandTimeoutMs = config.redisCommandTimeoutMs;
  if (config.redisClusterNodes.length > 0)
    return createCluster(config.redisClusterNodes, config.redisUrl, role, commandTimeoutMs);
  if (config.redisSentinels.length > 0)
    return createSentinelRedis(defaultSentinelTarget(config), config.redisSentinelPassword, role, commandTimeoutMs);
  return createRedis(config.redisUrl, role, commandTimeoutMs);
}

/**
 * host:port of the master(s) a client talks to now, as its connection sees them: the peer
 * of a single server's (or a Sentinel-managed master's) socket, each master of a cluster;
 * empty while not connected.
 */
export function masterAddresses(client: RedisClient): string[] {
  if (isCluster(client)) return client.nodes('master').map((m) => `${m.options.host}:${m.options.port}`);
  if (client.status !== 'ready') return [];
  const socket = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  if (!socket?.remoteAddress || !socket.remotePort) return [];
  return [
    `${socket.remoteAddress.includes(':') ? `[${socket.remoteAddress}]` : socket.remoteAddress}:${socket.remotePort}`,
  ];
}

/** Resolves when the client is ready (a cluster: slot map loaded, cluster state ok), or rejects after timeoutMs. */
export function whenReady(client: RedisClient, timeoutMs = 10000): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new Error(
          `Redis${isCluster(client) ? ' Cluster' : ''} not ready after ${timeoutMs} ms (status ${client.status})`,
        ),
      );
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off('ready', onReady);
    };
    client.on('ready', onReady);
  });
}

/**
 * Calls fn with every batch of keys matching pattern. SCAN walks one server's keyspace, so on
 * a cluster every master is scanned (a slot being migrated may have keys on two of them).
 * The keys of one batch come from one node; fn may send commands for them through `client`.
 */
export async function scanKeys(
  client: RedisClient,
  pattern: string,
  fn: (keys: string[]) => Promise<unknown>,
): Promise<void> {
  // Until a cluster has loaded its slot map, its node list holds only the seeds, as masters.
  if (isCluster(client)) await whenReady(client);
  const nodes: Redis[] = isCluster(client) ? client.nodes('master') : [client];
  if (nodes.length === 0) throw new Error('Redis Cluster has no known master (slot map not loaded)');
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await fn(keys);
    } while (cursor !== '0');
  }
}

/**
 * Throws with a readable reason unless Redis can serve: a single server answers PING; a
 * cluster is connected, reports cluster_state:ok, and every master answers PING.
 */
export async function checkRedis(client: RedisClient): Promise<void> {
  if (!isCluster(client)) {
    await client.ping();
    return;
  }
  if (client.status !== 'ready') throw new Error(`Redis Cluster connection is ${client.status}`);
  const info = String(await client.cluster('INFO'));
  const state = /cluster_state:(\w+)/.exec(info)?.[1];
  if (state !== 'ok') throw new Error(`Redis Cluster reports cluster_state:${state ?? 'unknown'}`);
  const masters = client.nodes('master');
  if (masters.length === 0) throw new Error('Redis Cluster has no known master');
  await Promise.all(
    masters.map((m) =>
      m.ping().catch((err: Error) => {
        throw new Error(`Redis Cluster master ${m.options.host}:${m.options.port}: ${err.message}`);
      }),
    ),
  );
}
