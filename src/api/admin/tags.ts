// Admin API for tags: create, list, show with live state, update, delete. Every change is
// announced so every process serves the new definition at once.
import type { FastifyInstance } from 'fastify';
import { seqString } from '../../core/layout.js';
import { runsOutAt } from '../../core/snowflake-layout.js';
import { specFromCreate, specFromUpdate, specToJson } from '../../core/tag-spec.js';
import { IdmintError, invalid } from '../../errors.js';
import type { Runtime } from '../../runtime.js';
import type { StoredTag } from '../../store/mysql/tags-repo.js';
import { DEFAULT_REDIS, type SegmentRef } from '../../store/redis/segments.js';
import { tagParam } from '../schemas.js';
import { capacityJson } from './capacity-view.js';

/** What a permuted tag's order promises: the counter's, not the numbers'. */
const PERMUTED_ORDER =
  'IDs are a keyed permutation of the counter: unique, and issued in counter order, but their numeric values follow no order (GET /v1/decode/:tag/:id gives the counter of an ID)';

function view(t: StoredTag): Record<string, unknown> {
  // specToJson shows a permuted tag's setting, never its key.
  const extra = t.snowflake ? { runs_out_at: runsOutAt(t.snowflake).toISOString() } : t.permute ? { id_order: PERMUTED_ORDER } : {};
  // Snowflake tags keep no state of their own in Redis: no server to show.
  const redis = t.mode === 'snowflake' ? {} : { redis: t.redis };
  return { ...specToJson(t), ...extra, ...redis, incarnation: t.epoch, created_at: t.createdAt, updated_at: t.updatedAt };
}

function refs(t: StoredTag): SegmentRef[] {
  return Array.from({ length: t.shards }, (_, shard) => ({ tag: t.tag, epoch: t.epoch, shard, redis: t.redis }));
}

export async function adminTagRoutes(app: FastifyInstance, opts: { rt: Runtime }): Promise<void> {
  const { rt } = opts;
  const mustGet = async (name: string) => {
    const t = await rt.tags.get(name);
    if (!t) throw new IdmintError('TAG_NOT_FOUND', `tag "${name}" does not exist`);
    return t;
  };

  /** The optional "redis" field of a create body: which named server holds the tag's state. */
  const redisOf = (body: unknown): { redis: string; rest: unknown } => {
    if (body === null || typeof body !== 'object' || Array.isArray(body) || !('redis' in body)) return { redis: DEFAULT_REDIS, rest: body };
    const { redis, ...rest } = body as Record<string, unknown>;
    if (typeof redis !== 'string' || !rt.segments.has(redis)) {
      throw invalid(
        `redis must name a configured Redis server: ${rt.segments
          .names()
          .map((n) => `"${n}"`)
          .join(', ')} (REDIS_URLS)`,
      );
    }
    if (redis !== DEFAULT_REDIS && (rest as { mode?: unknown }).mode === 'snowflake') {
      throw invalid('snowflake tags keep no state of their own in Redis: leave out redis');
    }
    return { redis, rest };
  };

  app.post('/v1/admin/tags', async (req, reply) => {
    const { redis, rest } = redisOf(req.body);
    const spec = specFromCreate(rest);
    const stored = await rt.tags.create(spec, redis);
    await rt.registry.announce(stored.tag);
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
    const tags = await rt.tags.list();
    const capacities = await Promise.all(tags.map(capacityOf));
    return { tags: tags.map((t, i) => ({ ...view(t), capacity: capacities[i] })) };
  });

  app.get<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req) => {
    const t = await mustGet(req.params.tag);
    const marks = new Map((await rt.counters.marks(t.tag)).map((m) => [m.shard, m]));
    const shards = [];
    // A plain segment tag shows IDs (with stride: counter * stride + offset); sharded, permuted
    // and rule tags show their counters, as allocated_max always does.
    const id = (k: number) => (t.layout === 'plain' && t.mode === 'segment' && !t.permute ? seqString(t, k) : String(k));
    for (const ref of refs(t)) {
      const s = await rt.segments.stats(ref).catch(() => undefined);
      const m = marks.get(ref.shard);
      if (!m && !s?.gen) continue;
      const remaining = s?.cur !== undefined && s.end !== undefined ? Math.max(0, s.end - s.cur + 1) : 0;
      shards.push({
        shard: ref.shard,
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
    const r = await rt.counters.lastRegression(t.tag);
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
    const idempotencyKeys = await rt.idempotency.held(t).catch(() => null);
    return {
      ...view(t),
      capacity: await capacityOf(t),
      state: { shards, idempotency_keys: idempotencyKeys, ...(counterRegression ? { counter_regression: counterRegression } : {}) },
    };
  });

  app.patch<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req) => {
    const cur = await mustGet(req.params.tag);
    const spec = specFromUpdate(cur, req.body);
    const stored = await rt.tags.update(spec);
    if (BigInt(stored.maxIdLimit) > BigInt(cur.maxIdLimit)) await rt.segments.clearExhausted(stored.tag, stored.epoch, stored.redis);
    await rt.registry.announce(stored.tag);
    req.log.info({ tag: stored.tag }, 'tag updated');
    return view(stored);
  });

  app.delete<{ Params: { tag: string } }>('/v1/admin/tags/:tag', { schema: { params: tagParam } }, async (req, reply) => {
    const old = await rt.tags.remove(req.params.tag);
    await rt.segments
      .reset(old.tag, old.epoch, old.redis)
      .catch((err: Error) => req.log.warn({ err: err.message }, 'Redis state of a deleted tag left behind'));
    await rt.registry.announce(old.tag);
    req.log.info({ tag: old.tag }, 'tag deleted');
    return reply.code(204).send();
  });
}
