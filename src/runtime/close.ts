// Taking a node down in order: workers, leases, queues, Redis, MySQL. Every step is bounded by
// SHUTDOWN_TIMEOUT_MS in all (src/shutdown-steps.ts); what a silent store keeps from finishing
// is abandoned, and the connections are dropped in any case. Safe to call twice.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { closeWorker, dropWorker, GRACEFUL_CLOSE_MS } from '../consumer/worker-close.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { LeaseManager } from '../service/lease-manager.js';
import type { PeriodWarmer } from '../service/period-warmer.js';
import { runShutdown } from '../shutdown-steps.js';
import type { Connections } from './connect.js';
import type { NodeWorkers } from './workers.js';
import type { ConnectionSupervisor } from '../store/redis/supervisor.js';

export function closer(
  config: Config,
  conns: Connections,
  supervisor: ConnectionSupervisor,
  workers: NodeWorkers,
  leases: LeaseManager,
  producer: RefillProducer,
  log: Logger,
  periods: PeriodWarmer,
): () => Promise<void> {
  const { leaseWorkers, leaseScheduler, renewalWatchdog, janitorWatchdog, refillWorker } = workers;
  const { redisClients, pool } = conns;
  // Each worker's graceful close gets a share of the bound, so the steps after it keep theirs.
  const gracefulMs = Math.min(GRACEFUL_CLOSE_MS, config.shutdownTimeoutMs / 5);
  const dropped = (workers: string[]) => {
    if (workers.length)
      log.warn(
        { workers, gracefulMs },
        'worker close did not finish in time: dropped, the jobs running left to their locks',
      );
  };
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= (async () => {
      // Connections closed from here on stay closed, including one that ends by itself.
      supervisor.stop();
      periods.stop();
      const { unfinished, ms } = await runShutdown(
        [
          // First: a watchdog's scheduling would put back the lease schedules removed below, and
          // the janitor's looks at its queue, closed below, would fail.
          { name: 'renewal watchdog', run: () => renewalWatchdog?.stop() },
          { name: 'janitor watchdog', run: () => janitorWatchdog?.stop() },
          { name: 'lease workers', run: async () => dropped((await leaseWorkers?.close(gracefulMs)) ?? []) },
          { name: 'lease release', run: () => leases.releaseAll() },
          { name: 'lease schedules', run: () => leaseScheduler?.stop() },
          {
            name: 'refill worker',
            run: async () =>
              refillWorker &&
              dropped((await closeWorker(refillWorker, undefined, gracefulMs)) === 'dropped' ? ['refill worker'] : []),
          },
          { name: 'refill queue', run: () => producer.close() },
          { name: 'redis quit', run: () => Promise.all(redisClients.map((c) => c.quit().catch(() => c.disconnect()))) },
          { name: 'mysql pool', run: () => pool.end() },
          {
            name: 'drop what is left',
            always: true,
            run: async () => {
              for (const client of redisClients) if (client.status !== 'end') client.disconnect();
              await Promise.all([refillWorker && dropWorker(refillWorker), leaseWorkers?.drop()]);
            },
          },
        ],
        config.shutdownTimeoutMs,
        log,
      );
      if (unfinished.length > 0) {
        log.error(
          { unfinished, ms: Math.round(ms), shutdownTimeoutMs: config.shutdownTimeoutMs },
          'shutdown forced: steps did not finish in time',
        );
        throw new Error(`shutdown forced after ${Math.round(ms)} ms: ${unfinished.join(', ')} did not finish`);
      }
    })());
}
