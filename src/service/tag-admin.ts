// The write door of the admin side: every change to tags and client tokens (the admin API,
// imports, moves between Redis servers, the demo tag) goes through TagAdmin, which pairs the
// write with its announcement (TagRegistry.announce: every process, this one at once, reads
// the tag again before its next request) and with the Redis clean-up the write needs. Nothing
// above src/service holds a store, so no caller can write and forget to announce.
import type { Logger } from 'pino';
import type { Pool } from 'mysql2/promise';
import { specFromCreate, specFromUpdate } from '../core/tag-spec.js';
import { IdmintError, invalid } from '../errors.js';
import type { StoredTag, TagsRepo } from '../store/mysql/tags-repo.js';
import type { TokenInfo, TokensRepo } from '../store/mysql/tokens-repo.js';
import { DEFAULT_REDIS, type SegmentStore } from '../store/redis/segments.js';
import { Importer, type ImportReport, type ImportRequest } from './importer/importer.js';
import { TagMover, type MoveOptions, type MoveResult } from './tag-mover.js';
import type { TagRegistry } from './tag-registry.js';

export type { StoredTag } from '../store/mysql/tags-repo.js';
export type { ImportReport, ImportRequest } from './importer/importer.js';
export type { MoveOptions, MoveResult } from './tag-mover.js';

export interface TagAdminDeps {
  readonly tags: TagsRepo;
  readonly tokens: TokensRepo;
  readonly segments: SegmentStore;
  readonly registry: TagRegistry;
  /** idmint's own MySQL pool (an import writes tags, floors and tokens in one transaction). */
  readonly pool: Pool;
  readonly log: Logger;
}

/** A client token as created: the secret is in `token`, shown once. */
export type CreatedToken = TokenInfo & { readonly token: string };

export class TagAdmin {
  private readonly importer: Importer;
  private readonly mover: TagMover;

  constructor(private readonly deps: TagAdminDeps) {
    const { tags, segments, pool, log } = deps;
    const announce = (tag: string) => this.announce(tag);
    this.importer = new Importer({ pool, tags, segments, log, announce });
    this.mover = new TagMover({ tags, segments, announce, log });
  }

  /**
   * Creates a tag from the body of a create request (the optional "redis" field names the
   * server that holds its state) and announces it.
   */
  async createTag(body: unknown): Promise<StoredTag> {
    const { redis, rest } = this.redisOf(body);
    const stored = await this.deps.tags.create(specFromCreate(rest), redis);
    await this.announce(stored.tag);
    return stored;
  }

  /**
   * Changes a tag with the fields of an update request; a raised limit lets an exhausted tag
   * serve again (its Redis mark is cleared). Announced.
   */
  async updateTag(name: string, body: unknown): Promise<StoredTag> {
    const current = await this.mustGet(name);
    const stored = await this.deps.tags.update(specFromUpdate(current, body));
    if (BigInt(stored.maxIdLimit) > BigInt(current.maxIdLimit)) {
      await this.deps.segments.clearExhausted(stored.tag, stored.epoch, stored.redis);
    }
    await this.announce(stored.tag);
    return stored;
  }

  /**
   * Deletes a tag, drops its Redis state (a failure to is logged: the state of a deleted
   * incarnation is never served) and announces it.
   */
  async deleteTag(name: string): Promise<StoredTag> {
    const old = await this.deps.tags.remove(name);
    const { segments, log } = this.deps;
    await segments
      .reset(old.tag, old.epoch, old.redis)
      .catch((err: Error) => log.warn({ tag: old.tag, err: err.message }, 'Redis state of a deleted tag left behind'));
    await this.announce(old.tag);
    return old;
  }

  /** Creates a client token of an existing tag and announces it: the tag serves only to tokens from now on. */
  async createToken(tag: string, name: string): Promise<CreatedToken> {
    await this.mustGet(tag);
    const created = await this.deps.tokens.create(tag, name);
    await this.announce(tag);
    return created;
  }

  /** Revokes a live token and announces it: streams opened with it end. NOT_FOUND when there is none. */
  async revokeToken(tag: string, id: number): Promise<void> {
    const revoked = await this.deps.tokens.revoke(tag, id);
    if (!revoked) throw new IdmintError('NOT_FOUND', `tag "${tag}" has no live token ${id}`);
    await this.announce(tag);
  }

  /** Runs an import (src/service/importer): every tag it creates or raises is announced. */
  importTags(request: ImportRequest): Promise<ImportReport> {
    return this.importer.run(request);
  }

  /** Moves a tag to another named Redis server (src/service/tag-mover.ts), announced there. */
  moveTag(name: string, to: string, opts: MoveOptions = {}): Promise<MoveResult> {
    return this.mover.move(name, to, opts);
  }

  /** Creates the quickstart demo tag unless a tag of that name exists. */
  async ensureTag(body: { readonly tag: string } & Record<string, unknown>): Promise<boolean> {
    try {
      await this.createTag(body);
      return true;
    } catch (err) {
      if (err instanceof IdmintError && err.code === 'TAG_EXISTS') return false;
      throw err;
    }
  }

  private announce(tag: string): Promise<void> {
    return this.deps.registry.announce(tag);
  }

  private async mustGet(name: string): Promise<StoredTag> {
    const tag = await this.deps.tags.get(name);
    if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    return tag;
  }

  /** The optional "redis" field of a create body: which named server holds the tag's state. */
  private redisOf(body: unknown): { redis: string; rest: unknown } {
    const named = body !== null && typeof body === 'object' && !Array.isArray(body) && 'redis' in body;
    if (!named) return { redis: DEFAULT_REDIS, rest: body };
    const { redis, ...rest } = body as Record<string, unknown>;
    const { segments } = this.deps;
    if (typeof redis !== 'string' || !segments.has(redis)) {
      const names = segments
        .names()
        .map((n) => `"${n}"`)
        .join(', ');
      throw invalid(`redis must name a configured Redis server: ${names} (REDIS_URLS)`);
    }
    if (redis !== DEFAULT_REDIS && (rest as { mode?: unknown }).mode === 'snowflake') {
      throw invalid('snowflake tags keep no state of their own in Redis: leave out redis');
    }
    return { redis, rest };
  }
}
