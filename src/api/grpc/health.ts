// The standard gRPC health service (grpc.health.v1.Health, from grpc-health-check) on the gRPC
// listener: Check, Watch and List answer for the server as a whole ("") and for idmint.v1.Ids,
// SERVING while this process is ready (the /readyz checks, src/service/readiness.ts) and
// NOT_SERVING otherwise. Readiness is looked at every HEALTH_POLL_MS; a drain turns both
// NOT_SERVING at once. Closing ends the Watch streams, which would otherwise hold the server
// open until its grace period cuts them.
import type { Server, ServerWritableStream } from '@grpc/grpc-js';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import type { Logger } from 'pino';
import type { Drain } from '../../service/drain.js';
import type { Readiness } from '../../service/readiness.js';

/** How often readiness is looked at for the health service. */
export const HEALTH_POLL_MS = 1000;
/** The names the health service answers for: the whole server, and the ID service. */
export const HEALTH_SERVICES = ['', 'idmint.v1.Ids'] as const;

export interface HealthDeps {
  readonly readiness: () => Promise<Readiness>;
  readonly drain: Drain;
  readonly log: Pick<Logger, 'info'>;
}

export interface HealthService {
  /** NOT_SERVING for good, and every Watch stream ended. */
  close(): void;
}

/** Adds the health service to `server`, with the status readiness has now. */
export async function addHealthService(server: Server, deps: HealthDeps): Promise<HealthService> {
  const impl = new HealthImplementation();
  const watches = new Set<ServerWritableStream<unknown, unknown>>();
  let status: ServingStatus | undefined;
  let closed = false;

  const set = (next: ServingStatus) => {
    if (next === status) return;
    // The package writes to every watcher on each setStatus: only changes are set.
    if (status !== undefined) deps.log.info({ status: next }, 'gRPC health status changed');
    status = next;
    for (const name of HEALTH_SERVICES) impl.setStatus(name, next);
  };
  const look = async () => {
    const readiness = await deps.readiness().catch(() => undefined);
    if (!closed) set(readiness?.ready && !deps.drain.draining ? 'SERVING' : 'NOT_SERVING');
  };

  await look();
  const timer = setInterval(() => void look(), HEALTH_POLL_MS).unref();
  const stopListening = deps.drain.onBegin(() => set('NOT_SERVING'));
  impl.addToServer({
    addService: (service, handlers) =>
      server.addService(service, {
        ...handlers,
        watch: (call: ServerWritableStream<unknown, unknown>) => {
          watches.add(call);
          call.on('cancelled', () => watches.delete(call));
          (handlers.watch as (stream: typeof call) => void)(call);
        },
      }),
  });

  return {
    close: () => {
      if (closed) return;
      set('NOT_SERVING');
      closed = true;
      clearInterval(timer);
      stopListening();
      for (const call of watches) call.end();
      watches.clear();
    },
  };
}
