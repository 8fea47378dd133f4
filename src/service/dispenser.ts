// Serves IDs for a tag: resolves the definition, then takes from the tag's segment source
// (coalescer for `order: global`, in-memory block for `order: node`, per shard) or from its
// snowflake generator.
import type { Clock } from '../core/clock.js';
import { packId, seqString, shardOf } from '../core/layout.js';
import { localParts, periodOf } from '../core/period.js';
import { compileRule, counterAt } from '../core/rule-spec.js';
import { isValidAppName, isValidSalt, render, type CompiledTemplate } from '../core/rule-template.js';
import type { Range } from '../core/ranges.js';
import { IdmintError, invalid } from '../errors.js';
import type { StoredTag } from '../store/mysql/tags-repo.js';
import { hashToken } from '../store/mysql/tokens-repo.js';
import { Coalescer, TagMovedError, type CoalescerDeps } from './coalescer.js';
import type { LeaseManager } from './lease-manager.js';
import { NodeBuffer } from './node-buffer.js';
import { SnowflakeGenerator, type ClockEvents } from './snowflake-generator.js';
import type { TagRegistry } from './tag-registry.js';

export interface Issued {
  readonly tag: StoredTag;
  readonly shard: number;
  readonly runs: Range[];
}

/** What a request may carry besides the tag: `key` for sharded tags, `app`/`salt` for rules. */
/** Rule scopes (app, period) whose sources a process keeps before dropping idle ones. */
const MAX_IDLE_SCOPES = 1000;

export interface IdOptions {
  readonly key?: string;
  readonly app?: string;
  readonly salt?: string;
  /** A client token; required by tags that have tokens. */
  readonly token?: string;
}

export interface SnowflakeDeps {
  readonly leases: LeaseManager;
  readonly clock: Clock;
  readonly maxBackMs: number;
}

export class Dispenser {
  private readonly coalescers = new Map<string, Coalescer>();
  private readonly buffers = new Map<string, NodeBuffer>();
  /** The block of each plain `order: node` tag, by name, for idNow (no key to build). */
  private readonly plainNode = new Map<string, { readonly epoch: number; readonly buffer: NodeBuffer; readonly issued?: { value: number } }>();
  /** The generator of each snowflake tag, by name, with the layout it was made for (idNow). */
  private readonly plainSnowflake = new Map<string, { readonly spec: StoredTag['snowflake']; readonly generator: SnowflakeGenerator; readonly issued?: { value: number } }>();
  /** The source of each plain `order: global` tag, by name, for idGlobal. */
  private readonly plainGlobal = new Map<string, { readonly epoch: number; readonly source: Coalescer; readonly issued?: { value: number } }>();
  private readonly generators = new Map<string, SnowflakeGenerator>();
  /** Last use of each source key, for dropping the sources of past rule periods. */
  private readonly lastUsed = new Map<string, number>();
  private readonly templates = new Map<string, { readonly source: string; readonly max: number; readonly compiled: CompiledTemplate }>();
  /** Latest definition seen per tag, read by coalescers for prefetch and block size. */
  private readonly specs = new Map<string, StoredTag>();
  /** Clock events of all snowflake generators of this process. */
  readonly clockEvents: ClockEvents = { backwards: 0, waits: 0 };

  private readonly deps: CoalescerDeps;

  constructor(
    readonly registry: TagRegistry,
    deps: CoalescerDeps,
    private readonly snowflake: SnowflakeDeps,
  ) {
    this.deps = { ...deps, changed: (tag, epoch) => registry.changed(tag, epoch) };
  }

  /** The enabled tag of that name, or a coded error. */
  async resolve(name: string): Promise<StoredTag> {
    const tag = await this.registry.get(name);
    if (!tag) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    if (!tag.enabled) throw new IdmintError('TAG_DISABLED', `tag "${name}" is disabled`);
    this.specs.set(name, tag);
    return tag;
  }

  /** Tags with client tokens serve only requests carrying one of them. */
  static authorize(tag: StoredTag, token: string | undefined): void {
    if (!tag.tokenHashes || tag.tokenHashes.size === 0) return;
    if (token === undefined || token === '') throw new IdmintError('UNAUTHORIZED', `tag "${tag.tag}" needs a client token`);
    if (!tag.tokenHashes.has(hashToken(token))) throw new IdmintError('UNAUTHORIZED', `the client token is not valid for tag "${tag.tag}"`);
  }

