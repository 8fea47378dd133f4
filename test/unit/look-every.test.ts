// lookEvery, the watchdogs' way of looking: no look while the work a look started is pending,
// looks again once it settles (a rejection included), and a stop that settles only once the
// work in flight has and after which nothing is looked at. Every check waits for ticks of a
// witness on the same interval, counted, never for time to pass.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lookEvery } from '../../src/producer/look-every.js';
import { waitFor } from '../helpers/fault-load.js';

const EVERY_MS = 2;

/** A promise and the functions that settle it. */
function held() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Ticks of a look that starts nothing, on the same interval: how a test sees time pass by looks. */
function witness() {
  const state = { ticks: 0 };
  const looks = lookEvery(EVERY_MS, () => {
    state.ticks++;
    return undefined;
  });
  return {
    /** Resolves once `n` more ticks came. */
    ticks: (n: number) => {
      const from = state.ticks;
      return waitFor(`${n} ticks`, () => state.ticks >= from + n, 10_000, 1);
    },
    stop: () => looks.stop(),
  };
}

/**
 * A looker whose every look returns the pending work `state.work` (counted in `state.looks`), a
 * witness beside it, once its first look came.
 */
async function started() {
  const clock = witness();
  const state = { looks: 0, work: held() };
  const looker = lookEvery(EVERY_MS, () => {
    state.looks++;
    return state.work.promise;
  });
  await waitFor('the first look', () => state.looks === 1, 10_000, 1);
  return { clock, state, looker };
}

describe('lookEvery', () => {
  it('makes no look while the work of one is pending, and looks again once it settles', async () => {
    const { clock, state, looker } = await started();
    try {
      await clock.ticks(5);
      assert.equal(state.looks, 1, 'looked again while the work of a look was pending');

      const first = state.work;
      state.work = held();
      first.resolve();
      await waitFor('a look after the work settled', () => state.looks === 2, 10_000, 1);
      await clock.ticks(5);
      assert.equal(state.looks, 2);

      // A rejection is settled too: the looks go on, and nothing is left unhandled.
      const second = state.work;
      state.work = held();
      second.reject(new Error('the work failed'));
      await waitFor('a look after the work failed', () => state.looks === 3, 10_000, 1);
    } finally {
      state.work.resolve();
      await looker.stop();
      await clock.stop();
    }
  });

  it('settles its stop once the work in flight has, and looks at nothing after it', async () => {
    const { clock, state, looker } = await started();
    const { work } = state;
    try {
      let released = false;
      let stoppedBeforeRelease: boolean | undefined;
      const stopping = looker.stop().then(() => {
        stoppedBeforeRelease = !released;
      });
      await clock.ticks(5);
      assert.equal(stoppedBeforeRelease, undefined, 'the stop settled with the work still in flight');
      released = true;
      work.resolve();
      await stopping;
      assert.equal(stoppedBeforeRelease, false);

      await clock.ticks(5);
      assert.equal(state.looks, 1, 'looked after the stop');
    } finally {
      work.resolve();
      await clock.stop();
    }
  });
});
