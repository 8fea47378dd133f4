// What idmint holds for the names an import brings: definitions, epochs, counter floors,
// high-water marks and token hashes (live and revoked) (the plan's view of idmint, read before planning).
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { markKey, type Current, type CurrentTag } from '../../core/import-plan.js';
import type { TagsRepo } from '../../store/mysql/tags-repo.js';

export interface CurrentWithRedis extends Current {
  /** The named Redis server of each live tag. */
  readonly redis: ReadonlyMap<string, string>;
}

export async function readCurrent(pool: Pool, tags: TagsRepo, names: readonly string[]): Promise<CurrentWithRedis> {
  const current = new Map<string, CurrentTag>();
  const deleted = new Set<string>();
  const redis = new Map<string, string>();
  if (names.length === 0) return { live: current, deleted, redis };
  const [rows] = await pool.query<RowDataPacket[]>(
    'SELECT tag, deleted, counter_floor FROM idmint_tags WHERE tag IN (?)',
    [names],
  );
  const [counters] = await pool.query<RowDataPacket[]>(
    'SELECT tag, shard, scope, max_id FROM idmint_counters WHERE tag IN (?)',
    [names],
  );
  const [live] = await pool.query<RowDataPacket[]>(
    `SELECT s.tag, s.shard, s.scope, MIN(s.first_id) AS lowest FROM idmint_segments s
       JOIN idmint_tags t ON t.tag = s.tag AND t.epoch = s.epoch WHERE s.tag IN (?) GROUP BY s.tag, s.shard, s.scope`,
    [names],
  );
  for (const row of rows) {
    const name = String(row.tag);
    if (Number(row.deleted) === 1) {
      deleted.add(name);
      continue;
    }
    const tag = await tags.get(name);
    if (!tag) continue;
    const marks = new Map<string, number>();
    for (const counter of counters)
      if (String(counter.tag) === name)
        marks.set(markKey(Number(counter.shard), String(counter.scope)), Number(counter.max_id));
    const lowestLive = new Map<string, number>();
    for (const segment of live)
      if (String(segment.tag) === name)
        lowestLive.set(markKey(Number(segment.shard), String(segment.scope)), Number(segment.lowest));
    // Revoked tokens count too: a re-run must not bring back a token an operator revoked.
    const [hashes] = await pool.query<RowDataPacket[]>('SELECT token_hash FROM idmint_client_tokens WHERE tag = ?', [
      name,
    ]);
    current.set(name, {
      spec: tag,
      epoch: tag.epoch,
      counterFloor: Number(row.counter_floor),
      marks,
      lowestLive,
      tokenHashes: new Set(hashes.map((h) => String(h.token_hash))),
    });
    redis.set(name, tag.redis);
  }
  return { live: current, deleted, redis };
}
