// The period warmer's timer (src/service/period-warmer.ts): a pass that fails is logged and the
// next one runs, never an unhandled rejection that would end the process.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from 'pino';
import { systemClock } from '../../src/core/clock.js';
import { PeriodWarmer, type PeriodWarmerDeps } from '../../src/service/period-warmer.js';

describe('period warmer', () => {
  it('logs a failed pass and goes on with the next', async () => {
    let passes = 0;
    const warnings: string[] = [];
    let seen: (() => void) | undefined;
    // The warmer's timer is unref'd: a bound of 10 s (ref'd) keeps the test's process waiting.
    let guard: NodeJS.Timeout | undefined;
    const twice = new Promise<void>((resolve, reject) => {
      seen = resolve;
      guard = setTimeout(() => reject(new Error('no second pass within 10 s')), 10_000);
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const log = {
      warn: (fields: { err?: string }, msg: string) => {
        warnings.push(`${msg}: ${fields.err}`);
        if (warnings.length >= 2) seen?.();
      },
      info: () => undefined,
    } as unknown as Logger;
    const deps = {
      sources: {
        held: () => {
          passes++;
          throw new Error('boom');
        },
      },
      clock: systemClock,
      log,
    } as unknown as PeriodWarmerDeps;
    const warmer = new PeriodWarmer(deps);
    try {
      warmer.start(30_000);
      await twice;
    } finally {
      clearTimeout(guard);
      warmer.stop();
      process.off('unhandledRejection', onUnhandled);
    }
    assert.ok(passes >= 2);
    assert.deepEqual(warnings.slice(0, 2), ['rule period warming failed: boom', 'rule period warming failed: boom']);
    assert.deepEqual(unhandled, []);
  });
});
