// The sources this process issues IDs from, in one cache keyed by (tag, epoch, shard, scope):
// per tag, the sources of its newest definition: segment sources by (shard, scope), each a
// coalescer in front of the tag's Redis state and, for `order: node`, the block this process
// serves from in front of that; and the tag's snowflake generator.
//
// Warmed when a definition is read (the registry reports every read it keeps), so the first
// request after it finds its sources in memory, as the source of its kind decides
// (ModeSource.warm in mode-sources.ts): the coalescer (and, for `order: node`, the block,
// filled by the first request that needs it, as before: a block fetched for a tag nobody asks
// IDs of would be a gap) of a plain segment tag, the generator of a snowflake tag with the
// lease this process holds taken up. A new
// epoch (the tag moved, or was deleted and re-created) drops the old epoch's sources, and so
// does a deleted tag; rule scopes (one per app and period) idle for a minute are dropped once
// more than MAX_IDLE_SCOPES are held. A dropped `order: node` block is a gap; the counter
// lives on in Redis and MySQL.
//
// Snowflake generators are kept per (tag, layout) for the life of the process instead, not per
// epoch: a tag re-created with the same layout (as it must be) continues after the time and
// sequence this process already used for it.
import type { StoredOf, StoredTag } from '../store/mysql/tags-repo.js';
import { Coalescer, type CoalescerDeps } from './coalescer.js';
import type { LeaseManager } from './lease-manager.js';
import type { ModeSource } from './mode-sources.js';
import { NodeBuffer } from './node-buffer.js';
import { SnowflakeGenerator, type ClockEvents } from './snowflake-generator.js';
import type { Clock } from '../core/clock.js';

/** Rule scopes (app, period) whose sources a process keeps before dropping idle ones. */
const MAX_IDLE_SCOPES = 1000;
/** A rule scope unused this long is idle: it may be dropped, and its next period is not warmed. */
export const SCOPE_IDLE_MS = 60_000;

export interface SnowflakeDeps {
  readonly leases: LeaseManager;
  readonly clock: Clock;
  readonly maxBackMs: number;
}

/** The key of a segment source in TagSources.segments. */
export const sourceKey = (shard: number, scope: string): string => `${shard}\u0000${scope}`;

/** The source of one (tag, epoch, shard, scope). */
export interface SegmentSource {
  readonly coalescer: Coalescer;
  /** `order: node`: the block this process serves from (made on first use). */
  buffer: NodeBuffer | undefined;
  readonly scope: string;
  /** Last use, ms: rule scopes idle for a minute may be dropped (0: warmed ahead, not used yet). */
  lastUsed: number;
}

/** The sources of one tag's definition (one epoch). */
export class TagSources {
  /** Segment sources by sourceKey(shard, scope). */
  readonly segments = new Map<string, SegmentSource>();
  /** The source of shard 0 without scope of a plain segment tag: what a single ID comes from. */
  plain: SegmentSource | undefined;
  /** The generator of a snowflake tag's layout. */
  generator: SnowflakeGenerator | undefined;

  constructor(
    /** The newest definition of this epoch: sources read their prefetch and block size here. */
    public def: StoredTag,
    /** How the definition's IDs are issued (mode-sources.ts), chosen with it. */
    public mode: ModeSource,
    /** The issued-IDs counter of the tag (idmint_ids_issued_total), when metrics are kept. */
    public issued: { value: number } | undefined,
    /** Not in the cache: made for one request of an epoch already replaced. */
    readonly detached = false,
  ) {}
}

export class SourceCache {
  private readonly tags = new Map<string, TagSources>();
  private readonly generators = new Map<string, SnowflakeGenerator>();
  /** Segment sources with a scope (rules), all tags together. */
  private scoped = 0;
  /** Clock events of all snowflake generators of this process. */
  readonly clockEvents: ClockEvents = { backwards: 0, waits: 0 };

  constructor(
    private readonly deps: CoalescerDeps,
    private readonly snowflake: SnowflakeDeps,
    /** The source of a definition's kind (mode-sources.ts). */
    private readonly modeOf: (tag: StoredTag) => ModeSource,
  ) {}

  /** The sources made for exactly this definition object, or undefined (synchronous, hot path). */
  current(tag: StoredTag): TagSources | undefined {
    const sources = this.tags.get(tag.tag);
    return sources !== undefined && sources.def === tag ? sources : undefined;
  }

  /** The sources of the definition's epoch, for a request that resolved it. */
  of(tag: StoredTag): TagSources {
    const sources = this.tags.get(tag.tag);
    return sources !== undefined && sources.def.epoch === tag.epoch ? sources : this.warm(tag);
  }

  /** The sources of every tag held, of its newest definition. */
  held(): IterableIterator<TagSources> {
    return this.tags.values();
  }

  /** A definition was read (undefined: the tag does not exist). */
  loaded(name: string, tag: StoredTag | undefined): void {
    if (tag === undefined) this.drop(name);
    else this.warm(tag);
  }

