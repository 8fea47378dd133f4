// The gRPC listener (GRPC_PORT): service idmint.v1.Ids of proto/idmint/v1/ids.proto over
// @grpc/grpc-js, answering from the same ID service as HTTP with the same fast paths, tokens,
// errors (as gRPC statuses, status.ts) and metrics. Closing stops accepting (GOAWAY), ends the
// takes in flight at their next block, lets unary calls finish, and cuts what is left after a
// grace period. Beside it: the standard health service (health.ts), following readiness, and
// server reflection (reflection.ts).
import {
  Server,
  ServerCredentials,
  type handleServerStreamingCall,
  type handleUnaryCall,
  type ServerWritableStream,
} from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Drain } from '../../service/drain.js';
import type { IdService } from '../../service/id-service.js';
import type { Readiness } from '../../service/readiness.js';
import type { Metrics } from '../../metrics/metrics.js';
import { bearerToken, staffOf } from '../credentials.js';
import { decodeId, type Decoded } from '../decode.js';
import { noteFailure } from '../error-policy.js';
import { shuttingDown } from '../error-policy.js';
import { idsServiceEncodingTakes } from './proto.js';
import {
  checkTag,
  parseNext,
  parseTake,
  tokenOf,
  type DecodeRequest,
  type DecodeResponse,
  type NextRequest,
  type NextResponse,
  type TakeBlock,
  type TakeRequest,
} from './requests.js';
import { countOwnRefusals } from './refusals.js';
import { grpcStatus, statusName } from './status.js';
import { TakeBudget } from './take-budget.js';
import { PeerTakes, peerAddress } from './take-limits.js';
import { TakeCall } from './take-call.js';
import { processTurns } from '../bulk-turns.js';
import type { BulkTake } from '../../service/bulk-take.js';

export interface GrpcServer {
  readonly port: number;
  /** Stops accepting, waits for calls in flight (takes end at their next block), at most `graceMs`. */
  close(): Promise<void>;
}

export interface GrpcDeps {
  readonly ids: IdService;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** What the health service reports (src/service/readiness.ts), and the drain that ends it. */
  readonly readiness: () => Promise<Readiness>;
  readonly drain: Drain;
  readonly config: Pick<
    Config,
    | 'grpcPort'
    | 'host'
    | 'streamMaxCount'
    | 'streamMaxBlock'
    | 'streamMaxBufferBytes'
    | 'coalesceMax'
    | 'adminToken'
    | 'viewerToken'
    | 'grpcMaxTakesPerPeer'
    | 'grpcMaxBufferedBytes'
    | 'bulkSharePercent'
  >;
}

/** Calls still running this long after closing began are cut (CANCELLED for their clients). */
export const GRPC_CLOSE_GRACE_MS = 10_000;
/** Requests are a few fields: anything larger is refused by grpc-js (RESOURCE_EXHAUSTED). */
const MAX_REQUEST_BYTES = 64 * 1024;
const NEXT = 'Next';
const TAKE = 'Take';
const DECODE = 'Decode';

/**
 * Decode's answer: the parts HTTP answers flat, under the field of the oneof named by their
 * mode (proto: DecodeResponse.parts), so no kind is named here. A snowflake's time goes out as
 * the number it is; int64 fields take numbers as well as strings.
 */
function decodeResponse({ mode, id, ...parts }: Decoded): DecodeResponse {
  return { mode, id, [mode]: parts } as DecodeResponse;
}

/** host:port for grpc-js, IPv6 hosts in brackets. */
export const bindAddress = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

