// What the admin API and page read of the stores, without writing: tag definitions, a tag's
// live state per shard (MySQL's marks beside Redis's segments), its last counter regression
// and live idempotency keys, client tokens, the named Redis servers with their connections,
// and the worker-id pools. Writes go through the door, TagAdmin (tag-admin.ts).
import { IdmintError } from '../errors.js';
import type { CountersRepo, RegressionRecord } from '../store/mysql/counters-repo.js';
import type { StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import type { TokenInfo, TokensRepo } from '../store/mysql/tokens-repo.js';
import type { LeaseInfo, LeaseStore } from '../store/redis/leases.js';
import { DEFAULT_REDIS, type SegmentStats, type SegmentStore } from '../store/redis/segments.js';
import { redisMasters } from '../store/redis/server-health.js';
import type { ConnectionState, ConnectionSupervisor } from '../store/redis/supervisor.js';
import type { IdempotencyKeys } from './idempotency.js';

export type { RegressionRecord } from '../store/mysql/counters-repo.js';
export type { TokenInfo } from '../store/mysql/tokens-repo.js';
/** How the admin API shows a tag, and a counter of its shards: its kind's (tag-kinds.ts). */
export { shownId, tagView } from './tag-kinds.js';

export interface AdminReadsDeps {
  readonly tags: TagsRepo;
  readonly tokens: TokensRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly idempotency: IdempotencyKeys;
  readonly leaseStore: LeaseStore;
  readonly connections: ConnectionSupervisor;
}

/** One shard of a tag as MySQL and Redis know it; `redis` undefined: its Redis could not be read. */
export interface ShardState {
  readonly shard: number;
  readonly mark?: { readonly maxId: number; readonly step: number };
  readonly redis?: SegmentStats;
}

/** A named Redis server as this process sees it. */
export interface RedisServerState {
  readonly name: string;
  readonly isDefault: boolean;
  /** The master the connection talks to now (after a Sentinel failover, the new one). */
  readonly master: string | null;
  readonly status: string;
  readonly connections: readonly ConnectionState[];
  /** How many tags live on it. */
  readonly tags: number;
}

/** One worker-id space (a width in bits) with its live leases. */
export interface WorkerSpace {
  readonly bits: number;
  readonly leases: readonly LeaseInfo[];
}

export class AdminReads {
  constructor(private readonly deps: AdminReadsDeps) {}

  /** A tag's definition; TAG_NOT_FOUND when there is none. */
  async getTag(name: string): Promise<StoredTag> {
    const tag = await this.deps.tags.get(name);
    if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    return tag;
  }

  listTags(): Promise<StoredTag[]> {
    return this.deps.tags.list();
  }

  /** Every shard that MySQL has allocated for or Redis holds a segment of. */
  async shardStates(tag: StoredTag): Promise<ShardState[]> {
    const marks = new Map((await this.deps.counters.marks(tag.tag)).map((m) => [m.shard, m]));
    const states: ShardState[] = [];
    for (let shard = 0; shard < tag.shards; shard++) {
      const ref = { tag: tag.tag, epoch: tag.epoch, shard, redis: tag.redis };
      const redis = await this.deps.segments.stats(ref).catch(() => undefined);
      const mark = marks.get(shard);
      if (!mark && !redis?.gen) continue;
      states.push({ shard, mark, redis });
    }
    return states;
  }

  /** MySQL found behind Redis and raised by a refill, the last time it was (docs/GUARANTEES.md). */
  lastRegression(tag: string): Promise<RegressionRecord | undefined> {
    return this.deps.counters.lastRegression(tag);
  }

  /** Live idempotency keys of the tag (rejects when its Redis cannot be read now). */
  idempotencyKeys(tag: StoredTag): Promise<number> {
    return this.deps.idempotency.held(tag);
  }

  /** The live client tokens of an existing tag (never their secrets). */
  async listTokens(tag: string): Promise<TokenInfo[]> {
    await this.getTag(tag);
    return this.deps.tokens.list(tag);
  }

  /**
   * Every named Redis server of this process ("default" first), and the servers tags live on
   * that this process has no connection for (REDIS_URLS differs between processes).
   */
  async redisServers(): Promise<{ servers: RedisServerState[]; unknown: { name: string; tags: number }[] }> {
    const { tags, segments, connections } = this.deps;
    const counts = await tags.countByRedis();
    const masters = redisMasters(segments);
    const servers = segments.names().map((name) => ({
      name,
      isDefault: name === DEFAULT_REDIS,
      master: masters[name] ?? null,
      status: segments.connection(name).status,
      connections: connections.states(name),
      tags: counts.get(name) ?? 0,
    }));
    const unconnected = [...counts.entries()].filter(([name]) => !segments.has(name));
    const unknown = unconnected.map(([name, count]) => ({ name, tags: count }));
    return { servers, unknown };
  }

  /** Every worker-id space with its live leases, from any process. */
  async workerSpaces(): Promise<WorkerSpace[]> {
    const spaces: WorkerSpace[] = [];
    const { leaseStore } = this.deps;
    for (const bits of await leaseStore.spaces()) spaces.push({ bits, leases: await leaseStore.list(bits) });
    return spaces;
  }
}
