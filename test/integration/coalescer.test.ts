// suite: single — drives the coalescer with a single-server Redis client on REDIS_URL
// The coalescer's hand-out order against a real Redis: pipelined takes (several in flight,
// replies delayed, executions reordered as a retried command would be), segments so small
// that takes often come back dry or cold (the serial loop's turn), a failure while takes are
// in flight, and an exhausted tag. The property checked throughout is real-time order: a
// request issued after another one's answer came back gets a higher ID.
//
// Refills are done by a stand-in for the refill worker that installs ranges from a counter
// of its own (MySQL's part, tested elsewhere); Redis and its scripts are the real ones.
// The delays and arrivals are drawn from a seed, new each run and printed by the tests that
// depend on it; COALESCER_SEED=<n> draws them again (the timing of Redis itself still varies).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { IdmintError } from '../../src/errors.js';
import type { Range } from '../../src/core/ranges.js';
import type { RefillJobData } from '../../src/jobs/refill.js';
import type { RefillProducer } from '../../src/producer/refill-producer.js';
import { Coalescer } from '../../src/service/coalescer.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef, type TakeResult, type TakeStatus } from '../../src/store/redis/segments.js';
import { REDIS_URL, cleanup, testNames } from '../../tools/env.js';
import { realTimeOrder } from '../../tools/order.js';
import { rng } from '../../tools/prng.js';

const silent = pino({ level: 'silent' });

const SEED = process.env.COALESCER_SEED ? Number(process.env.COALESCER_SEED) : Math.floor(Math.random() * 2 ** 31);
const random = rng(SEED).next;

/** The SegmentStore's take, with replies (and sometimes the takes themselves) delayed, counted. */
class SlowStore {
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
class Refiller {
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

interface Served {
  issued: number;
  done: number;
  ids: number[];
}

/** Real-time order (tools/order.ts) over logical times: every request issued after another's answer came back got higher IDs. */
function assertServedInOrder(served: Served[]): void {
  const { violations } = realTimeOrder(
    served.filter((s) => s.ids.length > 0),
    (s) => ({ sent: s.issued, answered: s.done, min: BigInt(Math.min(...s.ids)), max: BigInt(Math.max(...s.ids)) }),
  );
  const v = violations[0];
  assert.ok(v === undefined, `a request issued after ${v?.earlierMax} was answered got ${v?.itemMin}`);
}

describe('coalescer: pipelined takes on a real Redis', () => {
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

  for (const [pipeline, hold, holdRtt, lingerMs] of [
    [4, 8, 0, 0],
    [4, 8, 1, 0],
    [4, 8, 1, 2],
    [1, 8, 0, 2],
    [4, 0, 0, 0],
    [1, 0, 0, 0],
  ]) {
    it(`keeps real-time order with ${pipeline} take(s) in flight${hold > 0 ? ` and takes held up to ${hold} requests` : ''}${holdRtt > 0 ? ` or ${holdRtt} round trip(s) while a take is in flight` : ''}${lingerMs > 0 ? ` or ${lingerMs} ms after a reply` : ''}, through dry and cold takes`, async (t) => {
      const ref = fresh();
      const slow = new SlowStore(store, 3);
      const refiller = new Refiller(store, 37);
      const c = coalescer(ref, slow, refiller, pipeline, hold, holdRtt, lingerMs);
      t.diagnostic(`seed ${SEED} (COALESCER_SEED=${SEED} replays the draws)`);
      const served = await drive(c, 12, 120);
      const all = served.flatMap((s) => s.ids);
      assert.equal(new Set(all).size, all.length, 'duplicate IDs');
      assertServedInOrder(served);
      assert.ok(c.idle);
      if (pipeline > 1) assert.ok(slow.maxInFlight >= 2, `takes were not pipelined (at most ${slow.maxInFlight} in flight)`);
      assert.ok(slow.maxInFlight <= pipeline, `${slow.maxInFlight} takes in flight, more than ${pipeline}`);
      // Small segments: the serial loop had its turns (dry or cold takes), and requests still went on.
      assert.ok((slow.statuses.get('dry') ?? 0) + (slow.statuses.get('cold') ?? 0) > 0, `statuses seen: ${[...slow.statuses]}`);
      assert.ok((slow.statuses.get('ok') ?? 0) > 0);
    });
  }

  it('a take waits one more turn while requests keep arriving, unless enough are waiting; a lone request is not held', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 1000);
    await coalescer(ref, new SlowStore(store, 0), refiller, 4).take(1); // cold take, then a segment
    const sizes: number[] = [];
    const counting = { take: (r: SegmentRef, n: number, p: number) => (sizes.push(n), store.take(r, n, p)) };
    /** first requests in one turn, then more in the next turn; the sizes of the takes sent. */
    const burst = async (hold: number, first: number, more: number): Promise<number[]> => {
      sizes.length = 0;
      const c = coalescer(ref, counting, refiller, 4, hold);
      const answers = Array.from({ length: first }, () => c.take(1));
      await new Promise<void>((r) =>
        setImmediate(() => {
          answers.push(...Array.from({ length: more }, () => c.take(1)));
          r();
        }),
      );
      const ids = (await Promise.all(answers)).map(([[a]]) => a);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'answered in arrival order',
      );
      assert.ok(c.idle);
      return [...sizes];
    };
    assert.deepEqual(await burst(32, 3, 3), [6], 'three requests in a turn: the take waits for the next turn');
    assert.deepEqual(await burst(0, 3, 3), [3, 3], 'hold 0: never waits');
    assert.deepEqual(await burst(3, 3, 3), [3, 3], 'as many waiting as hold: sent at once');
    assert.deepEqual(await burst(32, 1, 1), [1, 1], 'a lone request is not held');
  });