  shardFor(tag: StoredTag, key: string | undefined): number {
    if (tag.layout !== 'sharded' || tag.mode !== 'segment') {
      if (key !== undefined) throw invalid(`tag "${tag.tag}" is not sharded; drop the key parameter`);
      return 0;
    }
    if (key === undefined || key === '') throw invalid(`tag "${tag.tag}" is sharded: pass the key the ID is for (?key=...)`);
    return shardOf(key, tag.shards);
  }

  /**
   * One ID of an `order: node` plain segment tag straight from this process's memory, without
   * a promise; undefined whenever anything needs the full path (definition not cached, block
   * used up, another mode or layout), which then answers as ids() does.
   */
  idNow(name: string, opts: IdOptions): string | undefined {
    const tag = this.registry.peek(name);
    if (!tag || !tag.enabled) return undefined;
    if (tag.rule) return this.ruleIdNow(tag, opts);
    if (opts.key !== undefined || opts.app !== undefined || opts.salt !== undefined) return undefined;
    if (tag.mode === 'snowflake') {
      const s = this.plainSnowflake.get(name);
      if (s === undefined || s.spec !== tag.snowflake) return undefined;
      Dispenser.authorize(tag, opts.token);
      const id = s.generator.takeOneNow();
      if (id === undefined) return undefined;
      if (s.issued) s.issued.value++;
      return String(id);
    }
    if (tag.order !== 'node' || tag.mode !== 'segment' || tag.layout !== 'plain') return undefined;
    Dispenser.authorize(tag, opts.token);
    const f = this.plainNode.get(name);
    if (f === undefined || f.epoch !== tag.epoch) return undefined;
    const v = f.buffer.takeOneNow();
    if (v === undefined) return undefined;
    if (f.issued) f.issued.value++;
    return seqString(tag, v);
  }

  /**
   * One ID of a plain `order: global` segment tag without tokens whose definition is cached,
   * straight from its coalescer (one promise); undefined whenever the full path is needed.
   */
  idGlobal(name: string): Promise<string> | undefined {
    const tag = this.registry.peek(name);
    if (!tag || !tag.enabled || tag.order !== 'global' || tag.mode !== 'segment' || tag.layout !== 'plain') return undefined;
    if (tag.tokenHashes !== undefined && tag.tokenHashes.size > 0) return undefined;
    const f = this.plainGlobal.get(name);
    if (f === undefined || f.epoch !== tag.epoch) return undefined;
    return f.source.take(1).then(
      (runs) => {
        if (f.issued) f.issued.value++;
        return seqString(tag, runs[0][0]);
      },
      // The tag moved to another Redis: the full path follows it.
      (err: unknown) => (err instanceof TagMovedError ? this.ids(name, 1).then((ids) => ids[0]) : Promise.reject(err)),
    );
  }

  /** count IDs of any mode, as strings, in issue order. */
  async ids(name: string, count: number, opts: IdOptions = {}): Promise<string[]> {
    const tag = await this.resolve(name);
    Dispenser.authorize(tag, opts.token);
    const out = await this.idsOf(tag, count, opts);
    this.deps.metrics?.countIssued(tag.tag, tag.mode, out.length);
    return out;
  }

  private async idsOf(tag: StoredTag, count: number, opts: IdOptions): Promise<string[]> {
    if (tag.rule) return this.ruleIds(tag, count, opts);
    if (opts.app !== undefined || opts.salt !== undefined) throw invalid(`app and salt apply to rule tags; "${tag.tag}" is a ${tag.mode} tag`);
    if (tag.mode === 'snowflake') {
      this.shardFor(tag, opts.key);
      return (await this.generator(tag).take(count)).map(String);
    }
    return Dispenser.format(await this.takeSegment(tag, count, opts.key));
  }

  /** idNow for an `order: node` rule whose (app, period) block has a counter in memory. */
  private ruleIdNow(tag: StoredTag, opts: IdOptions): string | undefined {
    if (tag.order !== 'node' || opts.key !== undefined) return undefined;
    Dispenser.authorize(tag, opts.token);
    const { app, salt } = this.checkRuleInput(tag, opts);
    const now = this.snowflake.clock.now();
    const k = `${tag.tag}\u0000${tag.epoch}\u00000\u0000${this.scopeOf(tag, app, now)}`;
    const v = this.buffers.get(k)?.takeOneNow();
    if (v === undefined) return undefined;
    this.lastUsed.set(k, Date.now());
    this.deps.metrics?.countIssued(tag.tag, tag.mode, 1);
    const r = tag.rule!;
    return render(this.compiled(tag), { counter: counterAt(r, tag, v), salt, app, parts: localParts(now, r.timeZone) });
  }

