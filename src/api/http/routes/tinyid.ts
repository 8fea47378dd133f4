// Tinyid's HTTP API under /tinyid/id/, so Tinyid clients (tinyid-client's segment fetches,
// plain HTTP callers) work unchanged: nextId, nextIdSimple, nextSegmentId and
// nextSegmentIdSimple, GET or POST, parameters in the query string or a form body. Answers
// are Tinyid's bytes: always 200, {"data":...,"code":200,"message":""} or code 5 (token) /
// 6 (any other failure), and the Simple routes answer "" on every failure. IDs come from the
// ID service, out of the same counter as every other route of the tag. See docs/TINYID.md.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TAG_NAME } from '../../../core/tag-name.js';
import {
  bindInteger,
  BindError,
  longestRun,
  responseJson,
  segmentJson,
  segmentOfRun,
  segmentText,
  TINYID_BATCH_MAX,
  TINYID_TOKEN_ERR,
  type TinyidSegment,
} from '../../../core/tinyid.js';
import { IdmintError, invalid } from '../../../errors.js';
import { noteFailure, type ErrorCounter } from '../../error-policy.js';
import { tinyidReply } from '../../error-replies.js';
import { idempotencyKey } from '../id-route-spec.js';
import { tinyidParams, type TinyidParams } from '../tinyid-params.js';
import type { Accepts, IdService } from '../../../service/id-service.js';

const PREFIX = '/tinyid/id/';
const JSON_TYPE = 'application/json;charset=UTF-8';
const TEXT_TYPE = 'text/plain;charset=UTF-8';

type Params = TinyidParams;

/** Tinyid's batchSize: 1 when absent; throws BindError for a value Spring would not bind to an
 * Integer. One above TINYID_BATCH_MAX is refused when served (after the token check). */
function batchOf(params: Params): number {
  return bindInteger(params('batchSize')) ?? 1;
}

/** Spring Boot 1.5's error body for a parameter that does not bind (answered 400). */
function bindFailure(reply: FastifyReply, req: FastifyRequest, err: BindError): FastifyReply {
  const body = {
    timestamp: Date.now(),
    status: 400,
    error: 'Bad Request',
    exception: 'org.springframework.web.method.annotation.MethodArgumentTypeMismatchException',
    message: `Failed to convert value of type 'java.lang.String' to required type 'java.lang.Integer'; nested exception is java.lang.NumberFormatException: ${err.message}`,
    path: req.url.split('?')[0],
  };
  return reply.code(400).type(JSON_TYPE).send(JSON.stringify(body));
}

export async function tinyidRoutes(
  app: FastifyInstance,
  opts: { ids: IdService; errors: ErrorCounter },
): Promise<void> {
  const { ids: service, errors } = opts;
  // Any body is accepted and read as a form (Tinyid's client POSTs an empty form); nothing is
  // refused for its content type, as a servlet would not.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  /** What Tinyid's answers can carry: plain segment IDs, at most batch.size.max a call. */
  const accepts: Accepts = { plain: true, maxCount: { max: TINYID_BATCH_MAX, name: 'batchSize' } };

  // Tinyid answers an empty batch after its checks (a disabled tag still fails). An
  // Idempotency-Key header (no Tinyid client sends one) is kept and replayed as on /v1/ids.
  const ids = (bizType: string, n: number, token: string | undefined, key: string | undefined): Promise<string[]> =>
    Promise.resolve(
      service.issue({ tag: bizType, as: 'ids', count: Math.max(n, 0), token, accepts, idempotencyKey: key }),
    );

  // A segment is served by the client from its memory, long after it was taken: only order
  // node promises no more than that (the service refuses order global). Straight from Redis
  // (one take), as a process fills its own block: one run but where a segment of idmint ends.
  // A block the client serves itself cannot be replayed: a key is refused (issue-request.ts).
  async function segment(
    bizType: string,
    _n: number,
    token: string | undefined,
    key: string | undefined,
  ): Promise<TinyidSegment> {
    const issued = await service.issue({ tag: bizType, as: 'held', token, accepts, idempotencyKey: key });
    return segmentOfRun(issued.tag, longestRun(issued.runs), issued.tag.prefetch);
  }

  /**
   * A refusal, counted and logged as every transport's, as Tinyid answers it (api/error-replies.ts):
   * what Tinyid's token check would refuse (an unknown or unnamed bizType, a missing or wrong token)
   * is its token error; a disabled tag passes the check and is refused with its reason.
   */
  const failed = (req: FastifyRequest, route: string, err: unknown, simple: boolean): string =>
    tinyidReply(noteFailure('tinyid', err, req.log.child({ route }), errors), simple);

  /**
   * Tinyid's routes come in pairs that read the same parameters and differ only in how they
   * answer: `<name>` as Tinyid's JSON response, `<name>Simple` as bare text ("" on any
   * failure). `serve` answers a visit that passed the token check.
   */
  function pair<T>(
    name: string,
    batch: boolean,
    serve: (bizType: string, count: number, token: string | undefined, key: string | undefined) => Promise<T>,
    json: (value: T) => string,
    text: (value: T) => string,
  ): void {
    for (const simple of [false, true]) {
      const route = simple ? `${name}Simple` : name;
      app.route({
        method: ['GET', 'POST'],
        url: `${PREFIX}${route}`,
        handler: async (req, reply) => {
          const params = tinyidParams(req);
          let count = 1;
          if (batch) {
            try {
              count = batchOf(params);
            } catch (err) {
              noteFailure('tinyid', invalid((err as BindError).message), req.log, errors);
              return bindFailure(reply, req, err as BindError);
            }
          }
          const token = params('token');
          const bizType = params('bizType');
          let body: string;
          try {
            if (bizType === undefined || !TAG_NAME.test(bizType))
              throw new IdmintError('TAG_NOT_FOUND', TINYID_TOKEN_ERR.message);
            const served = await serve(bizType, count, token, idempotencyKey(req.headers));
            // Tinyid answers "" for an empty batch too (its join fails on no IDs).
            body = simple ? (count > 0 ? text(served) : '') : responseJson(json(served));
          } catch (err) {
            body = failed(req, route, err, simple);
          }
          return reply.type(simple ? TEXT_TYPE : JSON_TYPE).send(body);
        },
      });
    }
  }

  pair(
    'nextId',
    true,
    ids,
    (v) => `[${v.join(',')}]`,
    (v) => v.join(','),
  );
  pair('nextSegmentId', false, segment, segmentJson, segmentText);
}
