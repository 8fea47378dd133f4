// Every process's view of the tag definitions. A definition is re-read from MySQL when it is
// older than TAG_CACHE_MS, and at once when any process announces a change on Redis pub/sub,
// so a tag created or changed anywhere is served everywhere within a second. While MySQL is
// unreachable the last known definition keeps serving (IDs still come from Redis).
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { unavailable } from '../errors.js';
import type { StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import type { Keys } from '../store/redis/keys.js';

interface Entry {
  tag: StoredTag | undefined;
  at: number;
  loading?: Promise<StoredTag | undefined>;
}

export class TagRegistry {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly repo: TagsRepo,
    private readonly publisher: Redis,
    private readonly keys: Keys,
    private readonly maxAgeMs: number,
    private readonly log: Logger,
  ) {}

  /** Starts listening for change announcements on a dedicated subscriber connection. */
  async listen(subscriber: Redis): Promise<void> {
    const channel = this.keys.tagsChanged();
    subscriber.on('message', (ch: string, tag: string) => {
      if (ch === channel) this.entries.delete(tag);
    });
    // Announcements may have been missed while disconnected: forget everything on reconnect.
    subscriber.on('ready', () => this.entries.clear());
    await subscriber.subscribe(channel);
  }

  async get(name: string): Promise<StoredTag | undefined> {
    const e = this.entries.get(name);
    if (e && Date.now() - e.at < this.maxAgeMs) return e.tag;
    if (e?.loading) return e.loading;
    const entry: Entry = e ?? { tag: undefined, at: 0 };
    entry.loading = this.repo
      .get(name)
      .then((tag) => {
        entry.tag = tag;
        entry.at = Date.now();
        return tag;
      })
      .catch((err: Error) => {
        if (entry.at > 0) {
          this.log.warn({ tag: name, err: err.message }, 'MySQL unreachable; serving the last known tag definition');
          return entry.tag;
        }
        throw unavailable(`tag definitions cannot be read: ${err.message}`, err);
      })
      .finally(() => {
        entry.loading = undefined;
      });
    this.entries.set(name, entry);
    return entry.loading;
  }

  /** Tells every process (this one included) that a tag changed. */
  async announce(name: string): Promise<void> {
    this.entries.delete(name);
    await this.publisher.publish(this.keys.tagsChanged(), name).catch((err: Error) => {
      this.log.warn({ tag: name, err: err.message }, 'could not announce a tag change; others see it within TAG_CACHE_MS');
    });
  }
}
