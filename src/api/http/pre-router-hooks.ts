// Whether the pre-router path (fast-path.ts) may answer GET /v1/id/:tag, decided here and
// nowhere else. The path answers before Fastify routes the request, so nothing Fastify runs
// for a route runs for what it answers: no hook, no error handler, no reply serializer. It does
// the work of the app's two hooks itself:
//
// - onRequest `refuseWhileClosing`: it declines while the app is closing (Fastify then
//   answers 503 through this hook);
// - onResponse `observeResponse`: it observes the same request-duration series;
//
// and answers failures as the app's error handler does (errors.ts). Once the app is ready,
// idRouteProblems() reads the route as Fastify's router holds it (its context, caught through
// the router's `buildPrettyMeta` hook while the routes are listed), not the text of a route
// listing, and compares by identity: every lifecycle hook of the route must be one of these two
// functions, its error handler the app's, and it may have no reply serializer of its own.
// Fastify keeps bound copies (`bound <name>`), so each of the three is marked with a name of
// its own in this process (`marked`) and known by it; an unnamed or merely same-named function
// is not. Anything else,
// a property of the context this file does not know, or a route it cannot find, keeps the
// path off: it fails closed. An app extended by its embedder (buildApp's `extend`) has no
// pre-router path at all.
import type { FastifyInstance, onRequestHookHandler, onResponseHookHandler } from 'fastify';
import type { Metrics } from '../../metrics/metrics.js';
import { ID_ROUTE } from './id-route-spec.js';
import { shuttingDown } from '../error-policy.js';
import { isMarked, marked } from '../marked.js';

/** Fastify's lifecycle hooks: the ones a route's context holds, each a list of functions or null. */
export const LIFECYCLE_HOOKS: readonly string[] = [
  'onRequest',
  'preParsing',
  'preValidation',
  'preHandler',
  'preSerialization',
  'onSend',
  'onResponse',
  'onError',
  'onTimeout',
  'onRequestAbort',
];

/** `candidate` is `original`, or Fastify's bound copy of `original` (`original` marked). */
function isOrBinds(candidate: unknown, original: unknown): boolean {
  if (candidate === original) return true;
  return isMarked(original) && typeof candidate === 'function' && candidate.name === `bound ${original.name}`;
}

/** What the pre-router path stands in for, by identity (functions made with `marked`). */
export interface Honoured {
  /** By hook: the functions whose work the path does. */
  readonly hooks: Readonly<Record<string, readonly unknown[]>>;
  /** The function given to the app's setErrorHandler. */
  readonly errorHandler: unknown;
}

/** onRequest: a request that arrives while closing gets idmint's 503, in the API's error shape. */
export function closingGuard(closing: () => boolean): onRequestHookHandler {
  // Callback-style hooks: no promise per request on the hot path.
  return marked<onRequestHookHandler>(function refuseWhileClosing(_req, _reply, done) {
    done(closing() ? shuttingDown() : undefined);
  }, 'refuseWhileClosing');
}

/** onResponse: every answer in the request-duration histogram, by route, method and status. */
export function responseObserver(metrics: Metrics): onResponseHookHandler {
  return marked<onResponseHookHandler>(function observeResponse(req, reply, done) {
    metrics.observeHttp(req.routeOptions.url ?? 'unmatched', req.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  }, 'observeResponse');
}

/** A route as find-my-way hands it to `buildPrettyMeta`: `store` is Fastify's context of the route. */
interface RouterRoute {
  readonly method: string;
  readonly path: string;
  readonly store: unknown;
}

type Context = Record<PropertyKey, unknown>;

/**
 * The router's `buildPrettyMeta` hook (Fastify's `routerOptions`): it catches the context of
 * each route as the routes are listed, and answers the metadata Fastify's own hook shows (the
 * error handler, log level and serializers, the hooks).
 */
export class RouteContexts {
  private readonly seen = new Map<string, Context>();

  readonly buildPrettyMeta = (route: RouterRoute): Record<string, unknown> => {
    const context = (route.store ?? {}) as Context;
    this.seen.set(`${route.method} ${route.path}`, context);
    const meta: Record<string, unknown> = {};
    for (const key of ['errorHandler', 'logLevel', 'logSerializers', ...LIFECYCLE_HOOKS]) meta[key] = context[key];
    return meta;
  };

  /**
   * The context Fastify's router holds for `method url`; undefined when it has no such route. Call once the app is
   * ready.
   */
  contextOf(app: FastifyInstance, method: string, url: string): Context | undefined {
    this.seen.clear();
    app.printRoutes({ includeMeta: true, commonPrefix: false, method });
    return this.seen.get(`${method} ${url}`);
  }
}

/** A function's name as written (without the `bound ` of Fastify's copies); `anonymous` when it has none. */
const nameOf = (f: unknown): string => (typeof f === 'function' ? f.name.replace(/^bound /, '') : '') || 'anonymous';
const holdsFunctions = (v: unknown): boolean =>
  typeof v === 'function' || (Array.isArray(v) && v.some((x) => typeof x === 'function'));

/** Context properties that are not Fastify's per-request code, or that idRouteProblems checks by name. */
const KNOWN = new Set<string>([
  ...LIFECYCLE_HOOKS,
  'errorHandler',
  // the route's own handler (its spec is id-route-spec.ts, shared with the path), and what
  // builds the request and reply objects and their loggers and parsers
  'handler',
  'Reply',
  'Request',
  'contentTypeParser',
  'childLoggerFactory',
  'schemaErrorFormatter',
  'validatorCompiler',
  'serializerCompiler',
  'server',
]);

/**
 * What on GET /v1/id/:tag the pre-router path does not stand in for (empty: it may answer the
 * route). The route's context as the router holds it (RouteContexts.contextOf), compared by
 * identity with `honoured`; a missing route counts as a problem.
 */
export function idRouteProblems(context: Context | undefined, honoured: Honoured): string[] {
  if (context === undefined) return [`no route GET ${ID_ROUTE}`];
  const out: string[] = [];
  for (const hook of LIFECYCLE_HOOKS) {
    const fns = context[hook];
    if (fns === null || fns === undefined) continue;
    if (!Array.isArray(fns)) {
      out.push(`${hook}: not a list of hooks`);
      continue;
    }
    const mine = honoured.hooks[hook] ?? [];
    for (const hookFunction of fns)
      if (!mine.some((h) => isOrBinds(hookFunction, h))) out.push(`${hook} ${nameOf(hookFunction)}`);
  }
  const handler = (context.errorHandler as { func?: unknown } | undefined)?.func;
  if (!isOrBinds(handler, honoured.errorHandler)) out.push(`errorHandler ${nameOf(handler)}`);
  for (const key of Reflect.ownKeys(context)) {
    const value = context[key];
    if (typeof key === 'symbol') {
      // Fastify's reply serializer of the route (setReplySerializer): none, or the path's JSON would differ.
      if (key.description === 'fastify.replySerializerDefault' && value !== null && value !== undefined)
        out.push('reply serializer');
      continue;
    }
    if (!KNOWN.has(key) && holdsFunctions(value)) out.push(`${key}: unknown to the pre-router path`);
  }
  if (
    !Reflect.ownKeys(context).some((k) => typeof k === 'symbol' && k.description === 'fastify.replySerializerDefault')
  ) {
    out.push('reply serializer: not found in the route context');
  }
  return out;
}
