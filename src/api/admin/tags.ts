// Admin API for tags: create, list, show with live state, update, delete. Every change goes
// through the door (service/tag-admin.ts), which announces it so every process serves the new
// definition at once.
import type { FastifyInstance } from 'fastify';
import { seqString } from '../../core/layout.js';
import { runsOutAt } from '../../core/snowflake-layout.js';
import { specToJson } from '../../core/tag-spec.js';
import type { Services } from '../../runtime.js';
import type { StoredTag } from '../../service/tag-admin.js';
import { tagParam } from '../schemas.js';
import { capacityJson } from './capacity-view.js';

/** What a permuted tag's order promises: the counter's, not the numbers'. */
const PERMUTED_ORDER =
  'IDs are a keyed permutation of the counter: unique, and issued in counter order, but their numeric values follow no order (GET /v1/decode/:tag/:id gives the counter of an ID)';

function view(t: StoredTag): Record<string, unknown> {
  // specToJson shows a permuted tag's setting, never its key.
  const extra = t.mode === 'snowflake' ? { runs_out_at: runsOutAt(t.snowflake).toISOString() } : t.permute ? { id_order: PERMUTED_ORDER } : {};
  // Snowflake tags keep no state of their own in Redis: no server to show.
  const redis = t.mode === 'snowflake' ? {} : { redis: t.redis };
  return { ...specToJson(t), ...extra, ...redis, incarnation: t.epoch, created_at: t.createdAt, updated_at: t.updatedAt };
}

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
    const t = await rt.adminReads.getTag(req.params.tag);
    const shards = [];
    // A plain segment tag shows IDs (with stride: counter * stride + offset); sharded, permuted
    // and rule tags show their counters, as allocated_max always does.
    const id = (k: number) => (t.layout === 'plain' && t.mode === 'segment' && !t.permute ? seqString(t, k) : String(k));
    for (const { shard, mark: m, redis: s } of await rt.adminReads.shardStates(t)) {
      const remaining = s?.cur !== undefined && s.end !== undefined ? Math.max(0, s.end - s.cur + 1) : 0;
      shards.push({
        shard,
        allocated_max: m ? String(m.maxId) : '0',
        step: m?.step ?? t.step,
        redis: s === undefined ? 'unreachable' : s.gen ? 'ready' : 'empty',
        current: s?.cur !== undefined && remaining > 0 ? { next_id: id(s.cur), last_id: id(s.end!), remaining } : null,
        next: s?.next ? { first_id: id(s.next[0]), last_id: id(s.next[1]) } : null,
        segments_used: s?.seg ?? 0,
        issued_since_redis_start: s?.taken ?? 0,
        exhausted: s?.exhausted ?? false,
      });
    }
    // MySQL found behind Redis and raised by a refill (docs/GUARANTEES.md, "MySQL comes back behind").
    const r = await rt.adminReads.lastRegression(t.tag);
    const counterRegression = r && {
      at: r.at,
      shard: r.shard,
      ...(r.scope ? { scope: r.scope } : {}),
      from: String(r.from),
      to: String(r.to),
      node: r.nodeId,
      count: r.count,
    };
    // Live idempotency keys of the tag (null when its Redis cannot be read now).
    const idempotencyKeys = await rt.adminReads.idempotencyKeys(t).catch(() => null);
    return {
      ...view(t),
      capacity: await capacityOf(t),
      state: { shards, idempotency_keys: idempotencyKeys, ...(counterRegression ? { counter_regression: counterRegression } : {}) },
    };
  });

  app.patch<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req) => {
    const stored = await rt.tagAdmin.updateTag(req.params.tag, req.body);
    req.log.info({ tag: stored.tag }, 'tag updated');
    return view(stored);
  });

  app.delete<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req, reply) => {
    const old = await rt.tagAdmin.deleteTag(req.params.tag);
    req.log.info({ tag: old.tag }, 'tag deleted');
    return reply.code(204).send();
  });
}
