// The ID routes: one ID, a batch, decoding, and Leaf's plain-text route.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalid } from '../../errors.js';
import type { Dispenser } from '../../service/dispenser.js';
import { decodeId } from '../decode.js';
import { tagParam } from '../schemas.js';

const keyQuery = {
  key: { type: 'string', maxLength: 256 },
  app: { type: 'string', maxLength: 64 },
  salt: { type: 'string', maxLength: 64 },
} as const;
export const MAX_BATCH = 10000;

interface TagParams { tag: string }
interface KeyQuery { key?: string; app?: string; salt?: string }

/** A client token: `Authorization: Bearer <token>` or `X-Idmint-Token: <token>`. */
function clientToken(req: FastifyRequest): string | undefined {
  const x = req.headers['x-idmint-token'];
  if (typeof x === 'string') return x;
  const a = req.headers.authorization;
  return typeof a === 'string' && a.startsWith('Bearer ') ? a.slice(7).trim() : undefined;
}

function wantsText(req: FastifyRequest): boolean {
  const a = req.headers.accept;
  return typeof a === 'string' && a.startsWith('text/plain');
}

export async function idRoutes(app: FastifyInstance, opts: { dispenser: Dispenser }): Promise<void> {
  const { dispenser } = opts;

  const one = async (req: FastifyRequest<{ Params: TagParams; Querystring: KeyQuery }>) =>
    (await dispenser.ids(req.params.tag, 1, { ...req.query, token: clientToken(req) }))[0];

  app.get<{ Params: TagParams; Querystring: KeyQuery }>('/v1/id/:tag', {
    schema: {
      params: tagParam,
      querystring: { type: 'object', properties: keyQuery, additionalProperties: false },
      response: { 200: { type: 'object', properties: { id: { type: 'string' } } } },
    },
  }, (req, reply) => {
    // order node: served from memory without a promise when the ID is at hand.
    const send = (id: string) => (wantsText(req) ? reply.type('text/plain').send(id) : reply.send({ id }));
    const fast = dispenser.idNow(req.params.tag, { ...req.query, token: clientToken(req) });
    if (fast !== undefined) {
      send(fast);
      return;
    }
    one(req).then(send, (err: unknown) => reply.send(err));
  });

  app.get<{ Params: TagParams; Querystring: KeyQuery & { count: number } }>('/v1/ids/:tag', {
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
  }, async (req) => ({ ids: await dispenser.ids(req.params.tag, req.query.count, { ...req.query, token: clientToken(req) }) }));

  // Leaf-compatible: the bare ID as text.
  for (const mode of ['segment', 'snowflake'] as const) {
    app.get<{ Params: TagParams; Querystring: KeyQuery }>(`/api/${mode}/get/:tag`, {
      schema: { params: tagParam, querystring: { type: 'object', properties: keyQuery } },
    }, async (req, reply: FastifyReply) => {
      const tag = await dispenser.resolve(req.params.tag);
      if (tag.mode !== mode) throw invalid(`tag "${tag.tag}" is a ${tag.mode} tag; use /api/${tag.mode}/get/${tag.tag}`);
      return reply.type('text/plain').send(await one(req));
    });
  }

  app.get<{ Params: TagParams & { id: string } }>('/v1/decode/:tag/:id', {
    schema: {
      params: {
        type: 'object',
        required: ['tag', 'id'],
        properties: { ...tagParam.properties, id: { type: 'string', pattern: '^[0-9]{1,19}$' } },
      },
    },
  }, async (req) => decodeId(dispenser, req.params.tag, req.params.id));
}
