// One source per kind of tag behind one interface, chosen once from the definition when its
// sources are made (modeSources): a segment tag with `order: global` issues through its
// coalescer, one with `order: node` from this process's block, a rule through the counter of
// its (app, period) scope and its template, a snowflake tag from its generator. Each makes
// what a first request needs at hand when a definition is read (warm()), answers one ID from
// memory when it can (one()) and any count the full way (ids()), for a definition the door
// (id-service.ts) has resolved and checked. What else differs per kind (decoding, bulk
// formats, the admin view) is beside these, in tag-kinds.ts.
import type { Clock } from '../core/clock.js';
import { seqString } from '../core/layout.js';
import type { StoredOf, StoredTag } from '../store/mysql/tags-repo.js';
import type { Range } from '../core/ranges.js';
import { TagMovedError } from './coalescer.js';
import type { RunsMapper } from './mapped-sink.js';
import { ruleInput, strayRuleInput, type IdOptions } from './id-options.js';
import { scopeOf, type RuleTemplates } from './rule-mode.js';
import type { TakeInKey } from './idempotency.js';
import { formatIds, type SegmentMode } from './segment-mode.js';
import { sourceKey, type SegmentSource, type SourceCache, type TagSources } from './sources.js';

export interface ModeDeps {
  readonly segments: SegmentMode;
  readonly sources: SourceCache;
  readonly templates: RuleTemplates;
  readonly clock: Clock;
  /** Counts issued IDs (idmint_ids_issued_total): the door's count(). */
  readonly count: (tag: StoredTag, amount: number, sources?: TagSources) => void;
  /** The full way for one ID, when a tag moved under a coalescer's take: the door resolves it again. */
  readonly issueAgain: (tag: string, opts: IdOptions) => Promise<string>;
}

export interface ModeSource<T extends StoredTag = StoredTag> {
  /**
   * One ID of the cached definition `tag` (whose sources are `sources`, its token admitted): at once
   * from memory, or a promise through an `order: global` coalescer; undefined, having taken
   * nothing, when only the full way can answer (a block to fill, a lease to take up, a tick to
   * wait for, options memory does not check).
   */
  one(tag: T, sources: TagSources, opts: IdOptions): string | Promise<string> | undefined;
  /** count IDs (at least 1) in issue order, for a resolved and checked definition. */
  ids(tag: T, count: number, opts: IdOptions): Promise<string[]>;
  /**
   * Where a keyed request's IDs may be taken in its key's own Redis call (idempotency.ts): the
   * counter and the arithmetic of its IDs; undefined when they are taken otherwise (from
   * memory, or formatted beyond k * stride + offset).
   */
  inKey?(tag: T): Omit<TakeInKey, 'taken'> | undefined;
  /**
   * Makes what the first request for the enabled definition `tag` needs at hand in its new
   * `sources` (sources.ts), when anything: the rest is made on first use.
   */
  warm?(tag: T, sources: TagSources): void;
}

/**
 * The source of a definition's kind, decided once per definition (the four are made once). A
 * source is called with the definition it was chosen for, or one of the same epoch, whose kind
 * is the same (a tag's mode never changes within an epoch: tag-spec.ts refuses the change, and
 * re-creating the tag starts a new epoch).
 */
export function modeSources(deps: ModeDeps): (tag: StoredTag) => ModeSource {
  const kinds = { rule: rule(deps), snowflake: snowflake(deps), node: segmentNode(deps), global: segmentGlobal(deps) };
  return (tag) => {
    switch (tag.mode) {
      case 'rule':
        return kinds.rule;
      case 'snowflake':
        return kinds.snowflake;
      case 'segment':
        return tag.order === 'node' ? kinds.node : kinds.global;
    }
  };
}

/**
 * One ID of an `order: global` tag from its coalescer's runs: counted and rendered (render); a
 * tag that moved to another Redis under the take is followed the full way. One object per
 * request, no function made for it.
 */
abstract class OneOfCoalescer<T extends StoredTag> implements RunsMapper<string> {
  constructor(
    protected readonly deps: ModeDeps,
    protected readonly tag: T,
    private readonly sources: TagSources,
    private readonly opts: IdOptions,
  ) {}

  /** The ID of a counter value. */
  protected abstract render(counter: number): string;

  map(runs: Range[]): string {
    this.deps.count(this.tag, 1, this.sources);
    return this.render(runs[0][0]);
  }

  recover(err: Error): Promise<string> {
    if (err instanceof TagMovedError) return this.deps.issueAgain(this.tag.tag, this.opts);
    throw err;
  }
}

/** A plain segment tag's ID. */
class SegmentOne extends OneOfCoalescer<StoredOf<'segment'>> {
  protected render(counter: number): string {
    return seqString(this.tag, counter);
  }
}

