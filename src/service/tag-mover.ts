// Moving a tag to another named Redis server with no duplicate and no step back: retire the
// tag's state on the old server first (takes there answer "moved", installs are refused, for
// existing and future hashes alike), then record the new server under a new epoch in MySQL
// and announce it. Requests in flight follow the tag (the dispenser reads the definition
// again); the new server starts cold, from MySQL's high-water mark, above every ID ever
// allocated on the old one.
import type { Logger } from 'pino';
import { IdmintError, invalid } from '../errors.js';
import type { StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import type { SegmentStore } from '../store/redis/segments.js';

export interface MoveResult {
  readonly tag: string;
  readonly from: string;
  readonly to: string;
  /** False when the tag already lived on `to`. */
  readonly moved: boolean;
  /** The tag's epoch after the move. */
  readonly epoch: number;
  /** From retiring the old state to announcing the new server: the longest a request waited. */
  readonly pausedMs: number;
}

export interface MoveOptions {
  /**
   * Move even when the old server is unreachable, so its state cannot be retired. Only for a
   * server that will never come back with this data: if it did, processes that have not yet
   * seen the move could serve IDs from it that are lower than ones the new server gave out.
   */
  readonly force?: boolean;
}

export class TagMover {
  constructor(
    private readonly deps: {
      tags: TagsRepo;
      segments: SegmentStore;
      /** Tells every process (this one at once) that the tag changed: the door's (tag-admin.ts). */
      announce: (tag: string) => Promise<void>;
      log: Logger;
    },
  ) {}

  async move(name: string, to: string, opts: MoveOptions = {}): Promise<MoveResult> {
    const { tags, segments, announce, log } = this.deps;
    const tag = await tags.get(name);
    if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    if (tag.mode === 'snowflake') {
      throw invalid(
        `tag "${name}" is a snowflake tag: it keeps no state of its own in Redis (its worker-id leases live on the default Redis), so there is nothing to move`,
      );
    }
    if (!segments.has(to))
      throw invalid(
        `no Redis server is named "${to}"; this process knows ${segments
          .names()
          .map((n) => `"${n}"`)
          .join(', ')} (REDIS_URLS)`,
      );
    if (tag.redis === to) return { tag: name, from: to, to, moved: false, epoch: tag.epoch, pausedMs: 0 };
    await segments
      .connection(to)
      .ping()
      .catch((err: Error) => {
        throw new IdmintError('UNAVAILABLE', `the target Redis "${to}" is unreachable: ${err.message}`, { cause: err });
      });

    const from = tag.redis;
    const start = performance.now();
    let retired = true;
    const by = `a move to Redis "${to}" (started ${new Date().toISOString()}) that retired the tag's state on "${from}" and has not recorded the move in MySQL; if that move is no longer running, finish it by moving the tag again: POST /v1/admin/tags/${name}/migrate {"to":"${to}"}`;
    await segments.retire(name, tag.epoch, from, by).catch((err: Error) => {
      if (!opts.force) {
        throw new IdmintError(
          'UNAVAILABLE',
          `the tag's current Redis "${from}" is unreachable, so its state cannot be retired (${err.message}); retry once it is back, or pass "force": true if it will never come back with this data`,
          { cause: err },
        );
      }
      retired = false;
      log.warn(
        { tag: name, from, err: err.message },
        'moving a tag without retiring its state on an unreachable Redis (force)',
      );
    });
    let recorded: boolean;
    try {
      recorded = await tags.move(name, tag.epoch, to);
    } catch (err) {
      if (retired) await this.undoRetire(tag);
      throw err;
    }
    if (!recorded) {
      if (retired) await this.undoRetire(tag);
      throw new IdmintError(
        'CONFLICT',
        `tag "${name}" changed while it was being moved (deleted, re-created or moved by another request); read it again and retry`,
      );
    }
    await announce(name);
    const pausedMs = Math.round(performance.now() - start);
    log.info({ tag: name, from, to, epoch: tag.epoch + 1, pausedMs, retired }, 'tag moved to another Redis');
    // The old state is never read again (the marker stays); drop it.
    if (retired) {
      void segments
        .reset(name, tag.epoch, from)
        .then(() => segments.forgetRetiredBy(name, tag.epoch, from))
        .catch((err: Error) =>
          log.warn({ tag: name, from, err: err.message }, 'Redis state of a moved tag left behind'),
        );
    }
    return { tag: name, from, to, moved: true, epoch: tag.epoch + 1, pausedMs };
  }

  /**
   * The move was not recorded: serve from the old server again, but only when MySQL confirms
   * the tag still has its old epoch (a commit whose answer was lost must stay retired).
   */
  private async undoRetire(tag: StoredTag): Promise<void> {
    const now = await this.deps.tags.get(tag.tag).catch(() => undefined);
    if (now && now.epoch === tag.epoch) {
      await this.deps.segments.unretire(tag.tag, tag.epoch, tag.redis).catch(() => undefined);
    } else {
      this.deps.log.warn(
        { tag: tag.tag, from: tag.redis },
        'tag left retired on its old Redis: the move may or may not have been recorded; move it again',
      );
    }
  }
}
