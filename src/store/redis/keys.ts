// The only place Redis key strings are built. Every key of a tag carries the hash tag
// `{tag}`, so each Lua script touches a single cluster slot.

/** Escapes the characters Redis MATCH patterns treat specially. */
const escapeGlob = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');

export class Keys {
  constructor(readonly prefix: string) {}

  /**
   * Segment double buffer of one (tag, shard) in one epoch of the tag (see sql/001_tags.sql);
   * rule counters add their scope, "<app>/<period>".
   */
  segment(tag: string, epoch: number, shard: number, scope = ''): string {
    const base = `${this.prefix}:{${tag}}:seg:${epoch}:${shard}`;
    return scope === '' ? base : `${base}:${scope}`;
  }

  /**
   * Highest epoch of a tag retired on this Redis because the tag moved to another one; take
   * and install refuse every segment hash of that epoch or below (same slot as the hashes).
   */
  moved(tag: string): string {
    return `${this.prefix}:{${tag}}:moved`;
  }

  /** Pattern matching every segment hash of one epoch of a tag: all shards and scopes. */
  segmentPattern(tag: string, epoch: number): string {
    return `${this.prefix}:{${escapeGlob(tag)}}:seg:${epoch}:*`;
  }

  /** Key base of a worker-id space (one per worker-id width); the lease scripts append to it. */
  workerSpace(workerBits: number): string {
    return `${this.prefix}:{ws${workerBits}}:`;
  }

  /** Pattern of every worker-id space's init marker (to list the spaces). */
  workerSpaceInitPattern(): string {
    return `${this.prefix}:{ws*}:init`;
  }

  /** Liveness mark of a node, refreshed by its lease renewals. */
  nodeHeartbeat(nodeId: string): string {
    return `${this.prefix}:node:${nodeId}`;
  }

  /** Pub/sub channel announcing tag definition changes. */
  tagsChanged(): string {
    return `${this.prefix}:tags-changed`;
  }

  /** BullMQ prefix: one hash tag so each queue's keys share a slot. */
  queuePrefix(): string {
    return `{${this.prefix}}`;
  }
}