/** A rule's ID: its template rendered for the app, salt and moment of the request. */
class RuleOne extends OneOfCoalescer<StoredOf<'rule'>> {
  constructor(
    deps: ModeDeps,
    tag: StoredOf<'rule'>,
    sources: TagSources,
    opts: IdOptions,
    private readonly app: string,
    private readonly salt: string,
    private readonly now: number,
  ) {
    super(deps, tag, sources, opts);
  }

  protected render(counter: number): string {
    return this.deps.templates.renderOne(this.tag, counter, this.app, this.salt, this.now);
  }
}

/** The counter value of one ID from an `order: node` block at hand (counted), or undefined. */
function fromBlock(deps: ModeDeps, tag: StoredTag, sources: TagSources, src: SegmentSource): number | undefined {
  const counter = src.buffer?.takeOneNow();
  if (counter !== undefined) deps.count(tag, 1, sources);
  return counter;
}

/**
 * A plain segment tag's one source (shard 0), unless the options need the full way (a key, or a rule's input it
 * refuses).
 */
const plainSource = (tag: StoredTag, s: TagSources, opts: IdOptions): SegmentSource | undefined =>
  opts.key !== undefined || strayRuleInput(opts) ? undefined : s.plain;

const segmentIds =
  (d: ModeDeps) =>
  async (tag: StoredTag, count: number, opts: IdOptions): Promise<string[]> =>
    formatIds(await d.segments.take(tag, count, opts.key));

/** A plain segment tag's one source (shard 0, no scope): what a single ID comes from. */
function warmPlain(deps: ModeDeps, tag: StoredOf<'segment'>, sources: TagSources): SegmentSource | undefined {
  if (tag.layout === 'plain') return (sources.plain = deps.sources.segment(sources, 0, ''));
  return undefined;
}

function segmentGlobal(deps: ModeDeps): ModeSource<StoredOf<'segment'>> {
  return {
    one(tag, sources, opts) {
      const src = plainSource(tag, sources, opts);
      return src && src.coalescer.takeMapped(1, new SegmentOne(deps, tag, sources, opts));
    },
    ids: segmentIds(deps),
    // Every ID of a plain tag's counter value k is k * stride + offset, unless it is permuted.
    inKey: (tag) =>
      tag.layout === 'plain' && !tag.permute
        ? { shard: 0, scope: '', stride: tag.stride, offset: tag.offset }
        : undefined,
    warm(tag, sources) {
      warmPlain(deps, tag, sources);
    },
  };
}

function segmentNode(deps: ModeDeps): ModeSource<StoredOf<'segment'>> {
  return {
    one(tag, sources, opts) {
      const src = plainSource(tag, sources, opts);
      const counter = src && fromBlock(deps, tag, sources, src);
      return counter === undefined ? undefined : seqString(tag, counter);
    },
    ids: segmentIds(deps),
    warm(tag, sources) {
      const plain = warmPlain(deps, tag, sources);
      if (plain) deps.sources.buffer(sources, plain);
    },
  };
}

function rule(deps: ModeDeps): ModeSource<StoredOf<'rule'>> {
  return {
    one(tag, sources, opts) {
      if (opts.key !== undefined) return undefined;
      const { app, salt } = ruleInput(tag, opts);
      // One moment decides both the period (whose counter is used) and the time tokens.
      const now = deps.clock.now();
      const src = sources.segments.get(sourceKey(0, scopeOf(tag, app, now)));
      if (src === undefined) return undefined;
      src.lastUsed = Date.now();
      if (tag.order !== 'node')
        return src.coalescer.takeMapped(1, new RuleOne(deps, tag, sources, opts, app, salt, now));
      const counter = fromBlock(deps, tag, sources, src);
      return counter === undefined ? undefined : deps.templates.renderOne(tag, counter, app, salt, now);
    },
    async ids(tag, count, opts) {
      const { app, salt } = ruleInput(tag, opts);
      const now = deps.clock.now();
      const issued = await deps.segments.take(tag, count, undefined, scopeOf(tag, app, now));
      return deps.templates.renderRuns(tag, issued.runs, app, salt, now);
    },
  };
}

function snowflake(deps: ModeDeps): ModeSource<StoredOf<'snowflake'>> {
  return {
    one(tag, sources, opts) {
      if (opts.key !== undefined || strayRuleInput(opts) || sources.generator === undefined) return undefined;
      const id = sources.generator.takeOneNow();
      if (id === undefined) return undefined;
      deps.count(tag, 1, sources);
      return String(id);
    },
    async ids(tag, count) {
      return (await deps.sources.generatorOf(tag).take(count)).map(String);
    },
    // The generator of the layout, its lease taken up.
    warm(tag, sources) {
      sources.generator = deps.sources.generatorOf(tag);
      sources.generator.prime();
    },
  };
}
