// The only place Redis key strings are built (and read back). Every key of a tag carries the
// hash tag `{tag}`, so each Lua script touches a single cluster slot. The lease scripts get a
// worker-id space's key base and append the same suffixes as workerLease/workerLast/
// workerSpaceInit below (see lease-acquire-1.lua).

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

  /**
   * "<epoch> <note>": what retired the tag's state of that epoch and has not finished (an
   * import stopped midway), for the answers of its requests (same slot as the marker).
   */
  retiredBy(tag: string): string {
    return `${this.prefix}:{${tag}}:retired-by`;
  }

  /**
   * The kept answer of one idempotency key of a tag in one epoch (a re-created or moved tag
   * starts with no keys). The key may hold any visible ASCII, braces included: the first
   * `{...}` of the name, the tag's, decides the cluster slot.
   */
  idempotencyRecord(tag: string, epoch: number, key: string): string {
    return `${this.prefix}:{${tag}}:idem:${epoch}:${key}`;
  }

  /** The live idempotency keys of a tag's epoch: a sorted set scored by expiry (ms, Redis time). */
  idempotencyIndex(tag: string, epoch: number): string {
    return `${this.prefix}:{${tag}}:idem-index:${epoch}`;
  }

  /** What the live idempotency keys of a tag's epoch cost in bytes: a hash, "" the total, each key its charge. */
  idempotencyBytes(tag: string, epoch: number): string {
    return `${this.prefix}:{${tag}}:idem-bytes:${epoch}`;
  }

  /** Pattern matching every segment hash of one epoch of a tag: all shards and scopes. */
  segmentPattern(tag: string, epoch: number): string {
    return `${this.prefix}:{${escapeGlob(tag)}}:seg:${epoch}:*`;
  }

  /** Key base of a worker-id space (one per worker-id width); the lease scripts append to it. */
  workerSpace(workerBits: number): string {
    return `${this.prefix}:{ws${workerBits}}:`;
  }

  /** A space's guard: the wall-clock ms before which no holder may issue (0 when lifted). */
  workerSpaceInit(workerBits: number): string {
    return `${this.workerSpace(workerBits)}init`;
  }

  /** Pattern of every worker-id space's init marker (to list the spaces). */
  workerSpaceInitPattern(): string {
    return `${this.prefix}:{ws*}:init`;
  }

  /** The worker-id width of a key workerSpaceInitPattern matched, or undefined. */
  workerBitsOf(initKey: string): number | undefined {
    const bits = Number(/\{ws(\d+)\}:init$/.exec(initKey)?.[1]);
    return Number.isInteger(bits) ? bits : undefined;
  }

  /** The lease of one worker id: "<node id> <host>:<port>", with the lease's TTL. */
  workerLease(workerBits: number, workerId: number): string {
    return `${this.workerSpace(workerBits)}w:${workerId}`;
  }

  /** Pattern of every lease of one space. */
  workerLeasePattern(workerBits: number): string {
    return `${escapeGlob(this.workerSpace(workerBits))}w:*`;
  }

  /** The worker id of a key workerLeasePattern(workerBits) matched. */
  workerIdOf(workerBits: number, leaseKey: string): number {
    return Number(leaseKey.slice(this.workerSpace(workerBits).length + 'w:'.length));
  }

  /** The highest wall-clock ms the holders of a worker id may have issued at (no TTL). */
  workerLast(workerBits: number, workerId: number): string {
    return `${this.workerSpace(workerBits)}last:${workerId}`;
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

/**
 * BullMQ's own keys, read only to find queues no process holds a Queue object for (the lease
 * queues of killed processes): BullMQ has no call that lists queues. Layout of bullmq 6.7
 * (its QueueKeys.toKey): every key of queue Q under prefix P is "P:Q:<type>", and "P:Q:meta"
 * exists for every queue that was ever used. test/unit/keys.test.ts fails if bullmq changes it.
 */
export const queueKeys = {
  /** Pattern of the meta key of every queue under `prefix` whose name starts with `namePrefix`. */
  metaPattern(prefix: string, namePrefix: string): string {
    return `${escapeGlob(prefix)}:${escapeGlob(namePrefix)}*:meta`;
  },

  /** The queue name of a meta key under `prefix`, or undefined when the key is not one. */
  queueOfMeta(prefix: string, key: string): string | undefined {
    if (!key.startsWith(`${prefix}:`) || !key.endsWith(':meta')) return undefined;
    return key.slice(prefix.length + 1, -':meta'.length);
  },
};
