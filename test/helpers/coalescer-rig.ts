// A coalescer on a real Redis for its tests: a SegmentStore whose takes are delayed, reordered
// or replaced per take (SlowStore), a stand-in for the refill worker installing ranges from a
// counter of its own (Refiller, MySQL's part being tested elsewhere), and the check of
// real-time order. The delays and arrivals are drawn from a seed, new each run and printed by
// the tests that depend on it; COALESCER_SEED=<n> draws them again.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Range } from '../../src/core/ranges.js';
import type { RefillJobData } from '../../src/jobs/refill.js';
import type { RefillProducer } from '../../src/producer/refill-producer.js';
import { Coalescer } from '../../src/service/coalescer.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef, type TakeResult, type TakeStatus } from '../../src/store/redis/segments.js';
import { REDIS_URL, cleanup, testNames } from '../../tools/env.js';
import { realTimeOrder } from '../../tools/order.js';
import { rng } from '../../tools/prng.js';

export const silent = pino({ level: 'silent' });

export const SEED = process.env.COALESCER_SEED
  ? Number(process.env.COALESCER_SEED)
  : Math.floor(Math.random() * 2 ** 31);
export const random = rng(SEED).next;

/** The SegmentStore's take, with replies (and sometimes the takes themselves) delayed, counted. */
export class SlowStore {
  inFlight = 0;
  maxInFlight = 0;
  readonly statuses = new Map<TakeStatus, number>();
  /** Per take (numbered from 1): what to do instead of the plain delayed take. */
  override: ((n: number, run: () => Promise<TakeResult>) => Promise<TakeResult>) | undefined;
  private count = 0;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly inner: SegmentStore,
    private readonly maxDelayMs: number,
  ) {}

  async take(ref: SegmentRef, n: number, prefetch: number): Promise<TakeResult> {
    const k = ++this.count;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const run = () => this.inner.take(ref, n, prefetch);
      const r = this.override ? await this.override(k, run) : await this.delayed(run);
      this.statuses.set(r.status, (this.statuses.get(r.status) ?? 0) + 1);
      return r;
    } finally {
      this.inFlight--;
    }
  }

  /**
   * Replies are delayed but come back in the order the takes ran, as on one connection. Now
   * and then a take runs late, after takes sent later (a command resent after a reconnect).
   */
  private async delayed(run: () => Promise<TakeResult>): Promise<TakeResult> {
    if (random() < 0.1) await sleep(random() * this.maxDelayMs);
    const result = run(); // sent now: Redis runs it after every take sent before it
    const wait = random() * this.maxDelayMs;
    const reply = this.tail.then(() => result.catch(() => undefined)).then(() => sleep(wait));
    this.tail = reply;
    await reply;
    return result;
  }
}

/** The refill worker's part: installs the next range of a counter, or marks the tag exhausted. */
export class Refiller {
  next = 1;
  limit = Number.MAX_SAFE_INTEGER;
  /** Serve only the refills a waiting request asked for (no prefetch). */
  urgentOnly = false;
  constructor(
    private readonly store: SegmentStore,
    private readonly step: number,
  ) {}

  async request(d: RefillJobData): Promise<void> {
    const ref = { tag: d.tag, epoch: d.epoch, shard: d.shard };
    if (this.urgentOnly && !d.urgent) return;
    if (this.next > this.limit) {
      await this.store.exhaust(ref, d.gen);
      return;
    }
    const range: Range = [this.next, Math.min(this.limit, this.next + this.step - 1)];
    this.next = range[1] + 1;
    await this.store.install(ref, d.gen, range, 0.5, Date.now(), this.limit);
  }
}

export interface Served {
  issued: number;
  done: number;
  ids: number[];
}

/**
 * Real-time order (tools/order.ts) over logical times: every request issued after another's answer came back got higher
 * IDs.
 */
export function assertServedInOrder(served: Served[]): void {
  const { violations } = realTimeOrder(
    served.filter((s) => s.ids.length > 0),
    (s) => ({ sent: s.issued, answered: s.done, min: BigInt(Math.min(...s.ids)), max: BigInt(Math.max(...s.ids)) }),
  );
  const v = violations[0];
  assert.ok(v === undefined, `a request issued after ${v?.earlierMax} was answered got ${v?.itemMin}`);
}

export interface CoalescerRig {
  store: SegmentStore;
  /** A segment of a tag no take touched yet. */
  fresh(): SegmentRef;
  coalescer(
    ref: SegmentRef,
    slow: SlowStore | Pick<SegmentStore, 'take'>,
    refiller: Refiller,
    pipeline: number,
    hold?: number,
    holdRtt?: number,
    lingerMs?: number,
  ): Coalescer;
  /** clients sequential request loops of `each` requests (1 or 3 IDs) against one coalescer. */
  drive(c: Coalescer, clients: number, each: number): Promise<Served[]>;
}

/** The Redis, segment store and coalescers of the enclosing describe; its hooks connect and clean up. */
export function openCoalescerRig(): CoalescerRig {
  const names = testNames();
  const redis = new Redis(REDIS_URL);
  const store = new SegmentStore({ default: redis }, new Keys(names.prefix));
  let epoch = 0;
  const fresh = (): SegmentRef => ({ tag: 'co', epoch: ++epoch, shard: 0 });

  before(async () => {
    await redis.ping();
  });
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  function coalescer(
    ref: SegmentRef,
    slow: SlowStore | Pick<SegmentStore, 'take'>,
    refiller: Refiller,
    pipeline: number,
    hold = 0,
    holdRtt = 0,
    lingerMs = 0,
  ): Coalescer {
    return new Coalescer(ref, () => 0.5, {
      segments: slow as unknown as SegmentStore,
      producer: refiller as unknown as RefillProducer,
      log: silent,
      maxBatch: 100_000,
      waitMs: 5000,
      pipeline,
      hold,
      holdRtt,
      lingerMs,
    });
  }

  /** clients sequential request loops of `each` requests (1 or 3 IDs) against one coalescer. */
  async function drive(c: Coalescer, clients: number, each: number): Promise<Served[]> {
    let clock = 0;
    const served: Served[] = [];
    await Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        for (let k = 0; k < each; k++) {
          const n = (i + k) % 5 === 0 ? 3 : 1;
          const s: Served = { issued: ++clock, done: 0, ids: [] };
          const runs = await c.take(n);
          s.done = ++clock;
          for (const [a, b] of runs) for (let v = a; v <= b; v++) s.ids.push(v);
          assert.equal(s.ids.length, n);
          served.push(s);
          // Arrivals spread over time, so that new requests come while takes are in flight.
          if (random() < 0.3) await sleep(random() * 2);
        }
      }),
    );
    return served;
  }

  return { store, fresh, coalescer, drive };
}
