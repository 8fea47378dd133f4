// Typed access to a tag's segment double buffer in Redis (scripts in ./commands).
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Range } from '../../core/ranges.js';
import type { Keys } from './keys.js';
import { loadScripts, type ScriptFn } from './scripts.js';

const GEN_PREFIX = randomBytes(6).toString('hex');
let genCounter = 0;

/** 'replaced': the hash came from another Redis instance and was started afresh, as 'cold'. */
export type TakeStatus = 'ok' | 'dry' | 'cold' | 'exhausted' | 'replaced';
const TAKE_STATUS: TakeStatus[] = ['ok', 'dry', 'cold', 'exhausted', 'replaced'];

export interface TakeResult {
  readonly status: TakeStatus;
  readonly gen: string;
  readonly seg: number;
  readonly refillWanted: boolean;
  readonly ranges: Range[];
  /** status 'exhausted': IDs Redis still holds (fewer than asked; none were given). */
  readonly avail?: number;
}

export type InstallResult = 'current' | 'next' | 'reset' | 'next-present' | 'stale';
const INSTALL_RESULT: Record<string, InstallResult> = { '1': 'current', '2': 'next', '-1': 'reset', '-2': 'next-present', '-3': 'stale' };

export interface SegmentStats {
  readonly gen?: string;
  readonly taken: number;
  /** Time (ms) and taken count at the last install: the consumption-rate window. */
  readonly lastInstallMs?: number;
  readonly takenAtInstall?: number;
  readonly cur?: number;
  readonly end?: number;
  readonly next?: Range;
  readonly seg?: number;
  readonly exhausted: boolean;
}

export interface SegmentRef {
  readonly tag: string;
  readonly epoch: number;
  readonly shard: number;
  /** Rule counters: "<app>/<period>"; absent or '' for segment tags. */
  readonly scope?: string;
}

export class SegmentStore {
  private readonly scripts: Record<string, ScriptFn>;

  /**
   * onReplaced: told when a take found a hash written by another Redis instance (restart from
   * a snapshot, failover) and abandoned the segments it held.
   */
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly onReplaced?: (ref: SegmentRef) => void,
  ) {
    this.scripts = loadScripts(redis);
  }

  key(ref: SegmentRef): string {
    return this.keys.segment(ref.tag, ref.epoch, ref.shard, ref.scope);
  }

  async take(ref: SegmentRef, n: number, prefetch: number): Promise<TakeResult> {
    // Unique across processes (random prefix) and calls (counter); used only on a cold start.
    const gen = `${GEN_PREFIX}${(genCounter++).toString(36)}`;
    const r = (await this.scripts.take([this.key(ref)], [n, gen, prefetch])) as (string | number)[];
    const status = TAKE_STATUS[Number(r[0])];
    if (status === 'replaced') this.onReplaced?.(ref);
    const head = { status, gen: String(r[1]), seg: Number(r[2]), refillWanted: Number(r[3]) === 1 };
    if (status === 'exhausted') return { ...head, ranges: [], avail: Number(r[4]) };
    const ranges: Range[] = [];
    for (let i = 4; i + 1 < r.length; i += 2) ranges.push([Number(r[i]), Number(r[i + 1])]);
    return { ...head, ranges };
  }

  /** limit: the tag's largest counter value when the segment was allocated (final when reached). */
  async install(ref: SegmentRef, gen: string, range: Range, prefetch: number, nowMs = Date.now(), limit = Number.MAX_SAFE_INTEGER): Promise<InstallResult> {
    const r = await this.scripts.install([this.key(ref)], [gen, range[0], range[1], nowMs, prefetch, range[1] >= limit ? 1 : 0, limit]);
    return INSTALL_RESULT[String(r)];
  }

  /** Marks the (tag, shard) exhausted under gen; false when gen is no longer current. */
  async exhaust(ref: SegmentRef, gen: string): Promise<boolean> {
    return Number(await this.scripts.exhaust([this.key(ref)], [gen])) === 1;
  }

  async stats(ref: SegmentRef): Promise<SegmentStats> {
    const h = await this.redis.hgetall(this.key(ref));
    const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
    return {
      gen: h.gen,
      taken: Number(h.taken ?? 0),
      lastInstallMs: num(h.rt),
      takenAtInstall: num(h.rn),
      cur: num(h.cur),
      end: num(h.end),
      next: h.nf !== undefined ? [Number(h.nf), Number(h.ne)] : undefined,
      seg: num(h.seg),
      exhausted: h.ex !== undefined,
    };
  }

  /**
   * Clears the exhausted mark of every counter of a tag's epoch (after its limit was raised):
   * all shards and, for rules, every (app, period) scope.
   */
  async clearExhausted(tag: string, epoch: number): Promise<void> {
    await this.eachSegmentKey(tag, epoch, (keys) => Promise.all(keys.map((k) => this.redis.hdel(k, 'ex', 'lim'))));
  }

  /** Drops the Redis state of every counter of a tag's epoch; a later take starts a new gen. */
  async reset(tag: string, epoch: number): Promise<void> {
    await this.eachSegmentKey(tag, epoch, (keys) => this.redis.unlink(...keys));
  }

  private async eachSegmentKey(tag: string, epoch: number, fn: (keys: string[]) => Promise<unknown>): Promise<void> {
    const pattern = this.keys.segmentPattern(tag, epoch);
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await fn(keys);
    } while (cursor !== '0');
  }
}
