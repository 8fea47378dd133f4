// One validated, frozen configuration read from the environment at start-up. Every option,
// its default and its meaning is listed here and in docs/CONFIG.md; a bad value stops the
// process with a message naming the variable.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isSentinelUrl, parseSentinelUrl, type HostPort } from './core/redis-sentinel.js';
import { readRedisTopology } from './config-redis-topology.js';
import { TAG_NAME } from './core/tag-name.js';

export interface Config {
  /** HTTP and websocket port. */
  readonly port: number;
  readonly host: string;
  /** id_server-compatible UDP port; 0 turns the listener off. */
  readonly udpPort: number;
  /** gRPC port (service idmint.v1.Ids); 0 turns the listener off. */
  readonly grpcPort: number;
  readonly redisUrl: string;
  /**
   * Named Redis servers for segment and rule state: `default` is REDIS_URL (which also holds
   * the queues, leases and pub/sub); REDIS_URLS adds others. Each tag lives on one of them.
   */
  readonly redisUrls: Readonly<Record<string, string>>;
  /**
   * REDIS_CLUSTER_NODES: seeds of a Redis Cluster that is then the `default` Redis (REDIS_URL
   * gives only its credentials and TLS); empty for a single server.
   */
  readonly redisClusterNodes: readonly { readonly host: string; readonly port: number }[];
  /**
   * REDIS_SENTINELS: the Sentinel group that names the `default` Redis's master (whose name is
   * redisSentinelMaster; REDIS_URL then gives only its credentials and database); empty when
   * the default Redis is REDIS_URL's server or a cluster.
   */
  readonly redisSentinels: readonly HostPort[];
  /** REDIS_SENTINEL_MASTER: the master's name in the sentinels' configuration ('' without sentinels). */
  readonly redisSentinelMaster: string;
  /** REDIS_SENTINEL_PASSWORD: the sentinels' own password, for every Sentinel group ('' = none). */
  readonly redisSentinelPassword: string;
  /** Prefix of every Redis key idmint writes, including BullMQ's (which gets a hash tag). */
  readonly redisPrefix: string;
  readonly mysqlUrl: string;
  /** A Redis command of the request path without a reply this long fails, and its connection is reset. */
  readonly redisCommandTimeoutMs: number;
  /** A MySQL query without an answer this long fails, and its connection is closed. */
  readonly mysqlQueryTimeoutMs: number;
  /** Shutdown steps still running this long after close() began are abandoned and the connections dropped. */
  readonly shutdownTimeoutMs: number;
  /**
   * On SIGTERM the process first reports not ready (/readyz 503, gRPC health NOT_SERVING,
   * idmint_ready 0) and keeps serving every transport this long, so load balancers stop
   * sending it requests before it stops accepting them; 0 closes at once.
   */
  readonly shutdownDrainMs: number;
  readonly adminToken: string;
  /** True when ADMIN_TOKEN was unset and a token was generated for this process. */
  readonly adminTokenGenerated: boolean;
  /** Read-only admin credential (GET admin routes, read-only Bull Board); '' when unset. */
  readonly viewerToken: string;
  /**
   * A source address whose admin token failed this many times within adminAuthWindowMs is refused (429) until the
   * oldest is older.
   */
  readonly adminAuthMaxFailures: number;
  readonly adminAuthWindowMs: number;
  /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <it>`; '' leaves /metrics open. */
  readonly metricsToken: string;
  /**
   * REVEAL_PROTECTED_TAGS: a request for a tag with client tokens that carries no valid one is
   * refused as UNAUTHORIZED (true), or answered as a tag that does not exist (false, the default).
   */
  readonly revealProtectedTags: boolean;
  /** Identity of this process in segment logs and worker leases. */
  readonly nodeId: string;
  readonly logLevel: string;
  /** LOG_FORMAT: `json` lines, `pretty` readable lines (pino-pretty), or `auto` (pretty on a terminal). */
  readonly logFormat: LogFormat;
  /** How long a request waits for a cold or dry tag to be refilled before answering 503. */
  readonly refillWaitMs: number;
  /** BullMQ refill worker concurrency; 0 means this process runs no refill worker. */
  readonly refillConcurrency: number;
  /** How long before a rule's period ends the next period's scopes of apps in use are warmed (0: never). */
  readonly rulePeriodWarmMs: number;
  /** A tag definition cached by a process is re-read from MySQL at least this often. */
  readonly tagCacheMs: number;
  /** Upper bound of IDs one coalesced Redis take may ask for. */
  readonly coalesceMax: number;
  /** Most coalesced Redis takes of one tag in flight at once (pipelined) while it answers normally. */
  readonly coalescePipeline: number;
  /**
   * A coalesced take waits one more event-loop turn while requests keep arriving, unless this many wait already (0:
   * never).
   */
  readonly coalesceHold: number;
  /**
   * While a take of a tag is in flight, the next one waits for its reply, for at most this many measured round trips
   * (0: never).
   */
  readonly coalesceHoldRtt: number;
  /**
   * After a take that served several requests, the next one waits for as many, for at most this many ms and one
   * measured round trip (0: never).
   */
  readonly coalesceLingerMs: number;
  /** Extra tag created at start-up when missing (the quickstart's `demo`), or ''. */
  readonly demoTag: string;
  /** Serve HTTP; false for `idmint worker`. */
  readonly serveHttp: boolean;
  /** Worker-id lease TTL; renewals run every third of it. */
  readonly leaseTtlMs: number;
  /** A lease is treated as lost this long before it could expire in Redis. */
  readonly leaseMarginMs: number;
  /** How often the janitor shared by every serving process runs (removes dead nodes' lease queues). */
  readonly janitorEveryMs: number;
  /** A clock step back up to this long is waited out; more answers CLOCK_BACKWARDS. */
  readonly clockMaxBackMs: number;
  /** host:port shown to operators as this process's address ('' = HOST:PORT as bound). */
  readonly advertiseAddr: string;
  /** Reported as node_offset by the UDP monitor action (informational, as in id_server). */
  readonly nodeOffset: number;
  /** Largest UDP datagram accepted. */
  readonly udpMaxBytes: number;
  /** Websocket stream: most IDs one take may ask for. */
  readonly streamMaxCount: number;
  /** Websocket stream: most takes in flight on one socket. */
  readonly streamMaxInFlight: number;
  /** Websocket stream: most IDs in one block (frame). */
  readonly streamMaxBlock: number;
  /** BULK_SHARE_PERCENT: of each window, the part bulk takes may use while single requests are served. */
  readonly bulkSharePercent: number;
  /** Websocket stream: most bytes a socket may have buffered (unsent) in this process. */
  readonly streamMaxBufferBytes: number;
  /** Websocket stream: most open sockets per client IP address. */
  readonly streamMaxSocketsPerClient: number;
  /**
   * SOURCE_MAX_FINITE_IDS_PER_SECOND: IDs one source address may take per second of tags whose
   * space is finite (rule tags, permuted tags, a lowered max_id_limit) without holding a token of
   * the tag, on HTTP and UDP (api/source-limits.ts); 0: no limit.
   */
  readonly sourceMaxFiniteIdsPerSecond: number;
  /**
   * SOURCE_MAX_REFUSALS_PER_SECOND: refused requests one source address may make per second on the ID routes and UDP;
   * 0: no limit.
   */
  readonly sourceMaxRefusalsPerSecond: number;
  /** SOURCE_BURST_SECONDS: each per-source limit lets a source spend this many seconds of its rate at once. */
  readonly sourceBurstSeconds: number;
  /** gRPC: most Take calls running at once per client address. */
  readonly grpcMaxTakesPerPeer: number;
  /**
   * gRPC: most bytes of Take blocks written and not yet taken by HTTP/2, across all calls (beyond one block per call).
   */
  readonly grpcMaxBufferedBytes: number;
  /** Most live idempotency keys one tag may hold; a keyed request past it is refused (IDEMPOTENCY_KEYS_FULL). */
  readonly idempotencyMaxKeys: number;
  /** IDEMPOTENCY_MAX_BYTES: the most bytes one tag's live idempotency keys may cost in its Redis. */
  readonly idempotencyMaxBytes: number;
  /** IDEMPOTENCY_HOLD_MS: how long a process holds an answer it kept or found, to answer replays from memory. */
  readonly idempotencyHoldMs: number;
  /** Test mode: debug routes under /v1/debug/ (clock shift, lease expiry); loopback HOST only. */
  readonly testMode: boolean;
  /**
   * PRE_ROUTER: GET /v1/id/:tag may be answered before Fastify's router (api/http/fast-path.ts); off, Fastify serves
   * it.
   */
  readonly preRouter: boolean;
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** BULK_SHARE_PERCENT's default: bulk takes get 5% of each window beside single requests (bulk-turns.ts). */
export const DEFAULT_BULK_SHARE_PERCENT = 5;

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const problems: string[] = [];

  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (!/^\d+$/.test(raw.trim())) {
      problems.push(`${name} must be a whole number, got "${raw}"`);
      return def;
    }
    const value = Number(raw);
    if (value < min || value > max) problems.push(`${name} must be between ${min} and ${max}, got ${value}`);
    return value;
  };
  const url = (name: string, def: string, protocols: string[]): string => {
    const raw = env[name] || def;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol))
        problems.push(`${name} must start with ${protocols.join(' or ')}//, got "${raw}"`);
    } catch {
      problems.push(`${name} is not a URL: "${raw}"`);
    }
    return raw;
  };

  const port = int('PORT', 8080, 0, 65535);
  const udpPort = int('UDP_PORT', 8081, 0, 65535);
  const grpcPort = int('GRPC_PORT', 8082, 0, 65535);
  if (grpcPort !== 0 && grpcPort === port) problems.push(`GRPC_PORT must differ from PORT (${port})`);
  const redisUrl = url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']);
  const redisUrls: Record<string, string> = { default: redisUrl };
  // Entries are separated by the commas before a `name=`: a redis+sentinel:// URL holds commas.
  for (const item of (env.REDIS_URLS ?? '')
    .split(/,(?=\s*[^,=/]+=)/)
    .map((x) => x.trim().replace(/^[,\s]+|[,\s]+$/g, ''))
    .filter(Boolean)) {
    const eq = item.indexOf('=');
    const name = eq > 0 ? item.slice(0, eq).trim() : '';
    const raw = eq > 0 ? item.slice(eq + 1).trim() : '';
    if (!/^[a-z0-9_-]{1,32}$/.test(name)) {
      problems.push(`REDIS_URLS entries are name=redis://host:port with a name of [a-z0-9_-]{1,32}, got "${item}"`);
      continue;
    }
    if (name in redisUrls) {
      problems.push(
        name === 'default'
          ? 'REDIS_URLS must not name "default": that is REDIS_URL'
          : `REDIS_URLS names "${name}" twice`,
      );
      continue;
    }
    if (isSentinelUrl(raw)) {
      try {
        parseSentinelUrl(raw);
        redisUrls[name] = raw;
      } catch (err) {
        problems.push(`REDIS_URLS entry "${name}" is not a valid Sentinel URL: ${(err as Error).message}`);
      }
      continue;
    }
    try {
      if (!['redis:', 'rediss:'].includes(new URL(raw).protocol)) throw new Error();
      redisUrls[name] = raw;
    } catch {
      problems.push(`REDIS_URLS entry "${name}" is not a redis://, rediss:// or redis+sentinel:// URL: "${raw}"`);
    }
  }
  const { redisClusterNodes, redisSentinels, redisSentinelMaster } = readRedisTopology(
    env,
    redisUrl,
    redisUrls,
    problems,
  );
  const mysqlUrl = url('MYSQL_URL', 'mysql://root@127.0.0.1:3306/idmint', ['mysql:', 'mariadb:']);
  if (!problems.some((p) => p.startsWith('MYSQL_URL'))) {
    const db = new URL(mysqlUrl).pathname.replace(/^\//, '');
    if (!/^[A-Za-z0-9_]{1,64}$/.test(db))
      problems.push(`MYSQL_URL must name a database (letters, digits, _), got "${db}"`);
  }
  const redisPrefix = env.REDIS_PREFIX || 'idmint';
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(redisPrefix))
    problems.push(`REDIS_PREFIX must match [A-Za-z0-9_.-]{1,32}, got "${redisPrefix}"`);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel))
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const logFormat = (env.LOG_FORMAT || 'auto') as LogFormat;
  if (!LOG_FORMATS.includes(logFormat))
    problems.push(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${logFormat}"`);
  const token = env.ADMIN_TOKEN;
  // A generated token has 24 characters; a shorter one is guessed the sooner.
  if (token !== undefined && token !== '' && token.length < 16)
    problems.push('ADMIN_TOKEN must be at least 16 characters (a generated one has 24)');
  const viewerToken = env.VIEWER_TOKEN ?? '';
  if (viewerToken !== '' && viewerToken.length < 16) problems.push('VIEWER_TOKEN must be at least 16 characters');
  if (viewerToken !== '' && viewerToken === token) problems.push('VIEWER_TOKEN must differ from ADMIN_TOKEN');
  const metricsToken = env.METRICS_TOKEN ?? '';
  if (metricsToken !== '' && metricsToken.length < 8) problems.push('METRICS_TOKEN must be at least 8 characters');
  const flag = (name: string): boolean => {
    const raw = env[name];
    if (raw !== undefined && !['', '0', '1', 'true', 'false'].includes(raw))
      problems.push(`${name} must be 1 or 0, got "${raw}"`);
    return raw === '1' || raw === 'true';
  };
  const revealProtectedTags = flag('REVEAL_PROTECTED_TAGS');
  const demoTag = env.DEMO_TAG ?? '';
  if (demoTag !== '' && !TAG_NAME.test(demoTag)) problems.push(`DEMO_TAG is not a valid tag name: "${demoTag}"`);

  const nodeId =
    env.NODE_ID || `${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(nodeId))
    problems.push(`NODE_ID must match [A-Za-z0-9_.-]{1,100}, got "${nodeId}"`);
  const leaseTtlMs = int('LEASE_TTL_MS', 15000, 3000, 600000);
  const leaseMarginMs = int('LEASE_MARGIN_MS', 1000, 100, 60000);
  if (leaseMarginMs * 3 >= leaseTtlMs)
    problems.push(`LEASE_MARGIN_MS (${leaseMarginMs}) must be below a third of LEASE_TTL_MS (${leaseTtlMs})`);
  const janitorEveryMs = int('JANITOR_EVERY_MS', 30_000, 1000, 3_600_000);
  const streamMaxBlock = int('STREAM_MAX_BLOCK', 100_000, 1, 1_000_000);
  const streamMaxBufferBytes = int('STREAM_MAX_BUFFER_BYTES', 4 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024);
  // A binary block must fit the buffer bound on its own, or a stream could never send it.
  if (streamMaxBufferBytes < 8 + 8 * streamMaxBlock) {
    problems.push(
      `STREAM_MAX_BUFFER_BYTES (${streamMaxBufferBytes}) must hold one binary block of STREAM_MAX_BLOCK IDs: at least ${8 + 8 * streamMaxBlock}`,
    );
  }

  const testMode = env.TEST_MODE === '1' || env.TEST_MODE === 'true';
  if (env.TEST_MODE !== undefined && !['', '0', '1', 'true', 'false'].includes(env.TEST_MODE))
    problems.push(`TEST_MODE must be 1 or 0, got "${env.TEST_MODE}"`);
  // The debug routes move the clock and drop leases: never reachable from another machine.
  if (testMode && !/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(env.HOST || '0.0.0.0'))
    problems.push(`TEST_MODE needs a loopback HOST (127.0.0.1, ::1), got "${env.HOST || '0.0.0.0'}"`);

  if (env.PRE_ROUTER !== undefined && !['', '0', '1'].includes(env.PRE_ROUTER))
    problems.push(`PRE_ROUTER must be 1 or 0, got "${env.PRE_ROUTER}"`);

  const cfg: Config = {
    port,
    host: env.HOST || '0.0.0.0',
    udpPort,
    grpcPort,
    redisUrl,
    redisUrls: Object.freeze(redisUrls),
    redisClusterNodes: Object.freeze(redisClusterNodes.map((n) => Object.freeze(n))),
    redisSentinels: Object.freeze(redisSentinels.map((n) => Object.freeze(n))),
    redisSentinelMaster,
    redisSentinelPassword: env.REDIS_SENTINEL_PASSWORD ?? '',
    redisPrefix,
    mysqlUrl,
    redisCommandTimeoutMs: int('REDIS_COMMAND_TIMEOUT_MS', 1000, 50, 60000),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 20000, 1000, 25000),
    shutdownDrainMs: int('SHUTDOWN_DRAIN_MS', 3000, 0, 120_000),
    mysqlQueryTimeoutMs: int('MYSQL_QUERY_TIMEOUT_MS', 2000, 100, 60000),
    adminToken: token || randomBytes(18).toString('base64url'),
    adminTokenGenerated: !token,
    viewerToken,
    metricsToken,
    adminAuthMaxFailures: int('ADMIN_AUTH_MAX_FAILURES', 10, 1, 1_000_000),
    adminAuthWindowMs: int('ADMIN_AUTH_WINDOW_MS', 60_000, 1000, 86_400_000),
    revealProtectedTags,
    nodeId,
    logLevel,
    logFormat,
    refillWaitMs: int('REFILL_WAIT_MS', 3000, 10, 60000),
    refillConcurrency: int('REFILL_CONCURRENCY', 4, 0, 64),
    rulePeriodWarmMs: int('RULE_PERIOD_WARM_MS', 30_000, 0, 3_600_000),
    tagCacheMs: int('TAG_CACHE_MS', 1000, 50, 60000),
    coalesceMax: int('COALESCE_MAX', 100000, 1, 10_000_000),
    coalescePipeline: int('COALESCE_PIPELINE', 4, 1, 64),
    coalesceHold: int('COALESCE_HOLD', 32, 0, 100_000),
    coalesceHoldRtt: int('COALESCE_HOLD_RTT', 1, 0, 16),
    coalesceLingerMs: int('COALESCE_LINGER_MS', 2, 0, 100),
    demoTag,
    serveHttp: true,
    leaseTtlMs,
    janitorEveryMs,
    leaseMarginMs,
    clockMaxBackMs: int('CLOCK_MAX_BACK_MS', 10, 0, 5000),
    advertiseAddr: env.ADVERTISE_ADDR ?? '',
    nodeOffset: int('NODE_OFFSET', 0, 0, 1_000_000),
    udpMaxBytes: int('UDP_MAX_BYTES', 8192, 256, 65507),
    streamMaxCount: int('STREAM_MAX_COUNT', 100_000_000, 1, 1_000_000_000_000),
    streamMaxInFlight: int('STREAM_MAX_IN_FLIGHT', 16, 1, 1024),
    streamMaxBlock,
    bulkSharePercent: int('BULK_SHARE_PERCENT', DEFAULT_BULK_SHARE_PERCENT, 1, 100),
    streamMaxBufferBytes,
    streamMaxSocketsPerClient: int('STREAM_MAX_SOCKETS_PER_CLIENT', 64, 1, 100_000),
    sourceMaxFiniteIdsPerSecond: int('SOURCE_MAX_FINITE_IDS_PER_SECOND', 10_000, 0, 1_000_000_000),
    sourceMaxRefusalsPerSecond: int('SOURCE_MAX_REFUSALS_PER_SECOND', 1000, 0, 1_000_000_000),
    sourceBurstSeconds: int('SOURCE_BURST_SECONDS', 10, 1, 3600),
    grpcMaxTakesPerPeer: int('GRPC_MAX_TAKES_PER_PEER', 16, 1, 100_000),
    grpcMaxBufferedBytes: int('GRPC_MAX_BUFFERED_BYTES', 64 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024 * 1024),
    idempotencyMaxKeys: int('IDEMPOTENCY_MAX_KEYS', 100_000, 1, 100_000_000),
    idempotencyMaxBytes: int('IDEMPOTENCY_MAX_BYTES', 64 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
    idempotencyHoldMs: int('IDEMPOTENCY_HOLD_MS', 10_000, 0, 300_000),
    testMode,
    preRouter: env.PRE_ROUTER !== '0',
    ...overrides,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(cfg);
}
