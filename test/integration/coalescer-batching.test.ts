// suite: single — drives the coalescer with a single-server Redis client on REDIS_URL
// When the coalescer sends a take against a real Redis: a take waits a turn while requests keep
// arriving, for the reply of a take in flight (at most a round trip), and after a reply for the
// requesters it answered to come back (at most COALESCE_LINGER_MS and a round trip), unless
// enough are waiting; a lone request is never held; and every take it sends is counted in
// idmint_takes_total. Requests are answered in arrival order throughout.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Range } from '../../src/core/ranges.js';
import type { RefillProducer } from '../../src/producer/refill-producer.js';
import { Coalescer } from '../../src/service/coalescer.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { SegmentStore, type SegmentRef, type TakeResult } from '../../src/store/redis/segments.js';
import { openCoalescerRig, Refiller, silent, SlowStore } from '../helpers/coalescer-rig.js';

describe('coalescer: pipelined takes on a real Redis', () => {
  const { store, fresh, coalescer } = openCoalescerRig();

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
    assert.deepEqual(
      await inFlight(held, 3),
      [1, 1, 3],
      'three requests while a take was in flight: one take once its reply is back',
    );
    const piped = make(32, 0);
    await piped.take(1);
    assert.deepEqual(
      await inFlight(piped, 3),
      [4, 1, 1, 1, 1],
      'COALESCE_HOLD_RTT 0: each turn sends its own take at once',
    );
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
      return { sizes: sizes.slice(1), waited, lingered, rtt, secondSentAt: sentAt[1] };
    };
    /**
     * cycle() with no one coming back, the timers armed meanwhile recorded as armed (their
     * delay) and when each fired, not timed: a busy machine fires timers late, and a timer armed
     * late in a turn of the event loop fires early by as much (libuv counts from the turn's
     * start), so the time from the reply to the next take says less than which timer sent it.
     */
    const timedCycle = async (c: Coalescer, group: number, waiting: number) => {
      const armed: number[] = [];
      const firedAt: number[] = [];
      const realSetTimeout = globalThis.setTimeout;
      globalThis.setTimeout = ((fn: () => void, ms?: number) => {
        armed.push(ms ?? 0);
        return realSetTimeout(() => {
          firedAt.push(performance.now());
          fn();
        }, ms);
      }) as typeof setTimeout;
      try {
        return { ...(await cycle(c, group, waiting)), armed, firedAt };
      } finally {
        globalThis.setTimeout = realSetTimeout;
      }
    };
    /** The next take went once the one timer armed fired, and not before. */
    const sentByTimer = (r: Awaited<ReturnType<typeof timedCycle>>) =>
      r.firedAt.length === 1 && r.secondSentAt >= r.firedAt[0];

    const lingering = await make(20);
    assert.deepEqual(
      (await cycle(lingering, 3, 1, 5)).sizes,
      [4],
      'the one waiting and the three answered, back 5 ms later, share one take',
    );
    assert.deepEqual(
      (await cycle(lingering, 2, 3, 5)).sizes,
      [5],
      'also when more were waiting than the take answered',
    );
    const alone = await timedCycle(lingering, 3, 1);
    assert.deepEqual(alone.sizes, [1], 'nobody came back: the waiting request went alone');
    assert.deepEqual(alone.armed, [20], `one timer, of COALESCE_LINGER_MS: ${alone.armed.join(', ')}`);
    assert.ok(sentByTimer(alone), `it was sent once that timer fired (${alone.waited.toFixed(1)} ms after the reply)`);
    assert.deepEqual(
      (await cycle(lingering, 1, 1, 5)).sizes,
      [1, 1],
      'a take that served one request: the next goes at once',
    );
    rttMs = 10;
    await make(20).then(async (c) => {
      const r = await timedCycle(c, 3, 1);
      const linger = Math.min(20, r.rtt);
      assert.ok(r.rtt >= 9, `the round trip measured is the store's (10 ms): ${r.rtt.toFixed(1)} ms`);
      assert.deepEqual(
        r.armed,
        [linger],
        `one timer, for at most one round trip when that is shorter than 20 ms: ${r.armed.join(', ')}`,
      );
      assert.ok(sentByTimer(r), `sent once that timer fired (${r.waited.toFixed(1)} ms after the reply)`);
    });
    rttMs = 30;
    assert.deepEqual(
      (await cycle(await make(0), 3, 1, 5)).sizes,
      [1, 3],
      'COALESCE_LINGER_MS 0: the waiting request goes at once',
    );
    assert.deepEqual(
      (await cycle(await make(20, 3), 3, 3, 5)).sizes,
      [3, 3],
      'as many waiting as COALESCE_HOLD: sent at once',
    );
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
});
