// The per-source limits (source-limits.ts) on the HTTP ID routes, as hooks of the scopes that
// hold them (app.ts): idmint's own and Leaf's routes (routes/ids.ts), and Tinyid's
// (routes/tinyid.ts). Before the handler, a source over a limit is answered 429 LIMIT_EXCEEDED
// with Retry-After, and the IDs of a finite tag the request asks for are charged; once answered,
// a refusal (countsAsRefusal) is charged, and the IDs of a request that took none are given back.
// The pre-router path (fast-path.ts) does the work of the ID routes' two hooks itself, for what it
// answers (pre-router-hooks.ts checks the hooks by identity).
import type {
  FastifyInstance,
  FastifyRequest,
  onResponseHookHandler,
  onSendHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import { TAG_NAME } from '../../core/tag-name.js';
import { bindInteger, TINYID_BATCH_MAX } from '../../core/tinyid.js';
import type { IdmintError } from '../../errors.js';
import type { IdService } from '../../service/id-service.js';
import { transportOf } from '../error-policy.js';
import { marked } from '../marked.js';
import { countsAsRefusal, type LimitedTag, type SourceLimits } from '../source-limits.js';
import { tinyidParams } from './tinyid-params.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** IDs of a finite tag charged to the request's source when it was admitted (source-hooks.ts). */
    sourceHeld: number;
  }
}

/** Routes of the ID scope that take no ID: only the source's refusals apply. */
const DECODE_ROUTE = '/v1/decode/:tag/:id';
const BATCH_ROUTE = '/v1/ids/:tag';

export interface SourceHooks {
  /** preHandler of the ID routes: refuses a source over a limit, charges the finite IDs asked for. */
  readonly reserve: preHandlerHookHandler;
  /** onResponse of the ID routes and Tinyid's: charges a refusal, gives back the IDs of a request that took none. */
  readonly settle: onResponseHookHandler;
  /** Adds the hooks to the scope of idmint's and Leaf's routes (`ids`) or of Tinyid's. */
  install(scope: FastifyInstance, routes: 'ids' | 'tinyid'): void;
}

export function sourceHooks(limits: SourceLimits, ids: IdService): SourceHooks {
  /** Admits the request with `charge` IDs held, or refuses it. */
  const admit = (req: FastifyRequest, charge: number): IdmintError | undefined => {
    const err = limits.admit(req.ip, charge, transportOf(req) as 'http' | 'leaf' | 'tinyid');
    if (err === undefined) req.sourceHeld = charge;
    return err;
  };

  // Callback-style hooks, marked: the pre-router path stands in for them on GET /v1/id/:tag.
  const reserve = marked<preHandlerHookHandler>(function limitSourceRates(req, _reply, done) {
    const url = req.routeOptions.url;
    const count = url === DECODE_ROUTE ? 0 : url === BATCH_ROUTE ? (req.query as { count: number }).count : 1;
    if (count === 0 || !limits.limitsIds) return done(admit(req, 0));
    const tag = (req.params as { tag: string }).tag;
    const known = limits.peek(tag);
    if (known !== undefined) return done(admit(req, limits.chargeOf(known, count)));
    // A source refused everything is refused before its tag is read (an unknown name costs a MySQL read).
    const cut = admit(req, 0);
    if (cut !== undefined) return done(cut);
    void limits.get(tag).then((t) => done(admit(req, limits.chargeOf(t, count))));
  }, 'limitSourceRates');

  const settle = marked<onResponseHookHandler>(function settleSourceRates(req, reply, done) {
    const status = reply.statusCode;
    if (status >= 400) {
      if (req.sourceHeld > 0) limits.refund(req.ip, req.sourceHeld);
      if (countsAsRefusal(status)) limits.refusedRequest(req.ip);
    }
    done();
  }, 'settleSourceRates');

  /**
   * Tinyid's routes answer 200 whatever happens, a token refusal with code 5: the token is
   * checked here as the route will check it (IdService.recheck, from memory when it can), to
   * charge that refusal; and the IDs asked for are charged (batchSize; a segment's node block).
   */
  const reserveTinyid = async (req: FastifyRequest): Promise<void> => {
    const first = admit(req, 0);
    if (first !== undefined) throw first;
    const params = tinyidParams(req);
    const tag = params('bizType');
    if (tag === undefined || !TAG_NAME.test(tag)) return limits.refusedRequest(req.ip);
    try {
      await ids.recheck(tag, params('token'));
    } catch (err) {
      const code = (err as IdmintError).code;
      if (code === 'TAG_NOT_FOUND' || code === 'UNAUTHORIZED') limits.refusedRequest(req.ip);
      return;
    }
    if (!limits.limitsIds) return;
    const definition: LimitedTag | undefined = limits.peek(tag) ?? (await limits.get(tag));
    const count = req.url.startsWith('/tinyid/id/nextSegmentId')
      ? (definition?.nodeBlock ?? 0)
      : tinyidBatch(params('batchSize'));
    const err = admit(req, limits.chargeOf(definition, count));
    if (err !== undefined) throw err;
  };

  /** A Tinyid failure answered 200 (code 5 or 6, or "" from a Simple route) took nothing: its IDs are given back. */
  const settleTinyid: onSendHookHandler<unknown> = (req, reply, payload, done) => {
    if (
      req.sourceHeld > 0 &&
      reply.statusCode === 200 &&
      typeof payload === 'string' &&
      (payload === '' || payload.startsWith('{"data":null'))
    ) {
      limits.refund(req.ip, req.sourceHeld);
      req.sourceHeld = 0;
    }
    done(null, payload);
  };

  return {
    reserve,
    settle,
    install(scope, routes) {
      scope.decorateRequest('sourceHeld', 0);
      if (routes === 'ids') scope.addHook('preHandler', reserve);
      else {
        scope.addHook('preHandler', reserveTinyid);
        scope.addHook('onSend', settleTinyid);
      }
      scope.addHook('onResponse', settle);
    },
  };
}

/**
 * The IDs a nextId call asks for: batchSize, 1 when absent; 0 for one the route refuses (not an integer, out of range).
 */
function tinyidBatch(raw: string | undefined): number {
  let count: number | null;
  try {
    count = bindInteger(raw);
  } catch {
    return 0;
  }
  if (count === null) return 1;
  return count >= 1 && count <= TINYID_BATCH_MAX ? count : 0;
}