export async function startGrpcServer(deps: GrpcDeps): Promise<GrpcServer> {
  const { ids, metrics, log, config } = deps;
  let closing = false;
  const takes = new Set<TakeCall>();
  const peers = new PeerTakes(config.grpcMaxTakesPerPeer);
  const budget = new TakeBudget(config.grpcMaxBufferedBytes, metrics.grpcTakes);
  const turns = processTurns;
  turns.setShare(config.bulkSharePercent / 100);
  const limits = { maxCount: config.streamMaxCount, maxBlock: config.streamMaxBlock };
  const staff = staffOf(config);
  const okNext = metrics.grpcSeries(NEXT, 'OK');
  const { service, encode } = idsServiceEncodingTakes();

  /** Counts, logs and answers a failed call (as the HTTP error handler does). */
  const failure = (method: string, err: unknown, start: number) => {
    const error = noteFailure('grpc', err, log, metrics.errors);
    const st = grpcStatus(error);
    metrics.observeGrpc(method, statusName(st.code), (performance.now() - start) / 1000);
    return st;
  };

  const next: handleUnaryCall<NextRequest, NextResponse> = (call, callback) => {
    const start = performance.now();
    const done = (ids: string[]) => {
      callback(null, { ids });
      okNext.observe((performance.now() - start) / 1000);
    };
    const fail = (err: unknown) => callback(failure(NEXT, err, start));
    if (closing) return fail(shuttingDown());
    try {
      const { tag, count, opts } = parseNext(call.request, call.metadata);
      // As the HTTP route: an ID at hand in memory is answered at once.
      const got = ids.issue({ ...opts, tag, as: 'ids', count });
      if (got instanceof Promise) got.then(done, fail);
      else done(got);
    } catch (err) {
      fail(err);
    }
  };

  const decode: handleUnaryCall<DecodeRequest, DecodeResponse> = (call, callback) => {
    const start = performance.now();
    const fail = (err: unknown) => callback(failure(DECODE, err, start));
    if (closing) return fail(shuttingDown());
    let tag: string;
    let token: string | undefined;
    try {
      tag = checkTag(call.request.tag);
      token = tokenOf('', call.metadata);
    } catch (err) {
      return fail(err);
    }
    decodeId(
      ids,
      tag,
      call.request.id,
      token,
      staff(bearerToken(call.metadata.get('authorization')[0] as string | undefined)),
    ).then((decoded) => {
      callback(null, decodeResponse(decoded));
      metrics.observeGrpc(DECODE, 'OK', (performance.now() - start) / 1000);
    }, fail);
  };

  const take: handleServerStreamingCall<TakeRequest, TakeBlock> = (call) => {
    const start = performance.now();
    // emit('error') ends the call with that status once the blocks written before it are out.
    const end = (err?: unknown) => {
      if (err === undefined) {
        call.end();
        metrics.observeGrpc(TAKE, 'OK', (performance.now() - start) / 1000);
      } else {
        call.emit('error', failure(TAKE, err, start));
      }
    };
    if (closing) return end(shuttingDown());
    let bulkTake: BulkTake;
    try {
      bulkTake = parseTake(call.request, call.metadata, limits);
    } catch (err) {
      return end(err);
    }
    const peer = peerAddress(call.getPeer());
    try {
      peers.enter(peer);
    } catch (err) {
      return end(err);
    }
    const session = new TakeCall(call as ServerWritableStream<TakeRequest, TakeBlock>, ids, {
      maxBufferBytes: config.streamMaxBufferBytes,
      encode,
      budget,
      turns,
      chunkIds: config.coalesceMax,
      closing: () => closing,
    });
    takes.add(session);
    session
      .run(bulkTake)
      .then(
        (stopped) => {
          if (stopped === 'cancelled') metrics.observeGrpc(TAKE, 'CANCELLED', (performance.now() - start) / 1000);
          else end(stopped === 'closing' ? shuttingDown() : undefined);
        },
        (err: unknown) => {
          if (call.cancelled) metrics.observeGrpc(TAKE, 'CANCELLED', (performance.now() - start) / 1000);
          else end(err);
        },
      )
      .finally(() => {
        takes.delete(session);
        peers.leave(peer);
      });
  };

  const server = new Server({
    'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
    interceptors: [countOwnRefusals(metrics.errors, log)],
  });
  server.addService(service, { Next: next, Take: take, Decode: decode });
  // Loaded here, not at start-up: they parse their protos when imported, which a process
  // without the gRPC listener (GRPC_PORT=0) need not pay for.
  const [{ addHealthService }, { addReflectionService }] = await Promise.all([
    import('./health.js'),
    import('./reflection.js'),
  ]);
  const health = await addHealthService(server, deps);
  addReflectionService(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(bindAddress(config.host, config.grpcPort), ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  ).catch((err: unknown) => {
    health.close();
    throw err;
  });
  log.info({ port, host: config.host }, 'gRPC listener ready');

  let closed: Promise<void> | undefined;
  return {
    port,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        closing = true;
        health.close();
        for (const session of takes) session.interrupt();
        const cut = setTimeout(() => {
          log.warn(
            { takes: takes.size },
            `gRPC calls still running ${GRPC_CLOSE_GRACE_MS} ms after closing began: cut`,
          );
          server.forceShutdown();
          resolve();
        }, GRPC_CLOSE_GRACE_MS);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      })),
  };
}
