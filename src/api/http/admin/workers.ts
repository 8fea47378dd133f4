// Admin view of the worker-id pools: every space (worker-id width) with its live leases, and
// this process's own leases and clock events.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../runtime/runtime.js';

export async function adminWorkerRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;
  app.get('/v1/admin/workers', async () => {
    const spaces = [];
    for (const { bits, leases } of await rt.adminReads.workerSpaces()) {
      const size = 2 ** bits;
      spaces.push({
        worker_bits: bits,
        size,
        used: leases.length,
        free: size - leases.length,
        leases: leases.map((l) => ({
          worker_id: l.workerId,
          owner: l.owner,
          addr: l.addr,
          expires_in_ms: l.expiresInMs,
          last_timestamp: new Date(l.lastMs).toISOString(),
        })),
      });
    }
    const now = rt.clock.now();
    return {
      spaces,
      this_node: {
        node_id: rt.config.nodeId,
        leases: rt.leases.held().map((l) => ({
          worker_bits: l.bits,
          worker_id: l.workerId,
          valid: now < l.deadlineMs,
          valid_for_ms: Math.max(0, l.deadlineMs - now),
          floor: new Date(l.floorMs).toISOString(),
        })),
        lease_events: rt.leases.events,
        clock_events: rt.ids.clockEvents,
      },
    };
  });
}
