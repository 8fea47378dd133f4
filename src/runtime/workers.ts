// The BullMQ side of a node: a serving node renews its worker-id leases from a queue of its
// own and takes part in the janitor; any node with REFILL_CONCURRENCY above 0 runs a refill
// worker (`idmint worker` runs only that).
import type { Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { startLeaseWorkers, type LeaseWorkers } from '../consumer/lease-worker.js';
import { startRefillWorker } from '../consumer/refill-worker.js';
import type { Metrics } from '../metrics/metrics.js';
import { LeaseScheduler } from '../producer/lease-scheduler.js';
import { watchJanitor, type JanitorWatchdog } from '../producer/janitor-watchdog.js';
import { watchRenewals, type RenewalWatchdog } from '../producer/renewal-watchdog.js';
import type { LeaseManager } from '../service/lease-manager.js';
import type { CountersRepo } from '../store/mysql/counters-repo.js';
import type { TagsRepo } from '../store/mysql/tags-repo.js';
import type { Keys } from '../store/redis/keys.js';
import type { LeaseStore } from '../store/redis/leases.js';
import type { SegmentStore } from '../store/redis/segments.js';
import type { Connections } from './connect.js';

export interface NodeWorkers {
  readonly leaseScheduler?: LeaseScheduler;
  /** Schedules the lease renewals again when they stop arriving. */
  readonly renewalWatchdog?: RenewalWatchdog;
  /** Schedules the shared janitor again when its schedule stopped. */
  readonly janitorWatchdog?: JanitorWatchdog;
  readonly leaseWorkers?: LeaseWorkers;
  readonly refillWorker?: Worker;
}

export interface WorkerDeps {
  readonly config: Config;
  readonly conns: Connections;
  readonly keys: Keys;
  readonly leases: LeaseManager;
  readonly leaseStore: LeaseStore;
  readonly tags: TagsRepo;
  readonly counters: CountersRepo;
  readonly segments: SegmentStore;
  readonly metrics: Metrics;
  readonly log: Logger;
}

export async function startWorkers(deps: WorkerDeps): Promise<NodeWorkers> {
  const { config, conns, keys, log } = deps;
  let leaseScheduler: LeaseScheduler | undefined;
  let leaseWorkers: LeaseWorkers | undefined;
  let renewalWatchdog: RenewalWatchdog | undefined;
  let janitorWatchdog: JanitorWatchdog | undefined;
  if (config.serveHttp) {
    const renewEveryMs = Math.floor(config.leaseTtlMs / 3);
    leaseScheduler = new LeaseScheduler(
      conns.queueConn,
      keys.queuePrefix(),
      config.nodeId,
      renewEveryMs,
      config.janitorEveryMs,
      (err) => log.debug({ err: err.message }, 'lease queue error'),
    );
    await leaseScheduler.start();
    leaseWorkers = startLeaseWorkers({
      connection: conns.workerConn,
      redis: conns.redis,
      prefix: keys.queuePrefix(),
      nodeId: config.nodeId,
      leases: deps.leases,
      store: deps.leaseStore,
      log,
    });
    await deps.leaseStore.heartbeat(config.nodeId, config.leaseTtlMs * 2);
    renewalWatchdog = watchRenewals(deps.leases, leaseScheduler, renewEveryMs, log);
    janitorWatchdog = watchJanitor(leaseScheduler, deps.leases.events, log);
    // The connection is ready now, so 'ready' fires only on reconnects. A Redis that comes
    // back without its data has forgotten the schedulers: put them back (upsert is idempotent).
    const scheduler = leaseScheduler;
    conns.queueConn.on('ready', () => {
      scheduler.start().catch((err: Error) => log.warn({ err: err.message }, 'could not restore the lease schedulers'));
    });
  }
  const refillWorker =
    config.refillConcurrency > 0
      ? startRefillWorker({
          connection: conns.workerConn,
          prefix: keys.queuePrefix(),
          concurrency: config.refillConcurrency,
          tags: deps.tags,
          counters: deps.counters,
          segments: deps.segments,
          nodeId: config.nodeId,
          log,
          metrics: deps.metrics,
        })
      : undefined;
  return { leaseScheduler, renewalWatchdog, janitorWatchdog, leaseWorkers, refillWorker };
}
