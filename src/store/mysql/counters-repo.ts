// Segment allocation: one MySQL transaction moves a (tag, shard)'s high-water mark and logs
// the segment. The row lock decides who owns which range; racing allocations get distinct
// ranges. The tag row is read under a shared lock so a re-creation cannot interleave.
// A caller that knows what Redis has already installed for the counter passes it as `floor`:
// when MySQL lies below it (restored from a backup, failed over to a replica that missed the
// last allocations), the mark is raised above it in the same transaction and the regression
// is recorded. The floor only ever raises; the install fences still decide what is served.
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { everyAppScope, FOLD_SHARD, foldScope } from '../../core/app-fold.js';
import { counterLimit } from '../../core/layout.js';
import type { Range } from '../../core/ranges.js';
import { inTx } from './tags-repo.js';

/** MySQL's mark was found below what Redis had installed, and raised from `from` to `to`. */
export interface Regression {
  readonly from: number;
  readonly to: number;
}

export type Allocation =
  | { readonly kind: 'segment'; readonly range: Range; readonly limit: number; readonly regression?: Regression }
  | { readonly kind: 'exhausted'; readonly maxId: number; readonly regression?: Regression }
  | { readonly kind: 'stale' };

/** The last regression recorded for a tag (any shard or scope), for the admin view. */
export interface RegressionRecord extends Regression {
  readonly shard: number;
  readonly scope: string;
  readonly at: string;
  readonly nodeId: string;
  /** How many have been recorded for the tag in all. */
  readonly count: number;
}

export class CountersRepo {
  constructor(private readonly pool: Pool) {}

  /**
   * scope: '' for segment tags, '<app>/<period>' for rule counters. floor: the highest value
   * Redis has installed for this counter (its `hwm`), 0 when unknown.
   */
  async allocate(
    tag: string,
    shard: number,
    epoch: number,
    step: number,
    nodeId: string,
    scope = '',
    floor = 0,
  ): Promise<Allocation> {
    return inTx(this.pool, async (connection) => {
      const [tags] = await connection.query<RowDataPacket[]>(
        `SELECT epoch, deleted, mode, layout, shards, app_id, app_bits, max_id_limit, stride, id_offset, counter_floor
           FROM idmint_tags WHERE tag = ? LOCK IN SHARE MODE`,
        [tag],
      );
      const tagRow = tags[0];
      if (!tagRow || Number(tagRow.deleted) === 1 || Number(tagRow.epoch) !== epoch) return { kind: 'stale' } as const;
      // Creates the row when missing and, either way, takes its exclusive lock at once (a
      // shared lock first, then FOR UPDATE, would let two refills deadlock).
      await connection.query(
        'INSERT INTO idmint_counters (tag, shard, scope, max_id, step) VALUES (?, ?, ?, CAST(? AS UNSIGNED), ?) ON DUPLICATE KEY UPDATE max_id = max_id',
        [tag, shard, scope, String(tagRow.counter_floor), step],
      );
      const [rows] = await connection.query<RowDataPacket[]>(
        'SELECT max_id FROM idmint_counters WHERE tag = ? AND shard = ? AND scope = ? FOR UPDATE',
        [tag, shard, scope],
      );
      let maxId = Number(rows[0].max_id);
      let regression: Regression | undefined;
      if (floor > maxId) {
        // Every value up to floor went to Redis already: MySQL came back behind. Raise it here,
        // under the row lock, so this allocation is above everything installed.
        regression = { from: maxId, to: floor };
        maxId = floor;
        await connection.query(
          'UPDATE idmint_counters SET max_id = CAST(? AS UNSIGNED) WHERE tag = ? AND shard = ? AND scope = ? AND max_id < CAST(? AS UNSIGNED)',
          [String(floor), tag, shard, scope, String(floor)],
        );
        await connection.query(
          `INSERT INTO idmint_counter_regressions (tag, shard, scope, mysql_value, redis_value, node_id)
             VALUES (?, ?, ?, CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), ?)`,
          [tag, shard, scope, String(regression.from), String(regression.to), nodeId],
        );
      }
      if (scope !== '') {
        // A rule counter never starts below a floor an import wrote for every app name that
        // folds to this one (id_server's table compares names without case) or for every app.
        const [folds] = await connection.query<RowDataPacket[]>(
          'SELECT MAX(max_id) AS m FROM idmint_counters WHERE tag = ? AND shard = ? AND scope IN (?, ?)',
          [tag, FOLD_SHARD, foldScope(scope), everyAppScope(scope)],
        );
        if (folds[0].m !== null) maxId = Math.max(maxId, Number(folds[0].m));
      }
      // A rule's max_id_limit counts its sequence values already (stride included); a segment
      // tag's is an ID, converted to the counter through its layout and interleave.
      const limit =
        tagRow.mode === 'rule'
          ? Number(tagRow.max_id_limit)
          : counterLimit(
              {
                layout: tagRow.layout,
                shards: Number(tagRow.shards),
                appId: Number(tagRow.app_id),
                appBits: Number(tagRow.app_bits),
                stride: Number(tagRow.stride),
                offset: Number(tagRow.id_offset),
              },
              BigInt(tagRow.max_id_limit),
            );
      if (maxId >= limit) return { kind: 'exhausted', maxId, ...(regression ? { regression } : {}) } as const;
      const last = Math.min(maxId + step, limit);
      await connection.query(
        'UPDATE idmint_counters SET max_id = CAST(? AS UNSIGNED), step = ? WHERE tag = ? AND shard = ? AND scope = ?',
        [String(last), step, tag, shard, scope],
      );
      await connection.query(
        'INSERT INTO idmint_segments (tag, shard, scope, epoch, first_id, last_id, node_id) VALUES (?, ?, ?, ?, CAST(? AS UNSIGNED), CAST(? AS UNSIGNED), ?)',
        [tag, shard, scope, epoch, String(maxId + 1), String(last), nodeId],
      );
      return { kind: 'segment', range: [maxId + 1, last], limit, ...(regression ? { regression } : {}) } as const;
    });
  }

