// Issues IDs of every mode, for every transport, through one door: issue(request), where the
// request names the tag, how many IDs and in what shape (issue-request.ts). It answers from
// memory at once when it can (an `order: node` block or rule counter at hand, a snowflake
// lease and clock that allow an ID now) and with a promise otherwise. Token and option checks
// happen here, once, before anything is taken; the source of the tag's kind (mode-sources.ts,
// chosen when its sources are made) issues. Behind it the tag registry (definitions) and one
// cache of sources (sources.ts), warmed whenever the registry reads a definition. Issued IDs
// are counted here, in count(), and nowhere else. What a request may read without issuing
// (definitions, monitor counters) is the read side, `reads` (id-reads.ts).
import { fingerprintOf } from '../core/idempotency-key.js';
import { invalid, unavailable } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { admit } from './client-tokens.js';
import type { CoalescerDeps } from './coalescer.js';
import { IdReads } from './id-reads.js';
import type { IdempotencyKeys } from './idempotency.js';
import {
  carries,
  checkRequest,
  countOf,
  type HeldRequest,
  type IdsRequest,
  type IssueRequest,
  type OneRequest,
  type RunsRequest,
} from './issue-request.js';
import { modeSources, type ModeDeps } from './mode-sources.js';
import { RuleTemplates } from './rule-mode.js';
import { enabled, SegmentMode, type Issued } from './segment-mode.js';
import type { ClockEvents } from './snowflake-generator.js';
import { PeriodWarmer } from './period-warmer.js';
import { SourceCache, type SnowflakeDeps, type TagSources } from './sources.js';
import { kindOf } from './tag-kinds.js';
import type { TagRegistry } from './tag-registry.js';

export type { IdOptions } from './id-options.js';
export type { Accepts, HeldRequest, IdsRequest, IssueRequest, OneRequest, RunsRequest } from './issue-request.js';
export type { Issued } from './segment-mode.js';
export type { SnowflakeDeps } from './sources.js';
export type { IdReads } from './id-reads.js';
export type { Decoded } from './tag-kinds.js';

/** How much a request without a valid token learns about a tag that has tokens. */
export interface Exposure {
  /**
   * REVEAL_PROTECTED_TAGS: UNAUTHORIZED for a protected tag, TAG_NOT_FOUND only for a missing one; else one answer for
   * both.
   */
  readonly revealProtected: boolean;
}

const first = (ids: string[]): string => ids[0];

/** Requests for single IDs or lists (not a bulk take's draws) this process was asked, by every transport. */
let singlesAsked = 0;

/**
 * How many requests for single IDs or lists this process was asked so far: the bulk takes' turns (api/bulk-turns.ts)
 * yield more of the process while it changes.
 */
export function singlesAskedSoFar(): number {
  return singlesAsked;
}

export class IdService {
  /** What a request may read without issuing. */
  readonly reads: IdReads;
  /** Warms rule scopes of the next period before it starts (started by the runtime). */
  readonly periods: PeriodWarmer;
  private readonly sources: SourceCache;
  private readonly segments: SegmentMode;
  private readonly modes: ModeDeps;

  constructor(
    private readonly registry: TagRegistry,
    deps: CoalescerDeps,
    snowflake: SnowflakeDeps,
    private readonly exposure: Exposure = { revealProtected: false },
    /** Keeps the answers of requests with an idempotency key; without it such requests are refused. */
    private readonly idempotency?: IdempotencyKeys,
  ) {
    const kindOf = (tag: StoredTag) => modeOf(tag);
    this.sources = new SourceCache(
      { ...deps, changed: (tag, epoch) => registry.changed(tag, epoch) },
      snowflake,
      kindOf,
    );
    this.segments = new SegmentMode(registry, this.sources, deps.waitMs, (t) =>
      deps.segments.retiredBy(t.tag, t.epoch, t.redis),
    );
    this.modes = {
      segments: this.segments,
      sources: this.sources,
      templates: new RuleTemplates(),
      clock: snowflake.clock,
      count: (tag, n, s) => this.count(tag, n, s),
      issueAgain: (tag, opts) => this.issueFromSource({ ...opts, tag, as: 'ids', count: 1 }).then(first),
    };
    const modeOf = modeSources(this.modes);
    this.reads = new IdReads(registry, this.sources, deps.segments, snowflake.clock, exposure.revealProtected);
    this.periods = new PeriodWarmer({ ...deps, sources: this.sources, clock: snowflake.clock });
    registry.onLoad((name, tag) => this.sources.loaded(name, tag));
  }

  /** Clock events of all snowflake generators of this process. */
  get clockEvents(): ClockEvents {
    return this.sources.clockEvents;
  }

