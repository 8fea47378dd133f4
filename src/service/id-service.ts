// Issues IDs of every mode, for every transport: one entry point, issue(tag, count, options),
// answers from memory at once when it can (an `order: node` block or rule counter at hand, a
// snowflake lease and clock that allow an ID now) and with a promise otherwise. Behind it the
// tag registry (definitions) and one cache of sources (sources.ts), warmed whenever the
// registry reads a definition. Issued IDs are counted here, in count(), and nowhere else.
import { counterAt } from '../core/rule-spec.js';
import { seqString } from '../core/layout.js';
import { invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { admit } from './client-tokens.js';
import { TagMovedError, type Coalescer, type CoalescerDeps } from './coalescer.js';
import { checkOptions, hasRuleInput, NO_OPTIONS, ruleInput, type IdOptions } from './id-options.js';
import { RuleTemplates, scopeOf } from './rule-mode.js';
import { enabled, formatIds, SegmentMode, servable, type Issued } from './segment-mode.js';
import type { ClockEvents } from './snowflake-generator.js';
import { SourceCache, sourceKey, type SnowflakeDeps, type TagSources } from './sources.js';
import type { TagRegistry } from './tag-registry.js';

export type { IdOptions } from './id-options.js';
export type { Issued } from './segment-mode.js';
export type { SnowflakeDeps } from './sources.js';

/** How much a request without a valid token learns about a tag that has tokens. */
export interface Exposure {
  /** REVEAL_PROTECTED_TAGS: UNAUTHORIZED for a protected tag, TAG_NOT_FOUND only for a missing one; else one answer for both. */
  readonly revealProtected: boolean;
}

const inArray = (id: string): string[] => [id];
const FROM_BLOCK = { from: 'block' } as const;
const alone = (id: string): string => id;

export class IdService {
  private readonly sources: SourceCache;
  private readonly segments: SegmentMode;
  private readonly templates = new RuleTemplates();

  constructor(
    private readonly registry: TagRegistry,
    deps: CoalescerDeps,
    private readonly snowflake: SnowflakeDeps,
    private readonly exposure: Exposure = { revealProtected: false },
  ) {
    this.sources = new SourceCache({ ...deps, changed: (tag, epoch) => registry.changed(tag, epoch) }, snowflake);
    this.segments = new SegmentMode(registry, this.sources, deps.waitMs);
    registry.onLoad((name, tag) => this.sources.loaded(name, tag));
  }

  /** Clock events of all snowflake generators of this process. */
  get clockEvents(): ClockEvents {
    return this.sources.clockEvents;
  }

  /**
   * count IDs of any mode, as strings, in issue order: the array at once when they can be given
   * from memory, else a promise of it. A refusal decided from memory (a token missing, options
   * that do not fit the tag) is thrown at once; anything else rejects the promise.
   */
  issue(name: string, count: number, opts: IdOptions = NO_OPTIONS): string[] | Promise<string[]> {
    return (count === 1 ? this.memory(name, opts, inArray) : undefined) ?? this.issueLater(name, count, opts);
  }

  /**
   * issue()'s first step for one ID, for a caller that steps aside rather than wait (the
   * pre-router path): what issue() answers when this process holds the tag's definition and
   * sources, at once or through an `order: global` tag's coalescer (a segment tag's, or the
   * counter of a rule's app and period; one promise);
   * undefined, having taken nothing, when anything needs the full path (a definition to read,
   * a block to fill, a lease to take up, a tick to wait for, a key).
   */
  issueFromMemory(name: string, opts: IdOptions = NO_OPTIONS): string | Promise<string> | undefined {
    return this.memory(name, opts, alone);
  }

  /**
   * The definition a request for `name` is served under: the tag exists and is enabled; with
   * `opts`, also the token opens it (checked before anything else about the tag is told, as
   * access() does) and the options fit its mode. Else a coded error.
   */
  async resolve(name: string, opts?: IdOptions): Promise<StoredTag> {
    if (opts === undefined) return servable(name, await this.registry.get(name));
    const tag = await this.access(name, opts.token);
    checkOptions(tag, opts);
    return tag;
  }

  /**
   * The definition of `name` for a request carrying `token`: the tag exists, the token opens
   * it, and it is enabled, checked in that order, so a request without a valid token is told
   * nothing else about a protected tag (client-tokens.ts: the exposure policy). Else a coded error.
   */
  async access(name: string, token: string | undefined): Promise<StoredTag> {
    return enabled(name, this.admitted(name, await this.registry.get(name), token));
  }

  /**
   * count IDs of a segment tag as ascending runs of counter values (the bulk take of streams
   * and Tinyid's segments), from this process's block for an `order: node` tag, or, with
   * `from: 'store'`, straight from Redis (for a block a client holds itself, as a process does).
   */
  async takeRuns(name: string, count: number, opts: IdOptions = NO_OPTIONS, where: { from: 'block' | 'store' } = FROM_BLOCK): Promise<Issued> {
    const tag = await this.access(name, opts.token);
    if (tag.mode !== 'segment') throw invalid(`tag "${name}" is a ${tag.mode} tag, not a segment tag`);
    const issued = await this.segments.take(tag, count, opts.key, '', where.from === 'store');
    this.count(tag, count);
    return issued;
  }

  /** The epoch whose sources are cached for a tag, and how many segment sources it has (tests, debugging). */
  cachedSources(name: string): { epoch: number; segments: number } | undefined {
    return this.sources.size(name);
  }

  /**
   * id_server's monitor: the last counter value handed out in the current period (-1: none yet):
   * by any process for `order: global`; by this process for `order: node`, whose other processes
   * hand out from blocks of their own (as each id_server node has its own counter).
   */
  async monitor(name: string, app: string | undefined, token?: string): Promise<{ counter: number }> {
    const tag = await this.access(name, token);
    if (!tag.rule) throw invalid(`monitor applies to rule tags; "${name}" is a ${tag.mode} tag`);
    const { app: appName } = ruleInput(tag, { app });
    const scope = scopeOf(tag, appName, this.snowflake.clock.now());
    let handedOut: number;
    if (tag.order === 'node') handedOut = this.sources.lastFromBlock(tag, scope) ?? 0;
    else {
      const st = await this.sources.stats(tag, scope);
      handedOut = st.cur === undefined ? 0 : st.cur - 1;
    }
    return { counter: handedOut > 0 ? counterAt(tag.rule, tag, handedOut) : -1 };
  }

  /** One ID from memory, shaped as the caller needs it (no array for the pre-router path). */
  private memory<T>(name: string, opts: IdOptions, shape: (id: string) => T): T | Promise<T> | undefined {
    const tag = this.registry.peek(name);
    if (tag === undefined || !tag.enabled) return undefined;
    const s = this.sources.current(tag);
    return s === undefined ? undefined : this.fromMemory(name, tag, s, opts, shape);
  }

  private fromMemory<T>(name: string, tag: StoredTag, s: TagSources, opts: IdOptions, shape: (id: string) => T): T | Promise<T> | undefined {
    if (tag.rule) {
      if (opts.key !== undefined) return undefined;
      this.admitted(name, tag, opts.token);
      const { app, salt } = ruleInput(tag, opts);
      // One moment decides both the period (whose counter is used) and the time tokens.
      const now = this.snowflake.clock.now();
      const src = s.segments.get(sourceKey(0, scopeOf(tag, app, now)));
      if (src === undefined) return undefined;
      src.lastUsed = Date.now();
      if (tag.order !== 'node') {
        return this.throughCoalescer(tag, s, src.coalescer, opts, (v) => this.templates.renderOne(tag, v, app, salt, now), shape);
      }
      const v = src.buffer?.takeOneNow();
      if (v === undefined) return undefined;
      this.count(tag, 1, s);
      return shape(this.templates.renderOne(tag, v, app, salt, now));
    }
    if (opts.key !== undefined || hasRuleInput(tag, opts)) return undefined;
    if (tag.mode === 'snowflake') {
      if (s.generator === undefined) return undefined;
      this.admitted(name, tag, opts.token);
      const id = s.generator.takeOneNow();
      if (id === undefined) return undefined;
      this.count(tag, 1, s);
      return shape(String(id));
    }
    const src = s.plain;
    if (src === undefined) return undefined;
    this.admitted(name, tag, opts.token);
    if (tag.order === 'node') {
      const v = src.buffer?.takeOneNow();
      if (v === undefined) return undefined;
      this.count(tag, 1, s);
      return shape(seqString(tag, v));
    }
    return this.throughCoalescer(tag, s, src.coalescer, opts, (v) => seqString(tag, v), shape);
  }

  /** One ID of an `order: global` tag from its coalescer: `render` makes the ID of its counter value. */
  private throughCoalescer<T>(
    tag: StoredTag,
    s: TagSources,
    coalescer: Coalescer,
    opts: IdOptions,
    render: (v: number) => string,
    shape: (id: string) => T,
  ): Promise<T> {
    return coalescer.take(1).then(
      (runs) => {
        this.count(tag, 1, s);
        return shape(render(runs[0][0]));
      },
      // The tag moved to another Redis: the full path follows it.
      (err: unknown) => (err instanceof TagMovedError ? this.issueLater(tag.tag, 1, opts).then((ids) => shape(ids[0])) : Promise.reject(err)),
    );
  }

  private async issueLater(name: string, count: number, opts: IdOptions): Promise<string[]> {
    const tag = await this.resolve(name, opts);
    let out: string[];
    if (tag.rule) {
      const { app, salt } = ruleInput(tag, opts);
      // One moment decides both the period (whose counter is used) and the time tokens.
      const now = this.snowflake.clock.now();
      const issued = await this.segments.take(tag, count, undefined, scopeOf(tag, app, now));
      out = this.templates.renderRuns(tag, issued.runs, app, salt, now);
    } else if (tag.mode === 'snowflake') {
      out = (await this.sources.generatorOf(tag).take(count)).map(String);
    } else {
      out = formatIds(await this.segments.take(tag, count, opts.key));
    }
    this.count(tag, out.length);
    return out;
  }

  /** The tag, if the token may use it; else the exposure policy's refusal (client-tokens.ts). */
  private admitted(name: string, tag: StoredTag | undefined, token: string | undefined): StoredTag {
    return admit(name, tag, token, this.exposure.revealProtected);
  }

  /** Counts issued IDs (idmint_ids_issued_total): the one place that does. */
  private count(tag: StoredTag, n: number, s?: TagSources): void {
    // The sources of the cached definition hold the counter of its mode.
    const c = s !== undefined ? s.issued : this.sources.issuedOf(tag);
    if (c !== undefined) c.value += n;
  }
}
