// The janitor is one BullMQ job scheduler shared by every serving process, each run adding the
// next. That chain can break as the lease renewals' can (renewal-watchdog.ts): BullMQ does not
// add the next run when adding it fails with a reply error, and a Redis failed over to a
// replica that had not received the delayed job, or restored from a snapshot taken before it,
// may have lost it while keeping the scheduler's record. Then nothing removes the lease queues
// of killed processes, and they pile up in Redis for as long as the deployment runs.
//
// No process can count the janitor's runs (any one of them takes each run), so each looks at
// what every one can see: the scheduler's next run, as BullMQ keeps it in Redis. Once an
// interval it reads it; when the scheduler is gone, or its next run is a full interval and a
// half past (a run taken moves it an interval on), the process schedules the janitor again (an
// upsert: the next run at the next multiple of the interval), counted as the lease event
// `janitor_rescheduled`. A process's own wall clock is compared with the one the schedule was
// set by; only a clock ahead of it by more than that margin would schedule it again early,
// which moves the next run, never drops it.
import type { Logger } from 'pino';
import type { LeaseEvents } from '../service/lease-manager.js';
import type { LeaseScheduler } from './lease-scheduler.js';
import { lookEvery, type Looks } from './look-every.js';

/** How late the janitor's next run may be, in intervals, before a process schedules it again. */
export const LATE_JANITOR_INTERVALS = 1.5;

export type JanitorWatchdog = Looks;

export function watchJanitor(
  scheduler: Pick<LeaseScheduler, 'janitorNext' | 'scheduleJanitor' | 'janitorEveryMs'>,
  events: Pick<LeaseEvents, 'janitor_rescheduled'>,
  log: Logger,
  now: () => number = Date.now,
): JanitorWatchdog {
  const everyMs = scheduler.janitorEveryMs;
  let stopped = false;

  async function look(): Promise<void> {
    const next = await scheduler.janitorNext();
    const lateMs = next === undefined ? undefined : now() - next;
    if (stopped || (lateMs !== undefined && lateMs < everyMs * LATE_JANITOR_INTERVALS)) return;
    events.janitor_rescheduled++;
    log.warn(
      { lateMs: lateMs === undefined ? 'no schedule' : Math.round(lateMs), everyMs },
      "the janitor's schedule stopped: scheduling it again",
    );
    await scheduler.scheduleJanitor();
  }

  const looks = lookEvery(everyMs, () =>
    look().catch((err: Error) => log.debug({ err: err.message }, "could not look at the janitor's schedule")),
  );
  return {
    stop: () => {
      // A look in flight reads the schedule to its end, but schedules nothing.
      stopped = true;
      return looks.stop();
    },
  };
}
