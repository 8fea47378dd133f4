// The hottest request, answered in front of Fastify's router: `GET /v1/id/<tag>` with no token
// and no query string (but a rule's `app` and `salt`), for a tag whose definition is cached: a
// snowflake tag whose lease and clock allow an ID at once, a plain `order: node` segment tag or
// an `order: node` rule whose block has one in memory (all synchronously), or a plain
// `order: global` segment tag (through its coalescer, as the route does). It is the same answer the route in routes/ids.ts gives (same status,
// headers and body, same errors, same metrics and logs); anything else (a query, a token, an
// unknown, disabled or other tag, a node block to refill, a lease to acquire or a tick to wait
// for, shutdown) declines, and Fastify serves the request with its routing, validation and
// hooks as usual.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Dispenser } from '../service/dispenser.js';
import type { Metrics } from '../service/metrics.js';
import { noteFailure } from './errors.js';

const PREFIX = '/v1/id/';
/** The route's tag pattern (routes/ids.ts): anything else, a query string included, declines. */
const TAG = /^[A-Za-z0-9_.-]{1,64}$/;
const ROUTE = '/v1/id/:tag';
/** A query value the fast path takes as it is: anything needing decoding goes to the router. */
const PLAIN = /^[A-Za-z0-9_.-]{0,64}$/;
const ESCAPE = /["\\]/;

export interface FastPathDeps {
  readonly dispenser: Dispenser;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** True once the app is closing: the router then answers 503. */
  readonly closing: () => boolean;
}

/** Answers the request and returns true, or returns false having written nothing. */
export function fastIdPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { dispenser, metrics } = deps;
  const ok = metrics.httpSeries(ROUTE, 'GET', 200);
  return (req, res) => {
    const url = req.url;
    if (req.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const h = req.headers;
    if (h.authorization !== undefined || h['x-idmint-token'] !== undefined || deps.closing()) return false;
    const q = url.indexOf('?', PREFIX.length);
    const tag = q < 0 ? url.slice(PREFIX.length) : url.slice(PREFIX.length, q);
    if (!TAG.test(tag)) return false;
    // Only a rule's app and salt, in plain characters (the rule itself validates them).
    let app: string | undefined;
    let salt: string | undefined;
    if (q >= 0) {
      const query = url.slice(q + 1);
      if (query === '') return false;
      for (const part of query.split('&')) {
        const eq = part.indexOf('=');
        const k = part.slice(0, eq);
        const v = part.slice(eq + 1);
        if (eq < 0 || !PLAIN.test(v)) return false;
        if (k === 'app' && app === undefined) app = v;
        else if (k === 'salt' && salt === undefined) salt = v;
        else return false;
      }
    }
    const start = performance.now();
    const text = typeof h.accept === 'string' && h.accept.startsWith('text/plain');
    let id: string | undefined;
    try {
      id = dispenser.idNow(tag, app === undefined && salt === undefined ? {} : { app, salt });
    } catch {
      return false; // e.g. the tag needs a token: the router answers with the error
    }
    if (id !== undefined) {
      send(res, text, id, start);
      return true;
    }
    if (q >= 0) return false;
    const later = dispenser.idGlobal(tag);
    if (later === undefined) return false;
    later.then((v) => send(res, text, v, start), (err: unknown) => fail(res, err, start));
    return true;
  };

  function send(res: ServerResponse, text: boolean, id: string, start: number): void {
    // IDs are printable ASCII (rule templates allow nothing else); quotes and backslashes of a
    // rule's literal text need JSON escapes.
    const body = text ? id : ESCAPE.test(id) ? JSON.stringify({ id }) : `{"id":"${id}"}`;
    res.writeHead(200, { 'content-type': text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
    ok.observe((performance.now() - start) / 1000);
  }

  /** As the app's error handler (errors.ts) answers a failure of the route. */
  function fail(res: ServerResponse, err: unknown, start: number): void {
    const e = noteFailure(err, deps.log, (code) => metrics.errors.inc({ code }));
    const body = JSON.stringify(e.toJSON());
    const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) };
    if (e.retryAfter !== undefined) headers['retry-after'] = String(e.retryAfter);
    res.writeHead(e.status, headers);
    res.end(body);
    metrics.observeHttp(ROUTE, 'GET', e.status, (performance.now() - start) / 1000);
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