  /** The last regression recorded for a tag, or undefined when none was. */
  async lastRegression(tag: string): Promise<RegressionRecord | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT shard, scope, mysql_value, redis_value, node_id, seen_at,
              (SELECT COUNT(*) FROM idmint_counter_regressions WHERE tag = ?) AS n
         FROM idmint_counter_regressions WHERE tag = ? ORDER BY id DESC LIMIT 1`,
      [tag, tag],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      shard: Number(row.shard),
      scope: String(row.scope),
      from: Number(row.mysql_value),
      to: Number(row.redis_value),
      at: new Date(row.seen_at).toISOString(),
      nodeId: String(row.node_id),
      count: Number(row.n),
    };
  }

  /** The last step used for a (tag, shard), or undefined before its first segment. */
  async lastStep(tag: string, shard: number, scope = ''): Promise<number | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT step FROM idmint_counters WHERE tag = ? AND shard = ? AND scope = ?',
      [tag, shard, scope],
    );
    return rows.length ? Number(rows[0].step) : undefined;
  }

  /** High-water marks per shard (segment tags: scope ''), for the admin view. */
  async marks(tag: string, scope = ''): Promise<{ shard: number; maxId: number; step: number }[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT shard, max_id, step FROM idmint_counters WHERE tag = ? AND scope = ? ORDER BY shard',
      [tag, scope],
    );
    return rows.map((r) => ({ shard: Number(r.shard), maxId: Number(r.max_id), step: Number(r.step) }));
  }

  /** High-water marks of a rule's counters in one period: every app's scope "<app>/<period>". */
  async periodMarks(tag: string, period: number): Promise<{ scope: string; maxId: number }[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT scope, max_id FROM idmint_counters WHERE tag = ? AND shard = 0 AND scope LIKE ? ORDER BY scope',
      [tag, `%/${period}`],
    );
    return rows.map((r) => ({ scope: String(r.scope), maxId: Number(r.max_id) }));
  }

  /**
   * Counter values consumed per (shard, scope) of a tag's epoch over the allocations of the
   * last `seconds`: the high-water mark moved from the first segment's last ID to the newest
   * one's between their allocation times (each refill comes when the one before is used up
   * to its prefetch point). Needs two allocations in the window; MySQL's clock on both ends.
   */
  async allocationWindows(
    tag: string,
    epoch: number,
    seconds = 3600,
  ): Promise<Map<string, { ids: number; ms: number }>> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT shard, scope, COUNT(*) AS n, MIN(last_id) AS lo, MAX(last_id) AS hi,
              TIMESTAMPDIFF(MICROSECOND, MIN(allocated_at), MAX(allocated_at)) AS us
         FROM idmint_segments
        WHERE tag = ? AND epoch = ? AND allocated_at >= NOW(3) - INTERVAL ? SECOND
        GROUP BY shard, scope`,
      [tag, epoch, seconds],
    );
    const out = new Map<string, { ids: number; ms: number }>();
    for (const row of rows) {
      if (Number(row.n) < 2) continue;
      out.set(windowKey(Number(row.shard), String(row.scope)), {
        ids: Number(row.hi) - Number(row.lo),
        ms: Number(row.us) / 1000,
      });
    }
    return out;
  }
}

/** Key of allocationWindows' map. */
export const windowKey = (shard: number, scope: string): string => `${shard}\u0000${scope}`;