  /** The counter scope "<app>/<period>" of a rule at a moment. */
  private scopeOf(tag: StoredTag, app: string, nowMs: number): string {
    const r = tag.rule!;
    return `${app}/${periodOf(nowMs, r.timeZone, r.resetSeconds)}`;
  }

  private compiled(tag: StoredTag): CompiledTemplate {
    const r = tag.rule!;
    const cached = this.templates.get(tag.tag);
    if (cached && cached.source === r.template && cached.max === r.maxCounter) return cached.compiled;
    // Stored rules were validated when saved; force only skips the lifetime check they passed.
    const compiled = compileRule(r, true);
    this.templates.set(tag.tag, { source: r.template, max: r.maxCounter, compiled });
    return compiled;
  }

  private checkRuleInput(tag: StoredTag, opts: IdOptions): { app: string; salt: string } {
    if (opts.key !== undefined) throw invalid(`key applies to sharded segment tags; "${tag.tag}" is a rule`);
    if (!isValidAppName(opts.app)) throw invalid(`rule "${tag.tag}" needs an app name (app=, [A-Za-z0-9_.-]{1,64})`);
    const salt = opts.salt ?? '';
    if (!isValidSalt(salt)) throw invalid('salt must match [A-Za-z0-9_.-]{0,64}');
    return { app: opts.app, salt };
  }

  private async ruleIds(tag: StoredTag, count: number, opts: IdOptions): Promise<string[]> {
    const { app, salt } = this.checkRuleInput(tag, opts);
    const r = tag.rule!;
    const compiled = this.compiled(tag);
    // One moment decides both the period (whose counter is used) and the time tokens.
    const now = this.snowflake.clock.now();
    const issued = await this.takeSegment(tag, count, undefined, this.scopeOf(tag, app, now));
    const parts = localParts(now, r.timeZone);
    const out: string[] = [];
    for (const [a, b] of issued.runs) {
      for (let seq = a; seq <= b; seq++) out.push(render(compiled, { counter: counterAt(r, tag, seq), salt, app, parts }));
    }
    return out;
  }

  /** id_server's monitor: the last counter value handed out in the current period (-1: none yet). */
  async monitor(name: string, app: string | undefined, token?: string): Promise<{ counter: number }> {
    const tag = await this.resolve(name);
    Dispenser.authorize(tag, token);
    if (!tag.rule) throw invalid(`monitor applies to rule tags; "${name}" is a ${tag.mode} tag`);
    const { app: appName } = this.checkRuleInput(tag, { app });
    const scope = this.scopeOf(tag, appName, this.snowflake.clock.now());
    const st = await this.deps.segments.stats({ tag: tag.tag, epoch: tag.epoch, shard: 0, scope, redis: tag.redis });
    const handedOut = st.cur === undefined ? 0 : st.cur - 1;
    return { counter: handedOut > 0 ? counterAt(tag.rule, tag, handedOut) : -1 };
  }

  /** count IDs of a segment tag, as ascending runs of counter values. */
  async take(name: string, count: number, key?: string, token?: string): Promise<Issued> {
    const tag = await this.resolve(name);
    Dispenser.authorize(tag, token);
    if (tag.mode !== 'segment') throw invalid(`tag "${name}" is a ${tag.mode} tag, not a segment tag`);
    const issued = await this.takeSegment(tag, count, key);
    this.deps.metrics?.countIssued(tag.tag, tag.mode, count);
    return issued;
  }

  private generator(tag: StoredTag): SnowflakeGenerator {
    // Keyed by name and layout, not incarnation: a tag re-created (with the same layout, as it
    // must be) continues after the time and sequence this process already used for it.
    const k = `${tag.tag}\u0000${JSON.stringify(tag.snowflake)}`;
    let g = this.generators.get(k);
    if (!g) {
      const { leases, clock, maxBackMs } = this.snowflake;
      g = new SnowflakeGenerator(tag.snowflake!, leases, clock, maxBackMs, this.clockEvents);
      this.generators.set(k, g);
    }
    if (this.plainSnowflake.get(tag.tag)?.spec !== tag.snowflake) {
      this.plainSnowflake.set(tag.tag, { spec: tag.snowflake, generator: g, issued: this.deps.metrics?.issuedSeries(tag.tag, tag.mode) });
    }
    return g;
  }

