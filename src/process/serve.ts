// Process concerns of a serving node: start the runtime, the HTTP app and the UDP and gRPC
// listeners, create the demo tag when asked, and shut down in order on SIGINT/SIGTERM (stop
// accepting, drain requests and calls, close workers, quit Redis, end the MySQL pool). SIGTERM,
// what orchestrators send, first drains: for SHUTDOWN_DRAIN_MS the node reports not ready
// while it serves on, so it is out of every load balancer before it stops accepting. SIGINT
// (Ctrl-C at a terminal) closes at once.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { workerWidths } from '../core/tag-kinds.js';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../logger.js';
import { createRuntime, servicesOf, type Runtime, type RuntimeOptions, type Services } from '../runtime/runtime.js';
import { buildApp } from '../api/app.js';
import { startGrpcServer } from '../api/grpc/grpc-server.js';
import { sourceLimitsOf } from '../api/source-limits.js';
import { startUdpServer } from '../api/udp/udp-server.js';

export interface Node {
  readonly rt: Runtime;
  readonly app?: FastifyInstance;
  /** Where HTTP listens, e.g. http://127.0.0.1:8080. */
  readonly url?: string;
  /** The UDP port, when the listener runs. */
  readonly udpPort?: number;
  /** The gRPC port, when the listener runs. */
  readonly grpcPort?: number;
  /**
   * Reports not ready at once and resolves SHUTDOWN_DRAIN_MS later, serving all the while;
   * at once when that is 0 or the node serves no requests. close() may follow.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

/** Whether a shutdown signal drains first: SIGTERM does, SIGINT (an operator's Ctrl-C) does not. */
export const drainsOn = (sig: NodeJS.Signals): boolean => sig === 'SIGTERM';

export async function ensureDemoTag(rt: Services, name: string): Promise<void> {
  const created = await rt.tagAdmin.ensureTag({ tag: name, mode: 'segment', description: 'quickstart demo tag' });
  if (created) rt.log.info({ tag: name }, 'demo tag created');
}

/** Takes a worker-id lease for every width the snowflake tags use, so the first request
 * does not wait; an exhausted pool is reported here and answered per request. */
async function acquireLeasesForTags(rt: Services): Promise<void> {
  const tags = await rt.adminReads.listTags();
  const widths = workerWidths(tags);
  for (const bits of widths) {
    await rt.leases
      .get(bits)
      .catch((err: Error) => rt.log.error({ workerBits: bits, err: err.message }, 'no worker-id lease at start-up'));
  }
}

export async function startNode(config: Config, opts: RuntimeOptions = {}): Promise<Node> {
  const log = createLogger(config);
  const rt = await createRuntime(config, log, opts);
  // What the listeners are handed: services, no store (the runtime itself is kept for tools and tests).
  const services = servicesOf(rt);
  if (config.demoTag) await ensureDemoTag(services, config.demoTag);
  if (config.adminTokenGenerated) {
    log.warn(
      { adminToken: config.adminToken },
      'ADMIN_TOKEN is not set; generated one for this process (set ADMIN_TOKEN to choose it)',
    );
  }
  if (!config.serveHttp) {
    log.info('worker node started (no HTTP)');
    return { rt, drain: async () => undefined, close: () => rt.close() };
  }
  // One table of sources for HTTP and UDP. The limits read tag definitions as the ID service
  // does: the registry's cached one when it is current (a map lookup), else a read.
  const sourceLimits = sourceLimitsOf(config, rt.registry, rt.metrics, log);
  const app = await buildApp(services, { sourceLimits });
  const address = await app.listen({ port: config.port, host: config.host });
  const bound = app.server.address();
  if (!config.advertiseAddr && bound && typeof bound === 'object')
    rt.leases.setAddr(`${config.host === '0.0.0.0' ? hostname() : config.host}:${bound.port}`);
  await acquireLeasesForTags(services);
  const udp =
    config.udpPort > 0
      ? await startUdpServer(
          rt.ids,
          {
            port: config.udpPort,
            host: config.host,
            nodeOffset: config.nodeOffset,
            maxDatagramBytes: config.udpMaxBytes,
          },
          log,
          rt.metrics.errors,
          sourceLimits,
        )
      : undefined;
  const grpc =
    config.grpcPort > 0
      ? await startGrpcServer({
          ids: rt.ids,
          metrics: rt.metrics,
          log,
          config,
          readiness: rt.readiness,
          drain: rt.drain,
        }).catch(async (err: Error) => {
          await udp?.close();
          await app.close();
          await rt.close();
          throw err;
        })
      : undefined;
  log.info({ address, udpPort: udp?.port, grpcPort: grpc?.port, nodeId: config.nodeId }, 'idmint listening');
  let closing: Promise<void> | undefined;
  let draining: Promise<void> | undefined;
  return {
    rt,
    app,
    url: address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '127.0.0.1'),
    udpPort: udp?.port,
    grpcPort: grpc?.port,
    drain: () =>
      (draining ??= (async () => {
        const ms = config.shutdownDrainMs;
        if (ms === 0) return;
        rt.drain.begin();
        log.info({ drainMs: ms }, 'draining: reporting not ready, serving until the drain is over');
        await sleep(ms);
        log.info({ drainMs: ms }, 'drain over: closing');
      })()),
    close: () =>
      (closing ??= (async () => {
        // gRPC stops accepting and drains its calls while UDP and HTTP do the same.
        await Promise.all([
          grpc?.close(),
          (async () => {
            await udp?.close();
            await app.close();
          })(),
        ]);
        await rt.close();
      })()),
  };
}

export function closeOnSignals(node: Node): void {
  let signalled = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled) {
      node.rt.log.warn({ sig }, 'second signal: exiting now');
      process.exit(1);
    }
    signalled = true;
    node.rt.log.info({ sig }, 'shutting down');
    (drainsOn(sig) ? node.drain() : Promise.resolve())
      .then(() => node.close())
      .then(
        () => process.exit(0),
        (err: Error) => {
          node.rt.log.error({ err: err.message }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