  /**
   * The one door for issuing. A refusal decided from memory (a token missing, options that do
   * not fit the tag) is thrown at once; anything else rejects the promise.
   * - `one`: one ID, at once when memory can answer, else a promise; with `stepAside`,
   *   undefined instead of the full way (nothing taken then);
   * - `ids`: count IDs as strings in issue order (at once for one ID from memory);
   * - `runs`: count IDs of a segment tag as counter runs (this process's block for `order: node`);
   * - `held`: a block for a client to hold, straight from the store (`order: node` only).
   */
  issue(req: OneRequest & { stepAside: true }): string | Promise<string> | undefined;
  issue(req: OneRequest): string | Promise<string>;
  issue(req: IdsRequest): string[] | Promise<string[]>;
  issue(req: RunsRequest | HeldRequest): Promise<Issued>;
  issue(req: IssueRequest): string | string[] | Promise<string | string[] | Issued> | undefined {
    if (req.as === 'one' || (req.as === 'ids' && req.bulk !== true)) singlesAsked++;
    if (req.idempotencyKey !== undefined && (req.as === 'one' || req.as === 'ids')) {
      // Kept answers live in the tag's Redis: never from memory, never on the pre-router path.
      if (req.as === 'ids') return this.issueKeyed(req);
      return req.stepAside === true ? undefined : this.issueKeyed(req).then(first);
    }
    switch (req.as) {
      case 'one': {
        const got = this.issueFromMemory(req);
        return got !== undefined || req.stepAside === true ? got : this.issueFromSource(req).then(first);
      }
      case 'ids': {
        if (req.count === 1) {
          const got = this.issueFromMemory(req);
          if (got !== undefined) return typeof got === 'string' ? [got] : got.then((id) => [id]);
        }
        return this.issueFromSource(req);
      }
      default:
        return this.issueRuns(req);
    }
  }

  /**
   * The checks issue() makes before taking anything, alone: the definition `req` is served
   * under, for a caller that issues in several requests of that shape (bulk takes).
   */
  async prepare(req: IssueRequest): Promise<StoredTag> {
    const tag = await this.reads.access(req.tag, req.token);
    checkRequest(tag, req);
    return tag;
  }

  /**
   * Before each block of a running take: the token still opens the tag, or the exposure
   * policy's refusal is thrown (a revoked token ends the take before its next block). From
   * memory while the cached definition is current (a revocation announced in this process, or
   * heard from another, makes it not current), else read anew.
   */
  recheck(name: string, token: string | undefined): void | Promise<unknown> {
    const tag = this.registry.peek(name);
    if (tag === undefined) return this.reads.access(name, token);
    this.admitted(name, tag, token);
  }

  /** One ID from memory (undefined: the full way must answer), for a request of no particular caller. */
  private issueFromMemory(req: OneRequest | IdsRequest): string | Promise<string> | undefined {
    const tag = this.registry.peek(req.tag);
    if (tag === undefined || !tag.enabled || !carries(tag, req.accepts)) return undefined;
    const tagSources = this.sources.current(tag);
    if (tagSources === undefined) return undefined;
    this.admitted(req.tag, tag, req.token);
    return tagSources.mode.one(tag, tagSources, req);
  }

  /** The full way: the definition read, checked and issued from by its kind's source. */
  private async issueFromSource(req: OneRequest | IdsRequest): Promise<string[]> {
    const tag = await this.prepare(req);
    const count = countOf(req, tag);
    return count <= 0 ? [] : this.fromSource(tag, count, req);
  }

  /** `count` IDs (at least 1) of a checked definition, from the source of its kind, counted. */
  private async fromSource(tag: StoredTag, count: number, req: OneRequest | IdsRequest): Promise<string[]> {
    const out = await this.sources.of(tag).mode.ids(tag, count, req);
    this.count(tag, out.length);
    return out;
  }

  /**
   * A request with an idempotency key: the token and the options are checked first (a caller
   * that may not use the tag never sees a kept answer), then the key's answer is the IDs taken
   * now or the one kept before; the tag must be enabled only for taking, so a kept answer is
   * still given for a tag disabled since (idempotency.ts).
   */
  private async issueKeyed(req: OneRequest | IdsRequest): Promise<string[]> {
    const key = req.idempotencyKey as string;
    const tag = this.admitted(req.tag, await this.registry.get(req.tag), req.token);
    checkRequest(tag, req);
    if (this.idempotency === undefined)
      throw unavailable('this process keeps no idempotency keys; retry without the key');
    const count = countOf(req, tag);
    const fingerprint = fingerprintOf({ count, shape: req.as, key: req.key, ...kindOf(tag).keyedInput(req) });
    // A disabled tag takes nothing (the claim path refuses it after finding no kept answer).
    const inKey = tag.enabled ? this.sources.of(tag).mode.inKey?.(tag) : undefined;
    return this.idempotency.issue(
      tag,
      key,
      fingerprint,
      count,
      async () => this.fromSource(enabled(req.tag, tag), count, req),
      inKey && { ...inKey, taken: (ids) => this.count(tag, ids.length) },
    );
  }

  private async issueRuns(req: RunsRequest | HeldRequest): Promise<Issued> {
    const tag = await this.prepare(req);
    const count = countOf(req, tag);
    if (count <= 0) throw invalid(`count must be at least 1, not ${count}`);
    const issued = await this.segments.take(tag, count, req.key, '', req.as === 'held');
    this.count(tag, count);
    return issued;
  }

  /** The tag, if the token may use it; else the exposure policy's refusal (client-tokens.ts). */
  private admitted(name: string, tag: StoredTag | undefined, token: string | undefined): StoredTag {
    return admit(name, tag, token, this.exposure.revealProtected);
  }

  /** Counts issued IDs (idmint_ids_issued_total): the one place that does. */
  private count(tag: StoredTag, amount: number, tagSources?: TagSources): void {
    // The sources of the cached definition hold the counter of its mode.
    const counter = tagSources !== undefined ? tagSources.issued : this.sources.issuedOf(tag);
    if (counter !== undefined) counter.value += amount;
  }
}
