// The ID routes: one ID, a batch, decoding, and Leaf's plain-text route.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalid } from '../../errors.js';
import type { IdService } from '../../service/id-service.js';
import { MAX_BATCH } from '../../service/id-options.js';
import { bearerToken } from '../bearer.js';
import { decodeId } from '../decode.js';
import { clientToken, ID_ROUTE, TEXT_TYPE, wantsText } from '../id-route-spec.js';
import { tagParam } from '../schemas.js';

const keyQuery = {
  key: { type: 'string', maxLength: 256 },
  app: { type: 'string', maxLength: 64 },
  salt: { type: 'string', maxLength: 64 },
} as const;

interface TagParams {
  tag: string;
}
interface KeyQuery {
  key?: string;
  app?: string;
  salt?: string;
}

type OneRequest = FastifyRequest<{ Params: TagParams; Querystring: KeyQuery }>;

export async function idRoutes(
  app: FastifyInstance,
  opts: { ids: IdService /** Whether a bearer token is the admin or viewer token (decoding permuted IDs). */; staff?: (token: string | undefined) => boolean },
): Promise<void> {
  const { ids } = opts;

  /** One ID: at once when the service answers from memory, else a promise. */
  const one = (req: OneRequest) => ids.issue(req.params.tag, 1, { ...req.query, token: clientToken(req.headers) });

  // The route spec (path, tag, negotiation, token, closing answer) is shared with the
  // pre-router path: id-route-spec.ts.
  app.get<{ Params: TagParams; Querystring: KeyQuery }>(
    ID_ROUTE,
    {
      schema: {
        params: tagParam,
        querystring: { type: 'object', properties: keyQuery, additionalProperties: false },
        response: { 200: { type: 'object', properties: { id: { type: 'string' } } } },
      },
    },
    (req, reply) => {
      const send = (got: string[]) => (wantsText(req.headers.accept) ? reply.type(TEXT_TYPE).send(got[0]) : reply.send({ id: got[0] }));
      // Served from memory without a promise when the ID is at hand.
      const got = one(req);
      if (got instanceof Promise) got.then(send, (err: unknown) => reply.send(err));
      else send(got);
    },
  );

  app.get<{ Params: TagParams; Querystring: KeyQuery & { count: number } }>(
    '/v1/ids/:tag',
    {
      schema: {
        params: tagParam,
        querystring: {
          type: 'object',
          required: ['count'],
          properties: { ...keyQuery, count: { type: 'integer', minimum: 1, maximum: MAX_BATCH } },
          additionalProperties: false,
        },
        response: { 200: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } } } },
      },
    },
    async (req) => ({ ids: await ids.issue(req.params.tag, req.query.count, { ...req.query, token: clientToken(req.headers) }) }),
  );

  // Leaf-compatible: the bare ID as text.
  for (const mode of ['segment', 'snowflake'] as const) {
    app.get<{ Params: TagParams; Querystring: KeyQuery }>(
      `/api/${mode}/get/:tag`,
      {
        schema: { params: tagParam, querystring: { type: 'object', properties: keyQuery } },
      },
      async (req, reply: FastifyReply) => {
        // The token first: a tag the request may not use is not described.
        const tag = await ids.access(req.params.tag, clientToken(req.headers));
        if (tag.mode !== mode) throw invalid(`tag "${tag.tag}" is a ${tag.mode} tag; use ${routeOf(tag.mode, tag.tag)}`);
        return reply.type('text/plain').send((await one(req))[0]);
      },
    );
  }

  app.get<{ Params: TagParams & { id: string } }>(
    '/v1/decode/:tag/:id',
    {
      schema: {
        params: {
          type: 'object',
          required: ['tag', 'id'],
          properties: { ...tagParam.properties, id: { type: 'string', pattern: '^[0-9]{1,19}$' } },
        },
      },
    },
    async (req) => decodeId(ids, req.params.tag, req.params.id, clientToken(req.headers), opts.staff?.(bearerToken(req.headers.authorization)) ?? false),
  );
}

/** The route that serves one ID of a tag of this mode: Leaf's for its two modes, idmint's own for rules. */
function routeOf(mode: string, tag: string): string {
  return mode === 'rule' ? `/v1/id/${tag}?app=<app>` : `/api/${mode}/get/${tag}`;
}
