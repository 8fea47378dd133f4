// Debug switches for fault campaigns (scripts/chaos), registered only in test mode
// (TEST_MODE=1, which the config allows only on a loopback HOST) and behind the admin token:
// shift this process's clock, make its worker-id leases expire now, and end a Redis connection
// from inside for the connection supervisor to open again (service/debug-switches.ts).
import type { FastifyInstance } from 'fastify';
import { ShiftedClock } from '../../../core/clock.js';
import { IdmintError } from '../../../errors.js';
import type { Services } from '../../../runtime/runtime.js';

/** Largest shift accepted either way: one day. */
const MAX_SHIFT_MS = 86_400_000;

export async function debugRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;
  const shifted = (): ShiftedClock => {
    if (!(rt.clock instanceof ShiftedClock))
      throw new IdmintError('INVALID_ARGUMENT', 'this process runs on an injected clock that cannot be shifted');
    return rt.clock;
  };
  const clockState = () => ({
    offset_ms: shifted().offsetMs,
    now: new Date(rt.clock.now()).toISOString(),
    system_now: new Date().toISOString(),
  });

  app.get('/v1/debug/clock', async () => clockState());

  // Sets the offset (not adds to it): {"offset_ms": -1500} puts the clock 1.5 s behind the
  // system clock, {"offset_ms": 0} back on it. Moving the offset down is a step backwards.
  app.post<{ Body: { offset_ms: number } }>(
    '/v1/debug/clock',
    {
      schema: {
        body: {
          type: 'object',
          required: ['offset_ms'],
          additionalProperties: false,
          properties: { offset_ms: { type: 'integer', minimum: -MAX_SHIFT_MS, maximum: MAX_SHIFT_MS } },
        },
      },
    },
    async (req) => {
      const clock = shifted();
      const before = clock.offsetMs;
      clock.setOffset(req.body.offset_ms);
      rt.log.warn({ from: before, to: req.body.offset_ms }, 'debug: clock offset changed');
      return { previous_offset_ms: before, ...clockState() };
    },
  );

  // The worker-id leases this process holds lapse now, as if its renewals had stopped for a
  // TTL: the lease keys are deleted in Redis (the ids are free for any process) and the local
  // deadlines set to the past. The process issues no snowflake ID until it holds a lease again,
  // and the new lease starts above the horizon recorded for the id (last:<id>), so nothing it
  // or the id's next holder issues can repeat what was issued under the old lease.
  app.post<{ Body: { worker_bits?: number } }>(
    '/v1/debug/lease/expire',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { worker_bits: { type: 'integer', minimum: 1, maximum: 63 } },
        },
      },
    },
    async (req) => {
      const expired = (await rt.debugSwitches.expireLeases(req.body?.worker_bits)).map((lease) => ({
        worker_bits: lease.bits,
        worker_id: lease.workerId,
        key_deleted: lease.keyDeleted,
      }));
      rt.log.warn({ expired }, 'debug: worker-id leases expired');
      return { expired };
    },
  );

  // Ends one of this process's connections to the default Redis (of `role`, else one drawn at
  // random; every one of `role` with `all`) without idmint closing it: the supervisor logs it,
  // counts it and opens it again.
  app.post<{ Body: { role?: string; all?: boolean } }>(
    '/v1/debug/redis/end',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { role: { type: 'string', minLength: 1, maxLength: 64 }, all: { type: 'boolean' } },
        },
      },
    },
    async (req) => {
      const roles = await rt.debugSwitches.endRedisConnections(req.body?.role, req.body?.all === true);
      rt.log.warn({ roles }, 'debug: Redis connections ended from inside');
      return { role: roles[0], ended: roles.length };
    },
  );
}
