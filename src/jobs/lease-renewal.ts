// The lease-renewal job: each serving process renews its worker-id leases from a queue of its
// own (`lease.<node id>`), scheduled every TTL/3 by src/producer/lease-scheduler.ts and run by
// src/consumer/lease-worker.ts. A process that stops gracefully removes its queue; the janitor
// (./janitor.ts) removes those of killed processes.
import type { JobSchedulerTemplateOptions } from 'bullmq';

export const LEASE_QUEUE_PREFIX = 'lease.';

export const leaseQueueName = (nodeId: string): string => `${LEASE_QUEUE_PREFIX}${nodeId}`;

/** The node id of a lease queue's name, or undefined when the name is not one. */
export const nodeIdOfLeaseQueue = (queue: string): string | undefined =>
  queue.startsWith(LEASE_QUEUE_PREFIX) ? queue.slice(LEASE_QUEUE_PREFIX.length) : undefined;

/** The scheduler id and job name in every lease queue (jobs carry no data: the process renews every lease it holds). */
export const RENEW_SCHEDULER = 'renew';
export const RENEW_JOB = 'renew';

export const RENEW_JOB_OPTIONS: JobSchedulerTemplateOptions = { removeOnComplete: true, removeOnFail: 50 };
