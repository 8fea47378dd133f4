// Admin API for tags: create, list, show with live state, update, delete. Every change goes
// through the door (service/tag-admin.ts), which announces it so every process serves the new
// definition at once.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../runtime/runtime.js';
import { shownId, tagView as view } from '../../../service/admin-reads.js';
import { capacityJson } from '../../../service/capacity.js';
import type { StoredTag } from '../../../service/tag-admin.js';
import { tagParam } from '../schemas.js';

export async function adminTagRoutes(app: FastifyInstance, opts: { rt: Services }): Promise<void> {
  const { rt } = opts;

  app.post('/v1/admin/tags', async (req, reply) => {
    const stored = await rt.tagAdmin.createTag(req.body);
    req.log.info({ tag: stored.tag, epoch: stored.epoch }, 'tag created');
    return reply.code(201).send(view(stored));
  });

  /** A tag's capacity, or null when it cannot be read now (the rest of the view still answers). */
  const capacityOf = (t: StoredTag) =>
    rt.capacity.ofTag(t).then(capacityJson, (err: Error) => {
      app.log.warn({ tag: t.tag, err: err.message }, 'capacity of a tag could not be read');
      return null;
    });

  app.get('/v1/admin/tags', async () => {
    const tags = await rt.adminReads.listTags();
    const capacities = await Promise.all(tags.map(capacityOf));
    return { tags: tags.map((t, i) => ({ ...view(t), capacity: capacities[i] })) };
  });

  app.get<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req) => {
    const stored = await rt.adminReads.getTag(req.params.tag);
    const shards = [];
    // IDs where they are a line of the counter, else counters, as allocated_max always shows.
    const id = (k: number) => shownId(stored, k);
    for (const { shard, mark, redis: state } of await rt.adminReads.shardStates(stored)) {
      const remaining =
        state?.cur !== undefined && state.end !== undefined ? Math.max(0, state.end - state.cur + 1) : 0;
      shards.push({
        shard,
        allocated_max: mark ? String(mark.maxId) : '0',
        step: mark?.step ?? stored.step,
        redis: state === undefined ? 'unreachable' : state.gen ? 'ready' : 'empty',
        current:
          state?.cur !== undefined && remaining > 0
            ? { next_id: id(state.cur), last_id: id(state.end!), remaining }
            : null,
        next: state?.next ? { first_id: id(state.next[0]), last_id: id(state.next[1]) } : null,
        segments_used: state?.seg ?? 0,
        issued_since_redis_start: state?.taken ?? 0,
        exhausted: state?.exhausted ?? false,
      });
    }
    // MySQL found behind Redis and raised by a refill (docs/GUARANTEES.md, "MySQL comes back behind").
    const regression = await rt.adminReads.lastRegression(stored.tag);
    const counterRegression = regression && {
      at: regression.at,
      shard: regression.shard,
      ...(regression.scope ? { scope: regression.scope } : {}),
      from: String(regression.from),
      to: String(regression.to),
      node: regression.nodeId,
      count: regression.count,
    };
    // Live idempotency keys of the tag (null when its Redis cannot be read now).
    const idempotencyKeys = await rt.adminReads.idempotencyKeys(stored).catch(() => null);
    return {
      ...view(stored),
      capacity: await capacityOf(stored),
      state: {
        shards,
        idempotency_keys: idempotencyKeys,
        ...(counterRegression ? { counter_regression: counterRegression } : {}),
      },
    };
  });

  app.patch<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req) => {
    const stored = await rt.tagAdmin.updateTag(req.params.tag, req.body);
    req.log.info({ tag: stored.tag }, 'tag updated');
    return view(stored);
  });

  app.delete<{ Params: { tag: string } }>(
    '/v1/admin/tags/:tag',
    { schema: { params: tagParam } },
    async (req, reply) => {
      const old = await rt.tagAdmin.deleteTag(req.params.tag);
      req.log.info({ tag: old.tag }, 'tag deleted');
      return reply.code(204).send();
    },
  );
}