  /**
   * The sources of this definition's epoch, made and warmed when it is newer than the cached
   * one (whose sources are dropped then); for a definition of an older epoch, sources for that
   * request only, outside the cache.
   */
  warm(tag: StoredTag): TagSources {
    let sources = this.tags.get(tag.tag);
    if (sources !== undefined && sources.def === tag) return sources;
    if (sources !== undefined && sources.def.epoch > tag.epoch)
      return new TagSources(tag, this.modeOf(tag), sources.issued, true);
    if (sources === undefined || sources.def.epoch !== tag.epoch) {
      if (sources !== undefined) this.drop(tag.tag);
      sources = new TagSources(tag, this.modeOf(tag), this.deps.metrics?.issuedSeries(tag.tag, tag.mode));
      this.tags.set(tag.tag, sources);
    } else {
      if (sources.def.mode !== tag.mode) sources.issued = this.deps.metrics?.issuedSeries(tag.tag, tag.mode);
      sources.def = tag;
      sources.mode = this.modeOf(tag);
    }
    // What a first request needs at hand is the kind's to say (mode-sources.ts).
    if (tag.enabled) sources.mode.warm?.(tag, sources);
    return sources;
  }

  /** The segment source of (shard, scope) of the sources' epoch, made on first use. */
  segment(sources: TagSources, shard: number, scope: string): SegmentSource {
    const key = sourceKey(shard, scope);
    let src = sources.segments.get(key);
    if (src === undefined) {
      // Counted while the sources are the cache's (a caller may hold sources since replaced).
      const counted = scope !== '' && !sources.detached && this.tags.get(sources.def.tag) === sources;
      if (counted && this.scoped >= MAX_IDLE_SCOPES) this.pruneIdle();
      const { tag, epoch, redis } = sources.def;
      const coalescer = new Coalescer({ tag, epoch, shard, scope, redis }, () => sources.def.prefetch, this.deps);
      src = { coalescer, buffer: undefined, scope, lastUsed: Date.now() };
      sources.segments.set(key, src);
      if (counted) this.scoped++;
    } else if (scope !== '') {
      src.lastUsed = Date.now();
    }
    return src;
  }

  /**
   * Holds the source of a rule scope warmed ahead of its period (period-warmer.ts) as not used
   * yet, unless a request made it meanwhile: a warmed scope is no sign of an app in use.
   */
  holdWarmed(sources: TagSources, scope: string): void {
    if (sources.segments.has(sourceKey(0, scope))) return;
    this.segment(sources, 0, scope).lastUsed = 0;
  }

  /** The `order: node` block of a segment source, made on first use. */
  buffer(sources: TagSources, src: SegmentSource): NodeBuffer {
    return (src.buffer ??= new NodeBuffer(src.coalescer, () => sources.def.nodeBlock));
  }

  /** The issued-IDs counter of the tag's mode. */
  issuedOf(tag: StoredTag): { value: number } | undefined {
    const sources = this.tags.get(tag.tag);
    return sources !== undefined && sources.def.mode === tag.mode
      ? sources.issued
      : this.deps.metrics?.issuedSeries(tag.tag, tag.mode);
  }

  /**
   * The last value this process handed out from the `order: node` block of a rule scope of the
   * tag's epoch (for id_server's monitor), undefined when it has handed out none.
   */
  lastFromBlock(tag: StoredTag, scope: string): number | undefined {
    const sources = this.tags.get(tag.tag);
    if (sources === undefined || sources.def.epoch !== tag.epoch) return undefined;
    return sources.segments.get(sourceKey(0, scope))?.buffer?.last;
  }

  /** The generator of a snowflake tag's layout. */
  generatorOf(tag: StoredOf<'snowflake'>): SnowflakeGenerator {
    const key = `${tag.tag}\u0000${JSON.stringify(tag.snowflake)}`;
    let generator = this.generators.get(key);
    if (!generator) {
      const { leases, clock, maxBackMs } = this.snowflake;
      generator = new SnowflakeGenerator(tag.snowflake, leases, clock, maxBackMs, this.clockEvents);
      this.generators.set(key, generator);
    }
    return generator;
  }

  /** Forgets the sources of a tag (its generators stay, see above). */
  private drop(name: string): void {
    const sources = this.tags.get(name);
    if (sources === undefined) return;
    this.tags.delete(name);
    for (const src of sources.segments.values()) if (src.scope !== '') this.scoped--;
  }

  /** Drops the sources of rule scopes unused for a minute (past periods, idle apps). */
  private pruneIdle(): void {
    const cutoff = Date.now() - SCOPE_IDLE_MS;
    for (const sources of this.tags.values()) {
      for (const [key, src] of sources.segments) {
        if (src.scope === '' || src.lastUsed > cutoff || !src.coalescer.idle || !(src.buffer?.idle ?? true)) continue;
        sources.segments.delete(key);
        this.scoped--;
      }
    }
  }

  /** How many segment sources are cached, and of how many epochs (for tests and debugging). */
  size(name: string): { epoch: number; segments: number } | undefined {
    const sources = this.tags.get(name);
    return sources && { epoch: sources.def.epoch, segments: sources.segments.size };
  }
}
