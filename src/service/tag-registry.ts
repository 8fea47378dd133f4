// Every process's view of the tag definitions. A change is announced (Redis pub/sub, sent by
// whichever process made it) and bumps the tag's version here; a cached definition serves only
// if it was read at the current version, and a request joins a read in flight only if that read
// started at the current version. So once a change is announced (or made by this process),
// every request after it sees it, and none gets the old definition because another is already
// reading. Without an announcement, a definition older than TAG_CACHE_MS is refreshed in the
// background while the cached one keeps serving. While MySQL is unreachable the last known
// definition keeps serving (IDs still come from Redis) and is not read again before another
// TAG_CACHE_MS. On a Redis Cluster, PUBLISH reaches subscribers on every node (the cluster bus
// forwards it), so the same channel works there.
//
// Names of tags that do not exist are remembered too (a request for one costs no MySQL read
// while it is fresh), but at most maxAbsent of them, the oldest forgotten first, and a name
// whose first read failed is not kept: a flood of made-up names costs bounded memory. A name
// forgotten is read again when asked for, as a name never seen is.
import type { Logger } from 'pino';
import { unavailable } from '../errors.js';
import type { StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import { isCluster, type RedisClient } from '../store/redis/connection.js';
import type { Keys } from '../store/redis/keys.js';
import { keepSubscribed } from '../store/redis/subscription.js';

interface Entry {
  tag: StoredTag | undefined;
  /** When the definition was last read (or a failed read was last tried), ms. */
  at: number;
  /** A definition was read at least once. */
  known: boolean;
  /** Bumped by every change announced (or noticed) for this tag. */
  version: number;
  /** The version at which the cached definition was read: usable only while it is `version`. */
  readAt: number;
  /** The newest read in flight, with the version it started at. */
  loading?: { readonly version: number; readonly promise: Promise<StoredTag | undefined> };
}

/** Names of tags that do not exist kept by default (a few hundred bytes each). */
export const MAX_ABSENT_NAMES = 10_000;

export class TagRegistry {
  private readonly entries = new Map<string, Entry>();
  /** Names read as not existing, oldest read first. */
  private readonly absent = new Set<string>();
  private readonly listeners: ((name: string, tag: StoredTag | undefined) => void)[] = [];
  /** Names read again at their announcement although no definition of them is held here. */
  private readonly wanted: ((name: string) => boolean)[] = [];

  constructor(
    private readonly repo: Pick<TagsRepo, 'get'> & { tokenHashes(tag: string): Promise<string[]> },
    private readonly publisher: RedisClient,
    private readonly keys: Keys,
    private readonly maxAgeMs: number,
    private readonly log: Logger,
    private readonly maxAbsent = MAX_ABSENT_NAMES,
  ) {}

  /** How many names this process holds an entry for (tags, and names of none). */
  cachedNames(): number {
    return this.entries.size;
  }

  /**
   * Calls `listener` with every definition read and cached here (undefined: the tag does not
   * exist), before the requests waiting for the read get it.
   */
  onLoad(listener: (name: string, tag: StoredTag | undefined) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Reads a tag again at its announcement when `wanted` says so, as it does a definition it
   * holds: for a process that keeps something of a tag it never read (its listeners hear the read).
   */
  alsoReread(wanted: (name: string) => boolean): void {
    this.wanted.push(wanted);
  }

  /** Starts listening for change announcements on a dedicated subscriber connection. */
  async listen(subscriber: RedisClient): Promise<void> {
    const channel = this.keys.tagsChanged();
    subscriber.on('message', (ch: string, tag: string) => {
      if (ch !== channel) return;
      this.markChanged(tag);
      this.reread(tag);
    });
    // Announcements may have been missed while disconnected: re-read everything before use.
    const markAll = () => {
      for (const name of this.entries.keys()) this.markChanged(name);
    };
    if (!isCluster(subscriber)) {
      // Once the subscription is back after a reconnect (src/store/redis/subscription.ts).
      await keepSubscribed(subscriber, channel, markAll, this.log);
      return;
    }
    // A cluster resubscribes by itself, on one node, and moves to another when that node
    // leaves the slot map, without a 'ready' of its own: announcements may have been missed then too.
    subscriber.on('ready', markAll);
    subscriber.on('-node', markAll);
    await subscriber.subscribe(channel);
  }

  /**
   * From now on, neither the cached definition nor a read that started before this moment
   * answers a request: the next one reads MySQL again (and those arriving meanwhile join it).
   */
  private markChanged(name: string): void {
    const entry = this.entries.get(name);
    if (entry) entry.version++;
  }

  /**
   * A definition this process holds, read again at its announced change rather than at the next
   * request for it: the listeners hear of a deleted tag then (its sources are dropped, sources.ts),
   * where no request would come to read it, and the next request finds the new definition read.
   * So is a name `alsoReread` wants.
   */
  private reread(name: string): void {
    const entry = this.entries.get(name);
    const held = entry?.known === true && entry.tag !== undefined;
    if (held || this.wanted.some((wanted) => wanted(name))) this.get(name).catch(() => undefined);
  }

  /** The cached definition was read after the last change this process knows of. */
  private static current(entry: Entry): boolean {
    return entry.known && entry.readAt === entry.version;
  }

  /** The cached definition when it may be used as it is now (known, fresh, read after the last
   * announced change); undefined when get() has to be asked. Synchronous, for the hot path. */
  peek(name: string): StoredTag | undefined {
    const entry = this.entries.get(name);
    if (entry === undefined || !TagRegistry.current(entry) || Date.now() - entry.at >= this.maxAgeMs) return undefined;
    return entry.tag;
  }

  /**
   * The definition as of a read that started after the last change this process knows of:
   * the cached one when it was read so (refreshed in the background once older than
   * TAG_CACHE_MS), else the read in flight when it started so, else a new read.
   */
  get(name: string): Promise<StoredTag | undefined> {
    let entry = this.entries.get(name);
    if (entry === undefined) {
      entry = { tag: undefined, at: 0, known: false, version: 0, readAt: -1 };
      this.entries.set(name, entry);
    }
    const joinable =
      entry.loading !== undefined && entry.loading.version === entry.version ? entry.loading.promise : undefined;
    if (TagRegistry.current(entry)) {
      if (Date.now() - entry.at >= this.maxAgeMs && joinable === undefined)
        void this.load(name, entry).catch(() => undefined);
      return Promise.resolve(entry.tag);
    }
    return joinable ?? this.load(name, entry);
  }

  /**
   * True when this process knows that (name, epoch) no longer serves: the definition read
   * since the last announcement is another epoch, disabled, or gone. While an announced change
   * has not been read yet, it starts that read and answers false.
   */
  changed(name: string, epoch: number): boolean {
    const entry = this.entries.get(name);
    if (!entry?.known) return false;
    if (entry.readAt !== entry.version) {
      // Announced since it was read: read it again (or join the read at this version), and
      // answer from that read on a later call. An announcement alone does not move the
      // counter (an edit that keeps the epoch, or the echo of a change this request already
      // saw), and the requests waiting keep the IDs they hold until it is known to.
      this.get(name).catch(() => undefined);
      return false;
    }
    return entry.tag === undefined || !entry.tag.enabled || entry.tag.epoch !== epoch;
  }

  /**
   * The definition read again from MySQL (not the cached one): the read in flight when it
   * started after the last change known here, else a new one. Requests that found their
   * definition out of date (a tag moving) all share one read; until it is back, nobody is
   * served the cached definition.
   */
  refresh(name: string): Promise<StoredTag | undefined> {
    const entry = this.entries.get(name);
    if (entry?.loading !== undefined && entry.loading.version === entry.version) return entry.loading.promise;
    this.markChanged(name);
    return this.get(name);
  }

  /**
   * Reads the definition. Its result is cached only when no read that started later was
   * cached already (reads may finish out of order); its callers get it either way (they
   * arrived before any later change).
   */
  private load(name: string, entry: Entry): Promise<StoredTag | undefined> {
    const version = entry.version;
    const promise = Promise.all([this.repo.get(name), this.repo.tokenHashes(name)])
      .then(([stored, hashes]) => {
        const tag = stored && { ...stored, tokenHashes: new Set(hashes) };
        if (version >= entry.readAt) {
          entry.tag = tag;
          entry.known = true;
          entry.readAt = version;
          entry.at = Date.now();
          this.noteAbsent(name, tag === undefined);
          this.notify(name, tag);
        }
        return tag;
      })
      .catch((err: Error) => {
        if (entry.known) {
          this.log.warn({ tag: name, err: err.message }, 'MySQL unreachable; serving the last known tag definition');
          // A failed read is not retried before another TAG_CACHE_MS either: until then the
          // last known definition serves, a change announced before this read included.
          if (version >= entry.readAt) {
            entry.readAt = version;
            entry.at = Date.now();
          }
          return entry.tag;
        }
        throw unavailable(`tag definitions cannot be read: ${err.message}`, err);
      })
      .finally(() => {
        if (entry.loading?.promise === promise) entry.loading = undefined;
        // Never read (MySQL unreachable at its first read): not kept, so made-up names sent
        // while MySQL is away leave nothing behind; the next request reads it anew.
        if (!entry.known && entry.loading === undefined && this.entries.get(name) === entry) this.entries.delete(name);
      });
    entry.loading = { version, promise };
    return promise;
  }

  /** Keeps the names of tags that do not exist to maxAbsent, forgetting the oldest read. */
  private noteAbsent(name: string, absent: boolean): void {
    this.absent.delete(name);
    if (!absent) return;
    this.absent.add(name);
    if (this.absent.size <= this.maxAbsent) return;
    const oldest = this.absent.values().next().value as string;
    this.absent.delete(oldest);
    const entry = this.entries.get(oldest);
    if (entry !== undefined && entry.tag === undefined && entry.loading === undefined) this.entries.delete(oldest);
  }

  private notify(name: string, tag: StoredTag | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(name, tag);
      } catch (err) {
        this.log.error({ tag: name, err: (err as Error).message }, 'a listener of tag definitions failed');
      }
    }
  }

  /** Tells every process (this one included) that a tag changed. */
  async announce(name: string): Promise<void> {
    this.markChanged(name);
    await this.publisher.publish(this.keys.tagsChanged(), name).catch((err: Error) => {
      this.log.warn(
        { tag: name, err: err.message },
        'could not announce a tag change; others see it within TAG_CACHE_MS',
      );
    });
  }
}
