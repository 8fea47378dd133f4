// The ID routes: one ID, a batch, decoding, and Leaf's plain-text route.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Mode } from '../../../core/tag-spec.js';
import type { IdService } from '../../../service/id-service.js';
import { MAX_BATCH } from '../../../service/id-options.js';
import { bearerToken, clientToken } from '../../credentials.js';
import { decodeId } from '../../decode.js';
import { ID_QUERY, ID_ROUTE, idempotencyKey, TEXT_TYPE, wantsText, type IdQuery } from '../id-route-spec.js';
import { tagParam } from '../schemas.js';

/**
 * The headers the ID routes read besides the token ones, for the OpenAPI description (docs/API.md#idempotency-keys).
 */
const idHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      description:
        '1 to 255 visible ASCII characters: a request sent again with the same key for the tag gets the IDs of the first one (at most 1000 IDs); the same key with another request is refused with 422 IDEMPOTENCY_KEY_MISMATCH',
    },
  },
} as const;

interface TagParams {
  tag: string;
}

type OneRequest = FastifyRequest<{ Params: TagParams; Querystring: IdQuery }>;

export async function idRoutes(
  app: FastifyInstance,
  opts: {
    ids: IdService /** Whether a bearer token is the admin or viewer token (decoding permuted IDs). */;
    staff?: (token: string | undefined) => boolean;
  },
): Promise<void> {
  const { ids } = opts;

  /** One ID: at once when the service answers from memory, else a promise. */
  const one = (req: OneRequest) =>
    ids.issue({
      ...req.query,
      tag: req.params.tag,
      as: 'one',
      token: clientToken(req.headers),
      idempotencyKey: idempotencyKey(req.headers),
    });

  // The route spec (path, tag, negotiation, token, closing answer) is shared with the
  // pre-router path: id-route-spec.ts.
  app.get<{ Params: TagParams; Querystring: IdQuery }>(
    ID_ROUTE,
    {
      schema: {
        params: tagParam,
        headers: idHeaders,
        querystring: { type: 'object', properties: ID_QUERY, additionalProperties: false },
        response: { 200: { type: 'object', properties: { id: { type: 'string' } } } },
      },
    },
    (req, reply) => {
      const send = (id: string) =>
        wantsText(req.headers.accept) ? reply.type(TEXT_TYPE).send(id) : reply.send({ id });
      // Served from memory without a promise when the ID is at hand.
      const got = one(req);
      if (got instanceof Promise) got.then(send, (err: unknown) => reply.send(err));
      else send(got);
    },
  );

  app.get<{ Params: TagParams; Querystring: IdQuery & { count: number } }>(
    '/v1/ids/:tag',
    {
      schema: {
        params: tagParam,
        headers: idHeaders,
        querystring: {
          type: 'object',
          required: ['count'],
          properties: { ...ID_QUERY, count: { type: 'integer', minimum: 1, maximum: MAX_BATCH } },
          additionalProperties: false,
        },
        response: { 200: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } } } },
      },
    },
    async (req) => ({
      ids: await ids.issue({
        ...req.query,
        tag: req.params.tag,
        as: 'ids',
        token: clientToken(req.headers),
        idempotencyKey: idempotencyKey(req.headers),
      }),
    }),
  );

  // Leaf-compatible: the bare ID as text.
  for (const mode of ['segment', 'snowflake'] as const) {
    app.get<{ Params: TagParams; Querystring: IdQuery }>(
      `/api/${mode}/get/:tag`,
      {
        schema: { params: tagParam, querystring: { type: 'object', properties: ID_QUERY } },
      },
      async (req, reply: FastifyReply) => {
        const id = await ids.issue({
          ...req.query,
          tag: req.params.tag,
          as: 'one',
          token: clientToken(req.headers),
          idempotencyKey: idempotencyKey(req.headers),
          accepts: { modes: [mode], elsewhere: routeOf },
        });
        return reply.type('text/plain').send(id);
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
    async (req) =>
      decodeId(
        ids,
        req.params.tag,
        req.params.id,
        clientToken(req.headers),
        opts.staff?.(bearerToken(req.headers.authorization)) ?? false,
      ),
  );
}

/** The route that serves one ID of a tag of each mode: Leaf's for its two modes, idmint's own for rules. */
const ROUTE_OF: { readonly [M in Mode]: (tag: string) => string } = {
  segment: (tag) => `/api/segment/get/${tag}`,
  snowflake: (tag) => `/api/snowflake/get/${tag}`,
  rule: (tag) => `/v1/id/${tag}?app=<app>`,
};
const routeOf = (mode: Mode, tag: string): string => ROUTE_OF[mode](tag);