  it('while a take is in flight the next waits for its reply, at most a round trip and unless enough are waiting', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 1000);
    await coalescer(ref, new SlowStore(store, 0), refiller, 4).take(1); // cold take, then a segment
    const sizes: number[] = [];
    /** Takes run on Redis when sent; each reply waits for `release` (or 50 ms when none is set). */
    let gate: Promise<void> | undefined;
    const gated = {
      take: async (r: SegmentRef, n: number, p: number) => {
        sizes.push(n);
        const result = store.take(r, n, p);
        await (gate ?? sleep(50));
        return result;
      },
    };
    const turn = () => new Promise<void>((r) => setImmediate(r));
    /**
     * One request whose take is in flight (reply held until released), then `more` requests,
     * each in a turn of its own, `lateMs` after that take was sent; the sizes of the takes.
     */
    const inFlight = async (c: Coalescer, more: number, lateMs = 0): Promise<number[]> => {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      sizes.length = 0;
      const answers = [c.take(1)];
      while (sizes.length === 0) await turn(); // the first take is out
      if (lateMs > 0) await sleep(lateMs);
      for (let i = 0; i < more; i++) {
        answers.push(c.take(1));
        await turn();
        await turn();
      }
      const sent = [...sizes];
      release();
      gate = undefined;
      const ids = (await Promise.all(answers)).map(([[a]]) => a);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'answered in arrival order',
      );
      assert.ok(c.idle);
      return [sent.length, ...sizes];
    };
    const make = (hold: number, holdRtt: number) => coalescer(ref, gated, refiller, 4, hold, holdRtt);
    // The first reply measures the round trip: 50 ms.
    const held = make(32, 1);
    await held.take(1);
    assert.deepEqual(await inFlight(held, 3), [1, 1, 3], 'three requests while a take was in flight: one take once its reply is back');
    const piped = make(32, 0);
    await piped.take(1);
    assert.deepEqual(await inFlight(piped, 3), [4, 1, 1, 1, 1], 'COALESCE_HOLD_RTT 0: each turn sends its own take at once');
    assert.deepEqual(
      await inFlight(held, 2, 120),
      [2, 1, 1, 1],
      'a take out longer than the round trip holds nothing: the next request goes at once (the one after waits for its reply)',
    );
    const few = make(2, 1);
    await few.take(1);
    assert.deepEqual(await inFlight(few, 2), [3, 1, 1, 1], 'as many waiting as COALESCE_HOLD: sent at once');
  });

  it('after a reply the next take waits for the requesters it answered to come back, at most COALESCE_LINGER_MS and a round trip', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 1000);
    await coalescer(ref, new SlowStore(store, 0), refiller, 1).take(1); // cold take, then a segment
    const sizes: number[] = [];
    /** When each take was sent (performance.now()). */
    const sentAt: number[] = [];
    /** Replies wait for `gate` when set, else `rttMs` (0: the plain Redis round trip). */
    let gate: Promise<void> | undefined;
    let rttMs = 30;
    const gated = {
      take: async (r: SegmentRef, n: number, p: number) => {
        sizes.push(n);
        sentAt.push(performance.now());
        const result = await store.take(r, n, p);
        await (gate ?? (rttMs > 0 ? sleep(rttMs) : undefined));
        return result;
      },
    };
    const turn = () => new Promise<void>((r) => setImmediate(r));
    /**
     * Three requests in one turn: after replies that each served one request, the first goes
     * at once (light load) and the other two share the next take, which leaves the coalescer
     * batching as under load (its latest take served more than one).
     */
    const loaded = async (c: Coalescer) => {
      await Promise.all([c.take(1), c.take(1), c.take(1)]);
      return c;
    };
    const make = async (lingerMs: number, hold = 32) => {
      // One take at a time (the hold while a take is in flight is another rule's), and a few
      // replies so the coalescer has measured the round trip.
      const c = coalescer(ref, gated, refiller, 1, hold, 0, lingerMs);
      for (let i = 0; i < 4; i++) await c.take(1);
      return loaded(c);
    };
    /**
     * `group` requests in one turn; while their take is out, `waiting` more arrive; after its
     * reply the answered requesters send again `backMs` later (undefined: they do not). The
     * sizes of the takes sent after the first, how long after the reply the next was sent, and
     * whether the coalescer was holding it back when the group had its answers.
     */
    const cycle = async (c: Coalescer, group: number, waiting: number, backMs?: number) => {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      sizes.length = 0;
      sentAt.length = 0;
      const first = Array.from({ length: group }, () => c.take(1));
      while (sizes.length === 0) await turn(); // the group's take is out
      const later = Array.from({ length: waiting }, () => c.take(1));
      await turn();
      await turn();
      gate = undefined;
      release();
      const firstIds = await Promise.all(first);
      const repliedAt = performance.now();
      const lingered = c.lingering;
      const rtt = c.roundTripMs;
      const back: Promise<Range[]>[] = [];
      if (backMs !== undefined) {
        await sleep(backMs);
        back.push(...Array.from({ length: group }, () => c.take(1)));
      }
      const laterIds = await Promise.all(later);
      const waited = sentAt[1] - repliedAt;
      const backIds = await Promise.all(back);
      const ids = [...firstIds, ...laterIds].map(([[a]]) => a);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'answered in arrival order',
      );
      const top = Math.max(...firstIds.map(([[a]]) => a));
      for (const [[a]] of backIds) assert.ok(a > top, `a request sent after ${top} was answered got ${a}`);
      assert.ok(c.idle);
      return { sizes: sizes.slice(1), waited, lingered, rtt };
    };

    const lingering = await make(20);
    assert.deepEqual((await cycle(lingering, 3, 1, 5)).sizes, [4], 'the one waiting and the three answered, back 5 ms later, share one take');
    assert.deepEqual((await cycle(lingering, 2, 3, 5)).sizes, [5], 'also when more were waiting than the take answered');
    const alone = await cycle(lingering, 3, 1);
    assert.deepEqual(alone.sizes, [1], 'nobody came back: the waiting request went alone');
    assert.ok(alone.waited >= 18 && alone.waited < 45, `it was sent once 20 ms had passed (${alone.waited.toFixed(1)} ms)`);
    assert.deepEqual((await cycle(lingering, 1, 1, 5)).sizes, [1, 1], 'a take that served one request: the next goes at once');
    rttMs = 10;
    await make(20).then(async (c) => {
      const r = await cycle(c, 3, 1);
      assert.ok(r.waited >= 6 && r.waited < 17, `at most one round trip (about 9 ms) when that is shorter: sent after ${r.waited.toFixed(1)} ms`);
    });
    rttMs = 30;
    assert.deepEqual((await cycle(await make(0), 3, 1, 5)).sizes, [1, 3], 'COALESCE_LINGER_MS 0: the waiting request goes at once');
    assert.deepEqual((await cycle(await make(20, 3), 3, 3, 5)).sizes, [3, 3], 'as many waiting as COALESCE_HOLD: sent at once');
    // A round trip under 1 ms (replies from memory here, so that a busy machine cannot make
    // Redis's slower): the next take goes within a turn or two, not after a timer.
    let next = 1_000_000_000;
    const instant = async (_r: SegmentRef, n: number): Promise<TakeResult> => {
      sizes.push(n);
      sentAt.push(performance.now());
      next += n;
      const ranges: Range[] = [[next - n, next - 1]];
      await gate;
      return { status: 'ok', gen: '', seg: -1, refillWanted: false, ranges };
    };
    const fast = coalescer(ref, { take: instant }, refiller, 1, 32, 0, 20);
    // Many instant replies first, so the one held across the cycle's turns moves the average
    // little; a machine so busy that those turns still push it past 1 ms must see a timer.
    for (let i = 0; i < 64; i++) await fast.take(1);
    await loaded(fast);
    const quick = await cycle(fast, 3, 1, 5);
    if (quick.rtt < 1) {
      // The waiting request's take served it alone, so the first of the three that come back
      // goes at once (light load) and the other two share the next take.
      assert.deepEqual(quick.sizes, [1, 1, 2], 'a round trip under 1 ms: never waits');
      assert.equal(quick.lingered, false, `a round trip under 1 ms (${quick.rtt.toFixed(3)} ms): no timer was set`);
    } else {
      assert.equal(quick.lingered, true, `a round trip of ${quick.rtt.toFixed(3)} ms: a timer was set`);
    }
    assert.equal(alone.lingered, true);
  });

  it('counts every take it sends in idmint_takes_total of the tag', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 5); // small segments: serial-loop takes (cold, dry) too
    let sent = 0;
    const counting = { take: (r: SegmentRef, n: number, p: number) => (sent++, store.take(r, n, p)) };
    const metrics = new Metrics({ defaultMetrics: false });
    const c = new Coalescer(ref, () => 0.5, {
      segments: counting as unknown as SegmentStore,
      producer: refiller as unknown as RefillProducer,
      log: silent,
      maxBatch: 100_000,
      waitMs: 5000,
      pipeline: 4,
      hold: 8,
      holdRtt: 1,
      metrics,
    });
    for (let round = 0; round < 5; round++) await Promise.all(Array.from({ length: 7 }, () => c.take(1)));
    const text = await metrics.registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith('idmint_takes_total{tag="co"}'));
    assert.ok(sent > 5, `${sent} takes`);
    assert.equal(line, `idmint_takes_total{tag="co"} ${sent}`);
  });

  it('never hands a reply of a take sent before a failure to a request that came after it', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 1000);
    // Warm: the segment is installed and takes answer "ok".
    const warm = coalescer(ref, new SlowStore(store, 0), refiller, 4);
    await warm.take(1);

    const slow = new SlowStore(store, 0);
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    slow.override = async (k, run) => {
      if (k === 1) {
        const r = await run(); // executed now, its reply arrives late
        await firstHeld;
        return r;
      }
      if (k === 2) throw new Error('connection lost');
      const r = await run();
      await firstHeld;
      await sleep(5); // the first take's reply comes back before this one's
      return r;
    };
    const c = coalescer(ref, slow, refiller, 4);
    const a = c.take(1);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    const b = c.take(1);
    await assert.rejects(a, (e: IdmintError) => e.code === 'UNAVAILABLE');
    await assert.rejects(b, (e: IdmintError) => e.code === 'UNAVAILABLE');
    // Another process takes an ID and answers it: everything issued from now on is above it.
    const elsewhere = await store.take(ref, 1, 0.5);
    const answered = elsewhere.ranges[0][0];
    const w = c.take(1);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    releaseFirst();
    const [[got]] = await w;
    assert.ok(got > answered, `request issued after ${answered} was answered got ${got} (a reply from before the failure)`);
    // The coalescer's bookkeeping survived: more requests are served, in order.
    slow.override = undefined;
    let last = got;
    for (let i = 0; i < 20; i++) {
      const [[v]] = await c.take(1);
      assert.ok(v > last);
      last = v;
    }
    assert.ok(c.idle);
  });

  it('an exhausted tag never passes IDs taken before a request arrived on to it', async () => {
    const ref = fresh();
    const refiller = new Refiller(store, 3);
    refiller.limit = 6;
    refiller.urgentOnly = true;
    // Cold take, then the first segment [1, 3] of a tag whose last ID is 6.
    const warm = coalescer(ref, new SlowStore(store, 0), refiller, 1);
    const [[first]] = await warm.take(1);
    assert.equal(first, 1);

    const slow = new SlowStore(store, 0);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    slow.override = async (k, run) => {
      const r = await run();
      if (k === 1) await held; // executed now (takes 2 and 3, dry), answered late
      return r;
    };
    const c = coalescer(ref, slow, refiller, 1);
    const a = c.take(4); // gets 2 and 3, then waits for more
    await sleep(5);
    // Another process takes the last IDs, 4 to 6, and answers them.
    let elsewhere = await store.take(ref, 3, 0.5);
    if (elsewhere.status !== 'ok') {
      await refiller.request({ ...ref, gen: elsewhere.gen, seg: elsewhere.seg, urgent: true });
      elsewhere = await store.take(ref, 3, 0.5);
    }
    assert.deepEqual(elsewhere.ranges, [[4, 6]]);
    // A request issued now can only be refused: every ID left below the limit is older than it.
    const w = c.take(1);
    await sleep(5);
    release();
    await assert.rejects(a, (e: IdmintError) => e.code === 'ID_SPACE_EXHAUSTED');
    await assert.rejects(w, (e: IdmintError) => e.code === 'ID_SPACE_EXHAUSTED', 'a request got an ID taken before it arrived');
  });
});
