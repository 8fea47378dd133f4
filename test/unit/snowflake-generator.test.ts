// SnowflakeGenerator on a hand-moved clock and a stub lease source: IDs strictly increase; a
// small step back is waited out and a large one refused with CLOCK_BACKWARDS; a used-up
// sequence waits for the next tick; nothing is issued at or past the lease deadline, nor at
// or before the lease floor; a new lease generation restarts from its own floor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock, type Clock } from '../../src/core/clock.js';
import { DEFAULT_EPOCH_MS, PRESETS, decode, encode, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { IdmintError } from '../../src/errors.js';
import type { Lease, LeaseManager } from '../../src/service/lease-manager.js';
import { SnowflakeGenerator } from '../../src/service/snowflake-generator.js';
import { assertIncreasing } from '../../tools/order.js';
import { rejectsWith } from '../helpers/answers.js';

const L = PRESETS.snowflake;
/** A wall-clock ms well inside the default layout's range. */
const T = Date.UTC(2025, 0, 1);
const units = (ms: number) => ms - DEFAULT_EPOCH_MS;
const MAX_BACK = 10;

function lease(over: Partial<Lease> = {}): Lease {
  return {
    bits: 10,
    workerId: 7,
    floorMs: 0,
    deadlineMs: Number.POSITIVE_INFINITY,
    generation: 1,
    issuedMaxMs: 0,
    unguardedFloorMs: 0,
    ...over,
  };
}

/** A lease source that hands out the leases in `seq` in turn (the last one from then on). */
function leasesOf(...seq: (Lease | Error)[]): LeaseManager & { calls: number } {
  const src = {
    calls: 0,
    async get(bits: number): Promise<Lease> {
      const l = seq[Math.min(src.calls, seq.length - 1)];
      src.calls++;
      if (l instanceof Error) throw l;
      assert.equal(bits, l.bits, 'the generator asks for its layout width');
      return l;
    },
  };
  return src as unknown as LeaseManager & { calls: number };
}

/** A promise's state without waiting for it. */
function track<T>(p: Promise<T>): { readonly done: boolean; readonly p: Promise<T> } {
  const s = { done: false, p };
  p.then(
    () => (s.done = true),
    () => (s.done = true),
  );
  return s;
}

const parts = (l: SnowflakeLayout, ids: bigint[]) =>
  ids.map((id) => {
    const d = decode(l, id);
    return [d.time, d.workerId, d.sequence];
  });

describe('SnowflakeGenerator', () => {
  it('issues strictly increasing IDs: next sequence within a tick, sequence 0 on a new tick', async () => {
    const clock = new ManualClock(T);
    const l = lease();
    const g = new SnowflakeGenerator(L, leasesOf(l), clock, MAX_BACK);
    const a = await g.take(5);
    assert.deepEqual(
      parts(L, a),
      [0, 1, 2, 3, 4].map((s) => [units(T), 7, s]),
    );
    const b = await g.take(1);
    assert.deepEqual(parts(L, b), [[units(T), 7, 5]]);
    clock.advance(1);
    const c = await g.take(3);
    assert.deepEqual(
      parts(L, c),
      [0, 1, 2].map((s) => [units(T + 1), 7, s]),
    );
    clock.advance(250);
    const d = await g.take(2);
    assert.deepEqual(parts(L, d), [
      [units(T + 251), 7, 0],
      [units(T + 251), 7, 1],
    ]);
    assertIncreasing([...a, ...b, ...c, ...d]);
    assert.equal(l.issuedMaxMs, T + 251, 'the lease records the latest ms issued at');
    assert.deepEqual(g.events, { backwards: 0, waits: 0 });
  });

  it('waits out a step back within the bound until the clock catches up', async () => {
    const clock = new ManualClock(T);
    const g = new SnowflakeGenerator(L, leasesOf(lease()), clock, MAX_BACK);
    const first = await g.take(2);
    clock.set(T - 5);
    const t = track(g.take(1));
    await sleep(60);
    assert.equal(t.done, false, 'issued while the clock was behind the last issued time');
    assert.ok(g.events.waits >= 1);
    assert.equal(g.events.backwards, 0);
    clock.set(T); // the clock catches up (moved from this task while take() waits)
    const [id] = await t.p;
    assert.deepEqual(parts(L, [id]), [[units(T), 7, 2]], 'continues the tick it left');
    assertIncreasing([...first, id]);

    // Exactly at the bound is still waited out.
    clock.set(T - MAX_BACK);
    const u = track(g.take(1));
    await sleep(40);
    assert.equal(u.done, false);
    clock.set(T + 3);
    assert.deepEqual(parts(L, await u.p), [[units(T + 3), 7, 0]]);
    assert.equal(g.events.backwards, 0);
  });

  it('refuses a step back beyond the bound with CLOCK_BACKWARDS and issues nothing', async () => {
    const clock = new ManualClock(T);
    const g = new SnowflakeGenerator(L, leasesOf(lease()), clock, MAX_BACK);
    const before = await g.take(3);
    clock.set(T - MAX_BACK - 1);
    const started = Date.now();
    const e = await rejectsWith(g.take(1), IdmintError, 'CLOCK_BACKWARDS');
    assert.ok(Date.now() - started < 1000, 'answered at once, without waiting for the clock');
    assert.equal(e.status, 503);
    assert.equal(e.retryAfter, 1);
    assert.match(e.message, /behind the last issued time/);
    assert.equal(g.events.backwards, 1);

    clock.set(T - 5000);
    const far = await rejectsWith(g.take(10), IdmintError, 'CLOCK_BACKWARDS');
    assert.equal(far.retryAfter, 5, 'Retry-After covers the time until the clock catches up');
    assert.equal(g.events.backwards, 2);

    // Once the clock is back, IDs continue above everything issued before.
    clock.set(T);
    const after = await g.take(2);
    assert.deepEqual(parts(L, after), [
      [units(T), 7, 3],
      [units(T), 7, 4],
    ]);
    assertIncreasing([...before, ...after]);
  });

  it('waits for the next tick when the sequence is used up', async () => {
    const small: SnowflakeLayout = { ...L, workerBits: 10, seqBits: 2 }; // 4 IDs per tick
    const clock = new ManualClock(T);
    const g = new SnowflakeGenerator(small, leasesOf(lease()), clock, MAX_BACK);
    const t = track(g.take(10));
    await sleep(50);
    assert.equal(t.done, false, 'more than 4 IDs in one frozen tick');
    assert.ok(g.events.waits >= 1);
    clock.advance(1);
    await sleep(50);
    assert.equal(t.done, false, 'more than 8 IDs in two frozen ticks');
    clock.advance(1);
    const ids = await t.p;
    assert.deepEqual(parts(small, ids), [
      [units(T), 7, 0],
      [units(T), 7, 1],
      [units(T), 7, 2],
      [units(T), 7, 3],
      [units(T + 1), 7, 0],
      [units(T + 1), 7, 1],
      [units(T + 1), 7, 2],
      [units(T + 1), 7, 3],
      [units(T + 2), 7, 0],
      [units(T + 2), 7, 1],
    ]);
    assertIncreasing(ids);
    assert.equal(g.events.backwards, 0);
  });

  it('stops issuing under a lease once the clock reaches its deadline', async () => {
    // Every read of this clock moves it 1 ms on: the lease runs out in the middle of a batch.
    let ms = T;
    const ticking: Clock = { now: () => ms++ };
    const a = lease({ workerId: 1, deadlineMs: T + 3, generation: 1 });
    const b = lease({ workerId: 2, floorMs: T + 3, generation: 2 });
    const src = leasesOf(a, b);
    const g = new SnowflakeGenerator(L, src, ticking, MAX_BACK);
    const ids = await g.take(6);
    const p = parts(L, ids);
    const underA = p.filter(([, w]) => w === 1);
    assert.deepEqual(
      underA,
      [
        [units(T), 1, 0],
        [units(T + 1), 1, 0],
        [units(T + 2), 1, 0],
      ],
      'issued under the old lease up to its deadline only',
    );
    assert.ok(
      p.slice(3).every(([time, w]) => w === 2 && time > units(T + 3)),
      JSON.stringify(p),
    );
    assert.equal(src.calls, 2, 'asked for a lease again at the deadline');
    assertIncreasing(ids);
  });

  it('issues nothing when the lease is past its deadline and none can be had', async () => {
    const clock = new ManualClock(T);
    const expired = lease({ deadlineMs: T });
    const src = leasesOf(expired, new IdmintError('LEASE_LOST', 'no worker-id lease'));
    const g = new SnowflakeGenerator(L, src, clock, MAX_BACK);
    await rejectsWith(g.take(1), IdmintError, 'LEASE_LOST');
    assert.equal(src.calls, 2);
    assert.equal(expired.issuedMaxMs, 0, 'nothing was issued under the expired lease');

    // One ms before the deadline still issues.
    const ok = lease({ deadlineMs: T + 1 });
    assert.equal((await new SnowflakeGenerator(L, leasesOf(ok), clock, MAX_BACK).take(1)).length, 1);
  });

  it('never issues at or before the lease floor', async () => {
    // Floor in the past: issue now.
    const clock = new ManualClock(T);
    const past = await new SnowflakeGenerator(L, leasesOf(lease({ floorMs: T - 100 })), clock, MAX_BACK).take(1);
    assert.deepEqual(parts(L, past), [[units(T), 7, 0]]);

    // Floor at this very ms: the tick is the earlier holder's; wait for the next one.
    const g0 = new SnowflakeGenerator(L, leasesOf(lease({ floorMs: T })), clock, MAX_BACK);
    const t0 = track(g0.take(1));
    await sleep(40);
    assert.equal(t0.done, false, 'issued at the floor itself');
    clock.advance(1);
    assert.deepEqual(parts(L, await t0.p), [[units(T + 1), 7, 0]]);

    // Floor a little ahead (within the bound): wait until strictly after it.
    clock.set(T);
    const g1 = new SnowflakeGenerator(L, leasesOf(lease({ floorMs: T + 5 })), clock, MAX_BACK);
    const t1 = track(g1.take(2));
    await sleep(40);
    assert.equal(t1.done, false);
    clock.set(T + 5);
    await sleep(40);
    assert.equal(t1.done, false, 'issued at the floor itself');
    clock.set(T + 6);
    assert.deepEqual(parts(L, await t1.p), [
      [units(T + 6), 7, 0],
      [units(T + 6), 7, 1],
    ]);
    assert.equal(g1.events.backwards, 0);

    // Floor far ahead (an earlier holder's horizon): UNAVAILABLE with a Retry-After, no ID.
    clock.set(T);
    const l2 = lease({ floorMs: T + 2500 });
    const g2 = new SnowflakeGenerator(L, leasesOf(l2), clock, MAX_BACK);
    const started = Date.now();
    const e = await rejectsWith(g2.take(1), IdmintError, 'UNAVAILABLE');
    assert.ok(Date.now() - started < 1000, 'answered at once');
    assert.equal(e.status, 503);
    assert.equal(e.retryAfter, 3);
    assert.match(e.message, /worker id 7 may be used only after/);
    assert.equal(g2.events.backwards, 0, 'a floor is not a clock fault');
    clock.set(T + 2501);
    assert.deepEqual(parts(L, await g2.take(1)), [[units(T + 2501), 7, 0]]);
  });

  it('restarts from the new floor when the lease generation changes', async () => {
    const clock = new ManualClock(T);
    const gen1 = lease({ workerId: 1, generation: 1 });
    let current: Lease = gen1;
    const src = { get: async () => current } as unknown as LeaseManager;
    const g = new SnowflakeGenerator(L, src, clock, MAX_BACK);
    assert.deepEqual(parts(L, await g.take(3)), [
      [units(T), 1, 0],
      [units(T), 1, 1],
      [units(T), 1, 2],
    ]);

    // Another worker id whose floor is below what this generator issued at: its own sequence
    // space, so it starts the current tick at sequence 0 (the old state would give seq 3).
    current = lease({ workerId: 2, generation: 2, floorMs: T - 50 });
    assert.deepEqual(parts(L, await g.take(2)), [
      [units(T), 2, 0],
      [units(T), 2, 1],
    ]);

    // A new worker id whose floor lies ahead: wait past it, even though the clock is past
    // the old state.
    current = lease({ workerId: 3, generation: 3, floorMs: T + 4 });
    clock.set(T + 1);
    const t = track(g.take(1));
    await sleep(40);
    assert.equal(t.done, false, 'issued at or before the new floor');
    clock.set(T + 5);
    assert.deepEqual(parts(L, await t.p), [[units(T + 5), 3, 0]]);
    assert.equal(g.events.backwards, 0);
  });

  it('answers ID_SPACE_EXHAUSTED past the layout range and CLOCK_BACKWARDS before its epoch', async () => {
    const l: SnowflakeLayout = { epochMs: T, unit: 'ms', timeBits: 20, workerBits: 10, seqBits: 12 };
    const clock = new ManualClock(T + 2 ** 20 - 1);
    const g = new SnowflakeGenerator(l, leasesOf(lease()), clock, MAX_BACK);
    const last = await g.take(1);
    assert.equal(last[0], encode(l, 2 ** 20 - 1, 7, 0));
    clock.advance(1);
    const e = await rejectsWith(g.take(1), IdmintError, 'ID_SPACE_EXHAUSTED');
    assert.equal(e.status, 409);
    assert.match(e.message, new RegExp(new Date(T + 2 ** 20).toISOString().replace(/\./g, '\\.')));

    const early = new SnowflakeGenerator(l, leasesOf(lease()), new ManualClock(T - 1), MAX_BACK);
    await rejectsWith(early.take(1), IdmintError, 'CLOCK_BACKWARDS');
  });

  it('issues whole seconds in a seconds layout and waits for the next second when a second is used up', async () => {
    const l: SnowflakeLayout = { ...PRESETS.uid, seqBits: 1 }; // 2 IDs per second
    const clock = new ManualClock(T + 400);
    const g = new SnowflakeGenerator(l, leasesOf(lease({ bits: 22 })), clock, MAX_BACK);
    const t = track(g.take(3));
    await sleep(40);
    assert.equal(t.done, false);
    clock.set(T + 1000);
    const ids = await t.p;
    const s = (T - DEFAULT_EPOCH_MS) / 1000;
    assert.deepEqual(parts(l, ids), [
      [s, 7, 0],
      [s, 7, 1],
      [s + 1, 7, 0],
    ]);
  });
});

describe('SnowflakeGenerator.takeOneNow (the synchronous path of the HTTP fast path)', () => {
  /** A lease source whose current() answers the lease while `held` says so. */
  function live(l: Lease) {
    const src = { held: true, get: async () => l, current: () => (src.held ? l : undefined) };
    return src;
  }

  it('issues what take() would, and declines whenever take() has to decide', async () => {
    const clock = new ManualClock(T);
    const l = lease({ deadlineMs: T + 1000 });
    const src = live(l);
    const g = new SnowflakeGenerator(L, src as unknown as LeaseManager, clock, MAX_BACK);
    assert.equal(g.takeOneNow(), undefined, 'no lease generation adopted yet: take() does that');
    const [first] = await g.take(1);
    const a = g.takeOneNow()!;
    assert.deepEqual(
      parts(L, [first, a]),
      [
        [units(T), 7, 0],
        [units(T), 7, 1],
      ],
      'the next sequence of the same tick',
    );
    clock.advance(1);
    const b = g.takeOneNow()!;
    assert.deepEqual(parts(L, [b]), [[units(T + 1), 7, 0]]);
    // Sequence used up within the tick: take() would wait for the next one.
    const maxSeq = 2 ** L.seqBits - 1;
    for (let i = 1; i <= maxSeq; i++) assert.ok(g.takeOneNow() !== undefined);
    assert.equal(g.takeOneNow(), undefined, 'used-up tick: declined');
    clock.advance(1);
    const c = g.takeOneNow()!;
    assert.ok(c > b);
    // Clock behind the last issued time: declined (take() waits or refuses).
    clock.set(T - 5);
    assert.equal(g.takeOneNow(), undefined);
    clock.set(T + 3);
    assert.ok(g.takeOneNow()! > c);
    // No lease at hand, or past the deadline: declined.
    src.held = false;
    assert.equal(g.takeOneNow(), undefined);
    src.held = true;
    clock.set(T + 1000);
    assert.equal(g.takeOneNow(), undefined, 'at the lease deadline');
  });

  it('declines a new lease generation until take() has adopted its floor', async () => {
    const clock = new ManualClock(T);
    let l = lease({ deadlineMs: T + 1000 });
    const src = { get: async () => l, current: () => l };
    const g = new SnowflakeGenerator(L, src as unknown as LeaseManager, clock, MAX_BACK);
    await g.take(1);
    l = lease({ generation: 2, workerId: 9, floorMs: T + 5, deadlineMs: T + 1000 });
    assert.equal(g.takeOneNow(), undefined);
    clock.set(T + 6);
    const [id] = await g.take(1);
    assert.deepEqual(parts(L, [id]), [[units(T + 6), 9, 0]]);
    assert.deepEqual(parts(L, [g.takeOneNow()!]), [[units(T + 6), 9, 1]]);
  });
});
