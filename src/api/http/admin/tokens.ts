// Admin API for per-tag client tokens: create (the secret is shown once), list, revoke. A tag
// with at least one live token serves IDs only to requests carrying one (HTTP header, stream
// take, UDP field); changes go through the door (service/tag-admin.ts) and reach every
// process at once, like tag changes.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../runtime/runtime.js';
import { tagName } from '../schemas.js';

const params = {
  type: 'object',
  required: ['tag'],
  properties: { tag: tagName, id: { type: 'integer', minimum: 1 } },
} as const;

export async function adminTokenRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;

  app.post<{ Params: { tag: string }; Body: { name?: string } }>(
    '/v1/admin/tags/:tag/tokens',
    {
      schema: {
        params,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } },
        },
      },
    },
    async (req, reply) => {
      const created = await rt.tagAdmin.createToken(req.params.tag, req.body?.name ?? 'client');
      req.log.info({ tag: req.params.tag, tokenId: created.id, name: created.name }, 'client token created');
      return reply
        .code(201)
        .send({ id: created.id, name: created.name, token: created.token, created_at: created.createdAt });
    },
  );

  app.get<{ Params: { tag: string } }>('/v1/admin/tags/:tag/tokens', { schema: { params } }, async (req) => {
    const tokens = await rt.adminReads.listTokens(req.params.tag);
    return { tokens: tokens.map((t) => ({ id: t.id, name: t.name, created_at: t.createdAt })) };
  });

  app.delete<{ Params: { tag: string; id: number } }>(
    '/v1/admin/tags/:tag/tokens/:id',
    { schema: { params } },
    async (req, reply) => {
      await rt.tagAdmin.revokeToken(req.params.tag, req.params.id);
      req.log.info({ tag: req.params.tag, tokenId: req.params.id }, 'client token revoked');
      return reply.code(204).send();
    },
  );
}
