// A look repeated on an interval, at most one in flight: the watchdogs' way of looking
// (renewal-watchdog.ts, janitor-watchdog.ts). A tick while the last look's work is pending is
// skipped; stopping clears the interval at once and settles once the work in flight has, so
// nothing a look started outlives the stop (at shutdown, before what it would put back is
// removed). The timer does not keep the process alive.

export interface Looks {
  /** No more looks, at once; settles once the work of a look in flight has. */
  stop(): Promise<void>;
}

/**
 * Calls `look` every `everyMs`; a look that starts work returns its promise, which must handle
 * its own failures (a rejection is dropped here, as a backstop), and no look is made until it
 * settles.
 */
export function lookEvery(everyMs: number, look: () => Promise<unknown> | undefined): Looks {
  let working: Promise<void> | undefined;
  const done = () => {
    working = undefined;
  };
  const timer = setInterval(() => {
    if (working !== undefined) return;
    const work = look();
    if (work !== undefined) working = work.then(done, done);
  }, everyMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await working;
    },
  };
}
