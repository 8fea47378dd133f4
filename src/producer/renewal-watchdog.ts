// Lease renewals come as BullMQ jobs, each iteration of the job scheduler adding the next. That
// chain can break and stay broken: BullMQ does not add the next iteration when adding it fails
// with anything but a connection error (it emits an error and carries on), and a Redis failed
// over to a replica that had not received the delayed job, or restored from a snapshot taken
// before it, may have lost the job while keeping the scheduler's record. Then nothing renews the
// leases: they lapse (the process refuses snowflake IDs with LEASE_LOST), its heartbeat goes,
// and another process's janitor removes its queue. The watchdog looks every quarter of the
// renewal interval; once no renewal has started for one and a half intervals, it renews at once
// (joining a renewal in flight) and schedules the renewals again (an upsert: harmless when the
// chain was only late), counted as the lease event `rescheduled`. Leases last three intervals,
// so they are renewed before they lapse.
import type { Logger } from 'pino';
import type { LeaseManager } from '../service/lease-manager.js';
import type { LeaseScheduler } from './lease-scheduler.js';
import { lookEvery, type Looks } from './look-every.js';

/** How late a renewal may be, in renewal intervals, before the watchdog steps in. */
export const LATE_RENEWAL_INTERVALS = 1.5;

/**
 * Its stop settles once a scheduling in flight has (before the lease schedules are removed at
 * shutdown, which it would otherwise put back).
 */
export type RenewalWatchdog = Looks;

export function watchRenewals(
  leases: Pick<LeaseManager, 'renewAll' | 'renewals' | 'events'>,
  scheduler: Pick<LeaseScheduler, 'start'>,
  everyMs: number,
  log: Logger,
): RenewalWatchdog {
  // When a renewal was last seen to start, on the monotonic clock (a wall clock set back must
  // not hide a broken chain); from the watchdog's start, so a process slow to start is not late.
  let seen = leases.renewals();
  let seenAt = performance.now();
  // No look while a renewal and scheduling it started are in flight (lookEvery).
  const look = () => {
    const now = performance.now();
    const count = leases.renewals();
    if (count !== seen) {
      seen = count;
      seenAt = now;
    }
    const late = now - seenAt;
    if (late < everyMs * LATE_RENEWAL_INTERVALS) return undefined;
    leases.events.rescheduled++;
    log.warn(
      { lateMs: Math.round(late), everyMs },
      'lease renewals stopped arriving: renewing now and scheduling them again',
    );
    return Promise.allSettled([leases.renewAll(), scheduler.start()]).then(([, scheduled]) => {
      if (scheduled.status === 'rejected')
        log.warn({ err: (scheduled.reason as Error).message }, 'could not schedule the lease renewals again');
    });
  };
  return lookEvery(Math.max(1, Math.floor(everyMs / 4)), look);
}
