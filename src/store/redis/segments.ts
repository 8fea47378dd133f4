// Typed access to a tag's segment double buffer in Redis (scripts in ./commands), on the
// named Redis server the tag lives on (REDIS_URL is "default", REDIS_URLS adds others).
import { randomBytes } from 'node:crypto';
import { IdmintError } from '../../errors.js';
import type { Range } from '../../core/ranges.js';
import { scanKeys, type RedisClient } from './connection.js';
import type { Keys } from './keys.js';
import type { InstallResult, TakeResult } from './replies.js';
import { Scripts } from './scripts.js';

export type { InstallResult, TakeResult, TakeStatus } from './replies.js';

const GEN_PREFIX = randomBytes(6).toString('hex');
let genCounter = 0;

/** A token no other call of any process has: a take's call (and a cold hash's gen), or a primed hash's gen. */
const newToken = (suffix: string | number): string => `${GEN_PREFIX}${(genCounter++).toString(36)}${suffix}`;

/**
 * Fields a segment hash keeps take answers in (a0 .. a7, take-2.lua): a call's token ends with
 * the digit of its field, and the takes of one ref (a coalescer passes the same object every
 * time) use them in turn, so those in flight at once on a connection, which are all sent again
 * when it closes before their replies are read, never share one.
 */
const ANSWER_FIELDS = 8;

/** What every take of one ref sends the same: its server, its keys; and its last answer field. */
interface TakeTarget {
  readonly server: Server;
  readonly key: string;
  readonly moved: string;
  field: number;
}

export const DEFAULT_REDIS = 'default';

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
  /** Highest value ever installed under this hash (0 before the first install). */
  readonly hwm: number;
  readonly exhausted: boolean;
}

export interface SegmentRef {
  readonly tag: string;
  readonly epoch: number;
  readonly shard: number;
  /** Rule counters: "<app>/<period>"; absent or '' for segment tags. */
  readonly scope?: string;
  /** Name of the Redis server the tag lives on; absent means "default". */
  readonly redis?: string;
}

interface Server {
  readonly redis: RedisClient;
  readonly scripts: Scripts;
}

/**
 * IDs handed out since the hash was created: take does not count them (one write less per
 * call); they are the IDs installed (ins) less those still in the buffer. A hash written
 * before ins existed counted them in taken.
 */
export function takenOf(hash: Readonly<Record<string, string>>): number {
  if (hash.ins === undefined) return Number(hash.taken ?? 0);
  const held =
    Math.max(0, Number(hash.end) - Number(hash.cur) + 1) +
    (hash.nf !== undefined ? Number(hash.ne) - Number(hash.nf) + 1 : 0);
  return Number(hash.ins) - held;
}

export class SegmentStore {
  private readonly servers = new Map<string, Server>();
  /** Per ref object (a coalescer passes the same one every time): built once, not per take. */
  private readonly targets = new WeakMap<SegmentRef, TakeTarget>();

  /**
   * byName: the connections by name ("default" required). onReplaced: told when a take found
   * a hash written by another Redis instance (restart from a snapshot, failover) and
   * abandoned the segments it held.
   */
  constructor(
    byName: Readonly<Record<string, RedisClient>>,
    private readonly keys: Keys,
    private readonly onReplaced?: (ref: SegmentRef) => void,
  ) {
    for (const [name, client] of Object.entries(byName))
      this.servers.set(name, { redis: client, scripts: new Scripts(client) });
    if (!this.servers.has(DEFAULT_REDIS)) throw new Error('SegmentStore needs a "default" Redis');
  }

  /** Names of the Redis servers this process can reach, "default" first. */
  names(): string[] {
    return [...this.servers.keys()];
  }

  has(name: string): boolean {
    return this.servers.has(name);
  }

  /** The connection of a named server, for operators' checks. */
  connection(name: string = DEFAULT_REDIS): RedisClient {
    return this.server(name).redis;
  }

  private server(name: string = DEFAULT_REDIS): Server {
    const server = this.servers.get(name);
    if (!server)
      throw new IdmintError(
        'UNAVAILABLE',
        `this process has no Redis named "${name}": every process needs the same REDIS_URLS`,
      );
    return server;
  }

  key(ref: SegmentRef): string {
    return this.keys.segment(ref.tag, ref.epoch, ref.shard, ref.scope);
  }

  /**
   * Up to `count` IDs of the ref's counter (take-2.lua). The request path's one call: its keys are
   * built once per ref, and its two steps run in the script call's (no promise, no async frame).
   */
  take(ref: SegmentRef, count: number, prefetch: number): Promise<TakeResult> {
    let target = this.targets.get(ref);
    if (target === undefined) {
      try {
        target = { server: this.server(ref.redis), key: this.key(ref), moved: this.keys.moved(ref.tag), field: -1 };
      } catch (err) {
        return Promise.reject(err as Error);
      }
      this.targets.set(ref, target);
    }
    // The call's token: unique across processes (random prefix) and calls (counter), the same
    // when the client sends the call again; the gen of a hash this call creates (cold start).
    target.field = (target.field + 1) % ANSWER_FIELDS;
    const gen = newToken(target.field);
    const server = target.server;
    return server.scripts.take(
      target.key,
      target.moved,
      count,
      gen,
      prefetch,
      ref.epoch,
      (result) => {
        if (result.status === 'replaced') this.onReplaced?.(ref);
        return result;
      },
      (err: Error) => {
        // Named, so a request for a tag on a server that is down says which one.
        const why = server.redis.status === 'ready' ? err.message : `not connected (${server.redis.status})`;
        throw new Error(`server "${ref.redis ?? DEFAULT_REDIS}" of tag "${ref.tag}": ${why}`, { cause: err });
      },
    );
  }

