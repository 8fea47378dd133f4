// Admin API for per-tag client tokens: create (the secret is shown once), list, revoke. A tag
// with at least one live token serves IDs only to requests carrying one (HTTP header, stream
// take, UDP field); changes reach every process at once, like tag changes.
import type { FastifyInstance } from 'fastify';
import { IdmintError } from '../../errors.js';
import type { Runtime } from '../../runtime.js';
import { tagName } from '../schemas.js';

const params = {
  type: 'object',
  required: ['tag'],
  properties: { tag: tagName, id: { type: 'integer', minimum: 1 } },
} as const;

export async function adminTokenRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  const mustExist = async (tag: string) => {
    if (!(await rt.tags.get(tag))) throw new IdmintError('TAG_NOT_FOUND', `tag "${tag}" does not exist`);
  };

  app.post<{ Params: { tag: string }; Body: { name?: string } }>(
    '/v1/admin/tags/:tag/tokens',
    {
      schema: {
        params,
        body: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } } },
      },
    },
    async (req, reply) => {
      await mustExist(req.params.tag);
      const t = await rt.tokens.create(req.params.tag, req.body?.name ?? 'client');
      await rt.registry.announce(req.params.tag);
      req.log.info({ tag: req.params.tag, tokenId: t.id, name: t.name }, 'client token created');
      return reply.code(201).send({ id: t.id, name: t.name, token: t.token, created_at: t.createdAt });
    },
  );

  app.get<{ Params: { tag: string } }>('/v1/admin/tags/:tag/tokens', { schema: { params } }, async (req) => {
    await mustExist(req.params.tag);
    return { tokens: (await rt.tokens.list(req.params.tag)).map((t) => ({ id: t.id, name: t.name, created_at: t.createdAt })) };
  });

  app.delete<{ Params: { tag: string; id: number } }>('/v1/admin/tags/:tag/tokens/:id', { schema: { params } }, async (req, reply) => {
    if (!(await rt.tokens.revoke(req.params.tag, req.params.id)))
      throw new IdmintError('NOT_FOUND', `tag "${req.params.tag}" has no live token ${req.params.id}`);
    await rt.registry.announce(req.params.tag);
    req.log.info({ tag: req.params.tag, tokenId: req.params.id }, 'client token revoked');
    return reply.code(204).send();
  });
}
