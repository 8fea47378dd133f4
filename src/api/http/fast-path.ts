// The hottest request, answered in front of Fastify's router: `GET /v1/id/<tag>` with no token
// and a query string the route's own parameters make up without decoding, when the ID service can answer from
// memory (an `order: node` block or rule counter at hand, a snowflake lease and clock that
// allow an ID) or through an `order: global` tag's coalescer (a rule's too). The route spec
// (id-route-spec.ts) is the route's own, so the answer is the one routes/ids.ts gives (same
// status, headers and body, same errors, same metrics and logs); anything else (a query, a
// token, an idempotency key, an unknown, disabled or other tag, a block to refill, a lease to acquire or a tick
// to wait for, shutdown) declines, and Fastify serves the request with its routing,
// validation and hooks as usual. With per-source limits it does the work of the route's two
// limit hooks (source-hooks.ts): a source over a limit gets the 429 the route would answer,
// the IDs of a finite tag are charged before the ID is taken and given back when none is, and a
// refusal it answers is charged to its source. When the route has anything this path does not stand in for
// (pre-router-hooks.ts), it declines everything. A failure it answers is logged as the router
// logs one, with a request id of the app's series.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics/metrics.js';
import type { IdService } from '../../service/id-service.js';
import { noteFailure } from '../error-policy.js';
import { errorAnswer } from '../error-replies.js';
import {
  ID_PREFIX,
  ID_ROUTE,
  ID_TAG,
  idBody,
  JSON_TYPE,
  plainIdQuery,
  TEXT_TYPE,
  wantsText,
  type IdQuery,
} from './id-route-spec.js';
import { carriesToken } from '../credentials.js';
import { countsAsRefusal, type SourceLimits } from '../source-limits.js';

const NO_QUERY: IdQuery = Object.freeze({});

export interface FastPathDeps {
  readonly ids: IdService;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** The app's next request id (Fastify's genReqId). */
  readonly requestId: () => string;
  /**
   * False while the path may not answer: the app is closing (the router answers 503), or it has hooks this path does
   * not honour.
   */
  readonly open: () => boolean;
  /** The per-source limits of the ID routes, when they have any. */
  readonly limits?: SourceLimits;
}

/** Answers the request and returns true, or returns false having written nothing. */
export function fastIdPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { ids, metrics, limits } = deps;
  const ok = metrics.httpSeries(ID_ROUTE, 'GET', 200);
  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(ID_PREFIX)) return false;
    const headers = req.headers;
    // A keyed request's answer is kept in Redis: the route serves it.
    if (carriesToken(headers) || headers['idempotency-key'] !== undefined || !deps.open()) return false;
    const queryAt = url.indexOf('?', ID_PREFIX.length);
    const tag = queryAt < 0 ? url.slice(ID_PREFIX.length) : url.slice(ID_PREFIX.length, queryAt);
    if (!ID_TAG.test(tag)) return false;
    // The route's query parameters when they need no decoding (else the router parses them).
    let opts: IdQuery = NO_QUERY;
    if (queryAt >= 0) {
      const query = plainIdQuery(url.slice(queryAt + 1));
      if (query === undefined) return false;
      opts = query;
    }
    const start = performance.now();
    let source = '';
    let held = 0;
    if (limits !== undefined) {
      source = req.socket.remoteAddress ?? '';
      if (limits.limitsIds) {
        const known = limits.peek(tag);
        // Not at hand: the route's hook reads it (and so would the ID service).
        if (known === undefined) return false;
        held = limits.chargeOf(known, 1);
      }
      const limited = limits.admit(source, held, 'http');
      if (limited !== undefined) {
        fail(res, limited, start, source, 0);
        return true;
      }
    }
    const text = wantsText(headers.accept);
    let got: string | Promise<string> | undefined;
    try {
      // Spelled out: a spread of the parsed query costs a request more than the whole literal.
      got = ids.issue({ tag, key: opts.key, app: opts.app, salt: opts.salt, as: 'one', stepAside: true });
    } catch {
      got = undefined; // e.g. the tag needs a token: the router answers with the error
    }
    if (got === undefined) {
      // The router serves it, its hooks charging it anew.
      if (held > 0) limits?.refund(source, held);
      return false;
    }
    if (typeof got === 'string') {
      send(res, text, got, start);
      return true;
    }
    got.then(
      (id) => send(res, text, id, start),
      (err: unknown) => fail(res, err, start, source, held),
    );
    return true;
  };

  function send(res: ServerResponse, text: boolean, id: string, start: number): void {
    const body = idBody(id, text);
    res.writeHead(200, { 'content-type': text ? TEXT_TYPE : JSON_TYPE, 'content-length': body.length });
    res.end(body);
    ok.observe((performance.now() - start) / 1000);
  }

  /**
   * As the app's error handler (errors.ts) answers a failure of the route, and the route's
   * settleSourceRates hook settles it (source-hooks.ts): `held` charged IDs given back, a
   * refusal charged to `source`.
   */
  function fail(res: ServerResponse, err: unknown, start: number, source: string, held: number): void {
    const answer = errorAnswer(noteFailure('http', err, deps.log.child({ reqId: deps.requestId() }), metrics.errors));
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
    metrics.observeHttp(ID_ROUTE, 'GET', answer.status, (performance.now() - start) / 1000);
    if (limits !== undefined) {
      if (held > 0) limits.refund(source, held);
      if (countsAsRefusal(answer.status)) limits.refusedRequest(source);
    }
  }
}

/**
 * Fastify's `serverFactory`: the HTTP/1.1 server Fastify would create (same timeouts), with the
 * fast path in front of Fastify's handler.
 */
export function serverWithFastPath(fast: (req: IncomingMessage, res: ServerResponse) => boolean) {
  return (handler: (req: IncomingMessage, res: ServerResponse) => void, opts: FastifyServerOptions): Server => {
    const server = createServer((req, res) => {
      if (!fast(req, res)) handler(req, res);
    });
    if (opts.keepAliveTimeout !== undefined) server.keepAliveTimeout = opts.keepAliveTimeout;
    if (opts.requestTimeout !== undefined) server.requestTimeout = opts.requestTimeout;
    if (opts.connectionTimeout !== undefined) server.setTimeout(opts.connectionTimeout);
    if (opts.maxRequestsPerSocket) server.maxRequestsPerSocket = opts.maxRequestsPerSocket;
    return server;
  };
}
