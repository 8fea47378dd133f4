// The janitor job: one scheduler shared by every serving process (each keeps it alive, so it
// runs while any process does; src/producer/janitor-watchdog.ts puts it back when its chain
// broke), scheduled by src/producer/lease-scheduler.ts every JANITOR_EVERY_MS and run by
// src/consumer/janitor-worker.ts. It removes the lease-renewal queues (./lease-renewal.ts) of
// nodes whose heartbeat lapsed: processes that were killed and could not remove their own.
import type { JobSchedulerTemplateOptions } from 'bullmq';

export const JANITOR_QUEUE = 'janitor';

/** The scheduler id and job name. */
export const JANITOR_SCHEDULER = 'janitor';
export const JANITOR_JOB = 'janitor';

export const JANITOR_JOB_OPTIONS: JobSchedulerTemplateOptions = { removeOnComplete: 10, removeOnFail: 50 };

/** What a janitor run returns: the node ids whose lease queues it removed. */
export interface JanitorResult {
  readonly removed: string[];
}
