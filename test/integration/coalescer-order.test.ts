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
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdmintError } from '../../src/errors.js';
import { assertServedInOrder, openCoalescerRig, Refiller, SEED, SlowStore } from '../helpers/coalescer-rig.js';

describe('coalescer: pipelined takes on a real Redis', () => {
  const { store, fresh, coalescer, drive } = openCoalescerRig();

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
      if (pipeline > 1)
        assert.ok(slow.maxInFlight >= 2, `takes were not pipelined (at most ${slow.maxInFlight} in flight)`);
      assert.ok(slow.maxInFlight <= pipeline, `${slow.maxInFlight} takes in flight, more than ${pipeline}`);
      // Small segments: the serial loop had its turns (dry or cold takes), and requests still went on.
      assert.ok(
        (slow.statuses.get('dry') ?? 0) + (slow.statuses.get('cold') ?? 0) > 0,
        `statuses seen: ${[...slow.statuses]}`,
      );
      assert.ok((slow.statuses.get('ok') ?? 0) > 0);
    });
  }

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
    assert.ok(
      got > answered,
      `request issued after ${answered} was answered got ${got} (a reply from before the failure)`,
    );
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
    await assert.rejects(
      w,
      (e: IdmintError) => e.code === 'ID_SPACE_EXHAUSTED',
      'a request got an ID taken before it arrived',
    );
  });
});