  /**
   * takeFrom, following the tag when it moves to another Redis server: the old state answers
   * "moved", and the request continues under the definition MySQL holds now (a new epoch on
   * the new server), waiting at most REFILL_WAIT_MS for the move to be recorded.
   */
  private async takeSegment(tag: StoredTag, count: number, key: string | undefined, scope = ''): Promise<Issued> {
    const deadline = Date.now() + this.deps.waitMs;
    for (let attempt = 1; ; attempt++) {
      let moved: boolean;
      try {
        return await this.takeFrom(tag, count, key, scope);
      } catch (err) {
        if (!(err instanceof TagMovedError) || Date.now() >= deadline) throw err;
        moved = err.moved;
      }
      for (;;) {
        const now = await this.registry.refresh(tag.tag);
        if (!now) throw new IdmintError('TAG_NOT_FOUND', `tag "${tag.tag}" does not exist`);
        if (!now.enabled) throw new IdmintError('TAG_DISABLED', `tag "${tag.tag}" is disabled`);
        // A new epoch (moved, re-created), or any other change: continue under it at once.
        if (now.epoch !== tag.epoch || !moved) {
          tag = now;
          this.specs.set(tag.tag, tag);
          break;
        }
        if (Date.now() >= deadline) throw new TagMovedError(tag.tag);
        await new Promise((r) => setTimeout(r, Math.min(10 * attempt, 50)));
      }
    }
  }

  private async takeFrom(tag: StoredTag, count: number, key: string | undefined, scope: string): Promise<Issued> {
    const name = tag.tag;
    const shard = this.shardFor(tag, key);
    const k = `${name}\u0000${tag.epoch}\u0000${shard}\u0000${scope}`;
    let source = this.coalescers.get(k);
    if (scope !== '') this.lastUsed.set(k, Date.now());
    if (!source) {
      if (scope !== '' && this.lastUsed.size > MAX_IDLE_SCOPES) this.prune();
      source = new Coalescer({ tag: name, epoch: tag.epoch, shard, scope, redis: tag.redis }, () => this.specs.get(name)?.prefetch ?? tag.prefetch, this.deps);
      this.coalescers.set(k, source);
      if (tag.order === 'global' && tag.layout === 'plain' && scope === '') {
        this.plainGlobal.set(name, { epoch: tag.epoch, source, issued: this.deps.metrics?.issuedSeries(tag.tag, tag.mode) });
      }
    }
    let runs: Range[];
    if (tag.order === 'node') {
      let buf = this.buffers.get(k);
      if (!buf) {
        buf = new NodeBuffer(source, () => this.specs.get(name)?.nodeBlock ?? tag.nodeBlock);
        this.buffers.set(k, buf);
        if (tag.layout === 'plain' && scope === '') {
          this.plainNode.set(name, { epoch: tag.epoch, buffer: buf, issued: this.deps.metrics?.issuedSeries(tag.tag, tag.mode) });
        }
      }
      runs = await buf.take(count);
    } else {
      runs = await source.take(count);
    }
    return { tag, shard, runs };
  }

  /**
   * Drops the sources of rule scopes unused for a minute (past periods, idle apps). A dropped
   * node-order block is a gap; the counter lives on in Redis and MySQL.
   */
  private prune(): void {
    const cutoff = Date.now() - 60_000;
    for (const [k, at] of this.lastUsed) {
      if (at > cutoff || !(this.coalescers.get(k)?.idle ?? true) || !(this.buffers.get(k)?.idle ?? true)) continue;
      this.lastUsed.delete(k);
      this.coalescers.delete(k);
      this.buffers.delete(k);
    }
  }

  /** Decimal strings of the IDs of counter runs, per the tag's interleave and layout. */
  static format(issued: Issued): string[] {
    const out: string[] = [];
    const { tag, shard } = issued;
    for (const [a, b] of issued.runs) {
      for (let v = a; v <= b; v++) out.push(tag.layout === 'plain' ? seqString(tag, v) : packId(tag, v, shard).toString());
    }
    return out;
  }
}
