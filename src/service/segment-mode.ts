// Segment tags (and the counters of rules): counter runs taken from the tag's source of
// (epoch, shard, scope), following the tag when it moves to another Redis server.
import { packId, seqString } from '../core/layout.js';
import type { Range } from '../core/ranges.js';
import { IdmintError } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { TagMovedError } from './coalescer.js';
import { shardFor } from './id-options.js';
import type { SourceCache } from './sources.js';
import type { TagRegistry } from './tag-registry.js';

/** The definition a request is served under: the tag exists and is enabled; else a coded error. */
export function servable(name: string, tag: StoredTag | undefined): StoredTag {
  if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
  return enabled(name, tag);
}

/** The tag, unless an operator disabled it (TAG_DISABLED). */
export function enabled(name: string, tag: StoredTag): StoredTag {
  if (!tag.enabled) throw new IdmintError('TAG_DISABLED', `tag "${name}" is disabled`);
  return tag;
}

/** Counter runs of a segment tag, with the definition and shard they were taken under. */
export interface Issued {
  readonly tag: StoredTag;
  readonly shard: number;
  readonly runs: Range[];
}

export class SegmentMode {
  constructor(
    private readonly registry: TagRegistry,
    private readonly sources: SourceCache,
    /** How long a request follows a tag that is moving (REFILL_WAIT_MS). */
    private readonly waitMs: number,
    /** What retired a tag's state of its epoch and did not finish (an import stopped midway), if anything. */
    private readonly retiredBy: (tag: StoredTag) => Promise<string | undefined> = async () => undefined,
  ) {}

  /**
   * count counter values of the tag, following it when it moves to another Redis: the old
   * state answers "moved", and the request continues under the definition MySQL holds now (a
   * new epoch on the new server), waiting at most REFILL_WAIT_MS for the move to be recorded.
   * `direct`: straight from Redis even for an `order: node` tag, not through this process's
   * block (for a block a client holds itself, as a process does: one take, runs only where a
   * segment ends).
   */
  async take(tag: StoredTag, count: number, key: string | undefined, scope = '', direct = false): Promise<Issued> {
    const deadline = Date.now() + this.waitMs;
    for (let attempt = 1; ; attempt++) {
      let moved: boolean;
      try {
        return await this.takeFrom(tag, count, key, scope, direct);
      } catch (err) {
        if (!(err instanceof TagMovedError)) throw err;
        if (Date.now() >= deadline) throw err.moved ? await this.stuck(tag) : err;
        moved = err.moved;
      }
      for (;;) {
        const now = servable(tag.tag, await this.registry.refresh(tag.tag));
        // A new epoch (moved, re-created), or any other change: continue under it at once.
        if (now.epoch !== tag.epoch || !moved) {
          tag = now;
          break;
        }
        if (Date.now() >= deadline) throw await this.stuck(tag);
        await new Promise((r) => setTimeout(r, Math.min(10 * attempt, 50)));
      }
    }
  }

  /** The answer for a tag whose state stays retired under an unchanged epoch: what left it so, when known. */
  private async stuck(tag: StoredTag): Promise<TagMovedError> {
    return new TagMovedError(tag.tag, true, await this.retiredBy(tag).catch(() => undefined));
  }

  private async takeFrom(
    tag: StoredTag,
    count: number,
    key: string | undefined,
    scope: string,
    direct: boolean,
  ): Promise<Issued> {
    const shard = shardFor(tag, key);
    const tagSources = this.sources.of(tag);
    const src = this.sources.segment(tagSources, shard, scope);
    // A request of an epoch already replaced takes straight from its source (no block of its own).
    const runs =
      tag.order === 'node' && !direct && !tagSources.detached
        ? await this.sources.buffer(tagSources, src).take(count)
        : await src.coalescer.take(count);
    return { tag, shard, runs };
  }
}

/** Decimal strings of the IDs of counter runs, per the tag's interleave and layout. */
export function formatIds(issued: Issued): string[] {
  const out: string[] = [];
  const { tag, shard } = issued;
  for (const [first, last] of issued.runs) {
    for (let v = first; v <= last; v++)
      out.push(tag.layout === 'plain' ? seqString(tag, v) : packId(tag, v, shard).toString());
  }
  return out;
}
