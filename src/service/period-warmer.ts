// Warms the next period of rule tags. A rule counts in each (app, period) scope of its own, and
// a scope's first segment comes from a refill its first request waits for. When a period ends,
// every app in use asks for its new scope at once (at midnight, for a daily rule), and their
// refills queue behind each other in the refill workers (REFILL_CONCURRENCY at a time): with a
// few hundred apps the first requests of the period waited seconds, some past REFILL_WAIT_MS.
//
// So a while before a period ends (RULE_PERIOD_WARM_MS, at most half a period) the warmer
// creates the next period's scope of every app whose scope this process used in the last
// minute (prime-2.lua: the scope's hash, no ID handed out) and asks its first segment as a
// prefetch refill; the first requests of the new period find it installed. A scope warmed so
// counts as used only once a request used it: warming follows requests, never itself (with
// periods of a few seconds, warmed scopes warming the next would allocate a segment every
// period for an app that asked once). Each process warms the apps it serves; the first to
// create a scope's hash asks its refill, the others find the hash there. Warming only moves a
// scope's first allocation earlier: its IDs, their order and the period they are rendered in
// are those of the requests that take them. A scope warmed for an app that asks nothing in the
// new period is a counter row and a segment that go unused.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import { periodOf } from '../core/period.js';
import { ruleScope, scopeApp } from '../core/rule-spec.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { SegmentStore } from '../store/redis/segments.js';
import { SCOPE_IDLE_MS, sourceKey, type SourceCache, type TagSources } from './sources.js';

/** How often the warmer looks for periods about to end. */
const TICK_MS = 1000;

export interface PeriodWarmerDeps {
  readonly sources: SourceCache;
  readonly segments: SegmentStore;
  readonly producer: RefillProducer;
  /** The clock rule periods are read from (the one requests render their IDs with). */
  readonly clock: Clock;
  readonly log: Logger;
}

/** The scopes of a tag's next period to warm. */
interface Due {
  readonly sources: TagSources;
  readonly period: number;
  readonly scopes: string[];
}

export class PeriodWarmer {
  private timer: NodeJS.Timeout | undefined;
  private leadMs = 0;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: PeriodWarmerDeps) {}

  /** Warms scopes leadMs before their period ends, checking every second; 0: never. */
  start(leadMs: number): void {
    this.leadMs = leadMs;
    if (leadMs <= 0 || this.timer !== undefined) return;
    // A pass that fails is logged, never left unhandled: the next second's pass tries again.
    this.timer = setInterval(() => {
      this.warm().catch((err: Error) => this.deps.log.warn({ err: err.message }, 'rule period warming failed'));
    }, TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Warms every scope due now (one pass at a time): how many scopes this pass created. */
  warm(): Promise<number> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<number> {
    let created = 0;
    for (const due of this.due()) created += await this.warmTag(due);
    return created;
  }

  /**
   * Creates a tag's due scopes and asks their first segments; stops at the first failure (the
   * next pass tries again).
   */
  private async warmTag({ sources, period, scopes }: Due): Promise<number> {
    const { segments, producer, log } = this.deps;
    const tag = sources.def;
    let created = 0;
    for (const scope of scopes) {
      const ref = { tag: tag.tag, epoch: tag.epoch, shard: 0, scope, redis: tag.redis };
      try {
        const gen = await segments.prime(ref);
        if (gen !== undefined) {
          await producer.request({ ...ref, gen, seg: 0, urgent: false });
          created++;
        }
      } catch (err) {
        log.warn(
          { tag: tag.tag, scope, err: (err as Error).message },
          'could not warm a rule scope of the next period: its first request will wait for its refill',
        );
        break;
      }
      // Held from now on, so the next pass leaves it; not used yet, so it warms no period after it.
      this.deps.sources.holdWarmed(sources, scope);
    }
    if (created > 0) log.info({ tag: tag.tag, period, scopes: created }, 'warmed rule scopes of the next period');
    return created;
  }

  /** Per rule tag whose period ends within the lead: the next period's scopes of its apps in use, not held yet. */
  private due(): Due[] {
    const out: Due[] = [];
    const now = this.deps.clock.now();
    const recent = Date.now() - SCOPE_IDLE_MS;
    for (const sources of this.deps.sources.held()) {
      const tag = sources.def;
      if (tag.mode !== 'rule' || !tag.enabled || tag.rule.resetSeconds === 0) continue;
      const { timeZone, resetSeconds } = tag.rule;
      const current = periodOf(now, timeZone, resetSeconds);
      const period = periodOf(now + Math.min(this.leadMs, resetSeconds * 500), timeZone, resetSeconds);
      if (period === current) continue;
      const scopes: string[] = [];
      for (const src of sources.segments.values()) {
        const app = src.lastUsed < recent ? undefined : scopeApp(src.scope);
        if (app === undefined || src.scope !== ruleScope(app, current)) continue;
        const scope = ruleScope(app, period);
        if (!sources.segments.has(sourceKey(0, scope))) scopes.push(scope);
      }
      if (scopes.length > 0) out.push({ sources, period, scopes });
    }
    return out;
  }
}