  /** limit: the tag's largest counter value when the segment was allocated (final when reached). */
  async install(
    ref: SegmentRef,
    gen: string,
    range: Range,
    prefetch: number,
    nowMs = Date.now(),
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<InstallResult> {
    return this.server(ref.redis).scripts.install(this.key(ref), this.keys.moved(ref.tag), {
      gen,
      range,
      nowMs,
      prefetch,
      final: range[1] >= limit,
      limit,
      epoch: ref.epoch,
    });
  }

  /**
   * Creates the hash of a counter nobody has taken from yet (prime-2.lua), for a refill to fill
   * before the first request: the gen it was created under, or undefined when it existed
   * already or the tag's epoch is retired on its server.
   */
  async prime(ref: SegmentRef): Promise<string | undefined> {
    const gen = newToken('p');
    const result = await this.server(ref.redis).scripts.prime(this.key(ref), this.keys.moved(ref.tag), gen, ref.epoch);
    return result === 'created' ? gen : undefined;
  }

  /** Marks the (tag, shard) exhausted under gen; false when gen is no longer current. */
  async exhaust(ref: SegmentRef, gen: string): Promise<boolean> {
    return (await this.server(ref.redis).scripts.exhaust(this.key(ref), gen)) === 'marked';
  }

  async stats(ref: SegmentRef): Promise<SegmentStats> {
    const hash = await this.server(ref.redis).redis.hgetall(this.key(ref));
    const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
    return {
      gen: hash.gen,
      taken: takenOf(hash),
      lastInstallMs: num(hash.rt),
      takenAtInstall: num(hash.rn),
      cur: num(hash.cur),
      end: num(hash.end),
      next: hash.nf !== undefined ? [Number(hash.nf), Number(hash.ne)] : undefined,
      seg: num(hash.seg),
      hwm: Number(hash.hwm ?? 0),
      exhausted: hash.ex !== undefined,
    };
  }

  /**
   * Clears the exhausted mark of every counter of a tag's epoch (after its limit was raised):
   * all shards and, for rules, every (app, period) scope.
   */
  async clearExhausted(tag: string, epoch: number, redis?: string): Promise<void> {
    const client = this.server(redis).redis;
    await this.eachSegmentKey(client, tag, epoch, (keys) => Promise.all(keys.map((k) => client.hdel(k, 'ex', 'lim'))));
  }

  /** Drops the Redis state of every counter of a tag's epoch; a later take starts a new gen. */
  async reset(tag: string, epoch: number, redis?: string): Promise<void> {
    const client = this.server(redis).redis;
    await this.eachSegmentKey(client, tag, epoch, (keys) => client.unlink(...keys));
  }

  /**
   * Retires a tag's state up to `epoch` on one server (the tag moved away): from now on every
   * take there answers 'moved' and every install is refused, for existing and new hashes.
   */
  async retire(tag: string, epoch: number, redis?: string, by?: string): Promise<void> {
    const client = this.server(redis).redis;
    if (by === undefined) await client.set(this.keys.moved(tag), epoch);
    // The note first, in one transaction with the marker: a retired state always names its cause.
    else await client.multi().set(this.keys.retiredBy(tag), `${epoch} ${by}`).set(this.keys.moved(tag), epoch).exec();
  }

  /** Takes a retirement back (a move that could not be recorded in MySQL). */
  async unretire(tag: string, epoch: number, redis?: string): Promise<void> {
    const client = this.server(redis).redis;
    if ((await client.get(this.keys.moved(tag))) === String(epoch)) await client.del(this.keys.moved(tag));
    await this.forgetRetiredBy(tag, epoch, redis);
  }

  /** What retired the tag's state of `epoch` and did not finish (retire's `by`), if anything. */
  async retiredBy(tag: string, epoch: number, redis?: string): Promise<string | undefined> {
    const note = await this.server(redis).redis.get(this.keys.retiredBy(tag));
    const at = note?.indexOf(' ') ?? -1;
    return note && at > 0 && note.slice(0, at) === String(epoch) ? note.slice(at + 1) : undefined;
  }

  /** Drops retire's note of `epoch` (what it named finished, or was taken back). */
  async forgetRetiredBy(tag: string, epoch: number, redis?: string): Promise<void> {
    const client = this.server(redis).redis;
    if ((await this.retiredBy(tag, epoch, redis)) !== undefined) await client.del(this.keys.retiredBy(tag));
  }

  /** On a cluster every key of the pattern is in the tag's slot, so a batch is one slot. */
  private eachSegmentKey(
    client: RedisClient,
    tag: string,
    epoch: number,
    fn: (keys: string[]) => Promise<unknown>,
  ): Promise<void> {
    return scanKeys(client, this.keys.segmentPattern(tag, epoch), fn);
  }
}
