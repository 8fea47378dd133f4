// The janitor watchdog's decision, against a scheduler whose next run the test sets: a schedule
// whose next run is ahead, or behind by less than an interval and a half, is left alone however
// many times the watchdog looks; one further behind, or gone, is scheduled again and counted.
// The looks are counted, not timed: the checks wait for looks to happen, never for time to pass.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { LATE_JANITOR_INTERVALS, watchJanitor } from '../../src/producer/janitor-watchdog.js';
import { waitFor } from '../helpers/fault-load.js';

const EVERY_MS = 5;

/** A scheduler whose next run is `next(now)`; counts the looks and the schedulings. */
function fakeScheduler(now: () => number) {
  const state = { looks: 0, scheduled: 0, next: (_now: number): number | undefined => _now };
  return {
    state,
    janitorEveryMs: EVERY_MS,
    async janitorNext() {
      state.looks++;
      return state.next(now());
    },
    async scheduleJanitor() {
      state.scheduled++;
    },
  };
}

/** Resolves once `done()` holds, checking every millisecond. */
const until = (done: () => boolean, what: string) => waitFor(what, done, 10_000, 1);

describe('janitor watchdog', () => {
  it('leaves a schedule on time alone, and schedules again one that is gone or late', async () => {
    const now = () => 1_000_000;
    const scheduler = fakeScheduler(now);
    const events = { janitor_rescheduled: 0 };
    const watchdog = watchJanitor(scheduler, events, pino({ level: 'silent' }), now);
    try {
      const { state } = scheduler;
      const late = EVERY_MS * LATE_JANITOR_INTERVALS;
      // On time: ahead, due now, and late by just under the margin.
      for (const offset of [EVERY_MS, 0, -(late - 0.001)]) {
        state.next = (t) => t + offset;
        const looks = state.looks;
        await until(() => state.looks >= looks + 3, 'three looks');
        assert.equal(state.scheduled, 0, `scheduled again with its next run ${offset} ms from now`);
      }
      assert.equal(events.janitor_rescheduled, 0);

      // Late by the margin: scheduled again, and counted.
      state.next = (t) => t - late;
      await until(() => state.scheduled >= 1, 'a late schedule scheduled again');
      assert.ok(events.janitor_rescheduled >= 1);

      // Gone: scheduled again.
      const before = state.scheduled;
      state.next = () => undefined;
      await until(() => state.scheduled > before, 'a missing schedule scheduled again');
      assert.equal(events.janitor_rescheduled, state.scheduled);
    } finally {
      await watchdog.stop();
    }
  });
});
