// Tag definitions in MySQL: create (or re-create above every ID the old tag issued),
// read, update, soft delete.
import { randomBytes } from 'node:crypto';
import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { counterLimit, floorAbove } from '../../core/layout.js';
import { permuteToJson } from '../../core/permute-spec.js';
import {
  parseOptions,
  storedOptions,
  tagFromStorage,
  type Mode,
  type SpecOf,
  type TagSpec,
} from '../../core/tag-kinds.js';
import { IdmintError, invalid, unavailable } from '../../errors.js';
import { lateTimeout } from '../../late-timeout.js';
import { storeError } from './pool.js';

/** What the tag store keeps beside a definition. */
export interface StoredFields {
  /** Counts re-creations and moves of this name; part of the tag's Redis keys. */
  readonly epoch: number;
  /** The named Redis server holding the tag's segment state (see REDIS_URLS). */
  readonly redis: string;
  /** SHA-256 of the tag's live client tokens, as served (set by the tag registry). */
  readonly tokenHashes?: ReadonlySet<string>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A definition as the tag store holds it: one kind of tag (core/tag-kinds.ts) with its row's fields. */
export type StoredTag = TagSpec & StoredFields;
/** A stored definition of one kind. */
export type StoredOf<M extends Mode> = SpecOf<M> & StoredFields;

const COLUMNS = `tag, mode, order_mode, layout, shards, app_id, app_bits, step, min_step, max_step,
  target_seconds, prefetch, max_id_limit, stride, id_offset, node_block, enabled, description, options, epoch, deleted,
  counter_floor, redis_name, created_at, updated_at`;

/** A new permutation key: 16 random bytes (AES-128), in hex. */
function newPermuteKey(): string {
  return randomBytes(16).toString('hex');
}

/**
 * The spec as stored: a permuted tag keeps `key` (its earlier life's: its counters continue,
 * and a new key would map them onto IDs already issued), or gets a new one.
 */
function withKey(spec: TagSpec, key?: string): TagSpec {
  if (spec.mode !== 'segment' || !spec.permute || spec.permute.key !== '') return spec;
  return { ...spec, permute: { ...spec.permute, key: key ?? newPermuteKey() } };
}

/**
 * The definition of a row, parsed once: its kind from the mode column, that kind's settings
 * from the options column (the key of a permuted tag included, which no read API shows:
 * specToJson leaves it out).
 */
function fromRow(row: RowDataPacket): StoredTag {
  const columns = {
    tag: row.tag,
    order: row.order_mode,
    layout: row.layout,
    shards: Number(row.shards),
    appId: Number(row.app_id),
    appBits: Number(row.app_bits),
    step: Number(row.step),
    minStep: Number(row.min_step),
    maxStep: Number(row.max_step),
    targetSeconds: Number(row.target_seconds),
    prefetch: Number(row.prefetch),
    maxIdLimit: String(row.max_id_limit),
    stride: Number(row.stride),
    offset: Number(row.id_offset),
    nodeBlock: Number(row.node_block),
    enabled: Number(row.enabled) === 1,
    description: row.description,
  };
  return {
    ...tagFromStorage(String(row.mode), columns, parseOptions(row.options)),
    epoch: Number(row.epoch),
    redis: row.redis_name,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

function specValues(spec: TagSpec): unknown[] {
  return [
    spec.mode,
    spec.order,
    spec.layout,
    spec.shards,
    spec.appId,
    spec.appBits,
    spec.step,
    spec.minStep,
    spec.maxStep,
    spec.targetSeconds,
    spec.prefetch,
    spec.maxIdLimit,
    spec.stride,
    spec.offset,
    spec.nodeBlock,
    spec.enabled ? 1 : 0,
    spec.description,
    JSON.stringify(storedOptions(spec)),
  ];
}

const SET_SPEC = `mode = ?, order_mode = ?, layout = ?, shards = ?, app_id = ?, app_bits = ?, step = ?,
  min_step = ?, max_step = ?, target_seconds = ?, prefetch = ?, max_id_limit = CAST(? AS UNSIGNED),
  stride = ?, id_offset = ?, node_block = ?, enabled = ?, description = ?, options = ?`;

/**
 * A MySQL error without the statement it failed on (mysql2's `sql`, with the values written
 * in): the statements of this file carry the options column, and with it a permuted tag's
 * key, which must never reach a log line.
 */
function withoutStatement(err: unknown): unknown {
  if (err !== null && typeof err === 'object' && 'sql' in err) delete (err as { sql?: unknown }).sql;
  return err;
}

/** Bound on one transaction: a MySQL that stops answering must not hang a refill forever. */
const TX_TIMEOUT_MS = 5000;

/** MySQL errors after which the whole transaction may simply run again. */
const RETRYABLE = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/** Runs fn in a transaction; a deadlock or lock timeout rolls back and runs it again (3 tries). */
async function inTx<T>(pool: Pool, fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inTxOnce(pool, fn);
    } catch (err) {
      const retryable = RETRYABLE.has((err as { code?: string }).code ?? '');
      // Still deadlocked or waiting on a lock after three tries: MySQL is too busy, say retry.
      if (retryable && attempt >= 3)
        throw unavailable(`MySQL transaction kept meeting locks: ${(err as Error).message}`, err);
      if (!retryable) throw err;
    }
  }
}

async function inTxOnce<T>(pool: Pool, fn: (connection: PoolConnection) => Promise<T>): Promise<T> {
  let connection: PoolConnection;
  try {
    connection = await pool.getConnection();
  } catch (err) {
    throw storeError(err);
  }
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = lateTimeout(() => {
      timedOut = true;
      reject(unavailable(`MySQL transaction took longer than ${TX_TIMEOUT_MS} ms`));
    }, TX_TIMEOUT_MS);
  });
  const work = (async () => {
    await connection.beginTransaction();
    const out = await fn(connection);
    await connection.commit();
    return out;
  })();
  try {
    return await Promise.race([work, timeout]);
  } catch (error) {
    if (!timedOut) await connection.rollback().catch(() => undefined);
    throw storeError(withoutStatement(error));
  } finally {
    clearTimeout(timer);
    work.catch(() => undefined);
    // A connection stuck in a timed-out transaction is closed, never handed to another caller.
    if (timedOut) connection.destroy();
    else connection.release();
  }
}

/** Largest counter value any (tag, shard) of the tag has handed out, or its floor. */
async function highestCounter(connection: PoolConnection, tag: string, floor: number): Promise<number> {
  const [rows] = await connection.query<RowDataPacket[]>('SELECT MAX(max_id) AS m FROM idmint_counters WHERE tag = ?', [
    tag,
  ]);
  return Math.max(floor, rows[0].m === null ? 0 : Number(rows[0].m));
}

/** Whether a re-created tag writes IDs exactly as its earlier life did (segment layouts are
 * handled by the counter floor instead). */
function sameIdShape(old: TagSpec, next: TagSpec): boolean {
  switch (old.mode) {
    // The counters of a segment tag continue, so a permuted one keeps its domain and key; an
    // unpermuted one cannot become permuted (nor back): the IDs of one could be among the other's.
    case 'segment':
      return (
        next.mode === 'segment' &&
        old.permute?.unit === next.permute?.unit &&
        old.permute?.width === next.permute?.width
      );
    case 'snowflake': {
      if (next.mode !== 'snowflake') return false;
      const [oldLayout, newLayout] = [old.snowflake, next.snowflake];
      return (
        oldLayout.epochMs === newLayout.epochMs &&
        oldLayout.unit === newLayout.unit &&
        oldLayout.timeBits === newLayout.timeBits &&
        oldLayout.workerBits === newLayout.workerBits &&
        oldLayout.seqBits === newLayout.seqBits
      );
    }
    case 'rule': {
      if (next.mode !== 'rule') return false;
      const [oldRule, newRule] = [old.rule, next.rule];
      return (
        oldRule.template === newRule.template &&
        oldRule.minCounter === newRule.minCounter &&
        oldRule.resetSeconds === newRule.resetSeconds &&
        oldRule.timeZone === newRule.timeZone &&
        old.stride === next.stride &&
        old.offset === next.offset
      );
    }
  }
}

/** How the refusal to re-create `old` as `next` describes the old tag's IDs, and what must stay. */
function earlierShape(old: TagSpec, next: TagSpec): { shape: string; keep: string } {
  switch (old.mode) {
    case 'snowflake':
      return { shape: ` with layout ${JSON.stringify(old.snowflake)}`, keep: 'layout' };
    case 'rule':
      return {
        shape: ` with rule ${JSON.stringify(old.rule)}, stride ${old.stride} and offset ${old.offset}`,
        keep: 'rule',
      };
    case 'segment': {
      const shape = old.permute
        ? ` with permute ${JSON.stringify(permuteToJson(old.permute))}`
        : next.permute
          ? ' without permute'
          : '';
      return { shape, keep: 'permute setting' };
    }
  }
}

export class TagsRepo {
  constructor(private readonly pool: Pool) {}

  async get(tag: string): Promise<StoredTag | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${COLUMNS} FROM idmint_tags WHERE tag = ? AND deleted = 0`,
      [tag],
    );
    return rows.length ? fromRow(rows[0]) : undefined;
  }

  async list(): Promise<StoredTag[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT ${COLUMNS} FROM idmint_tags WHERE deleted = 0 ORDER BY tag`,
    );
    return rows.map(fromRow);
  }

  /**
   * Creates the tag on a named Redis server; a name used before continues above every ID its
   * earlier life issued.
   */
  async create(spec: TagSpec, redis = 'default'): Promise<StoredTag> {
    await inTx(this.pool, async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT ${COLUMNS} FROM idmint_tags WHERE tag = ? FOR UPDATE`,
        [spec.tag],
      );
      if (rows.length === 0) {
        await connection.query(`INSERT INTO idmint_tags SET tag = ?, ${SET_SPEC}, redis_name = ?`, [
          spec.tag,
          ...specValues(withKey(spec)),
          redis,
        ]);
        return;
      }
      if (Number(rows[0].deleted) === 0) throw new IdmintError('TAG_EXISTS', `tag "${spec.tag}" already exists`);
      const old = fromRow(rows[0]);
      if (old.mode !== spec.mode || !sameIdShape(old, spec)) {
        const { shape, keep } = earlierShape(old, spec);
        throw invalid(
          `tag "${spec.tag}" was used before as a ${old.mode} tag${shape}; re-create it with the same mode and ${keep}, or choose another name, so no old ID can come back`,
        );
      }
      // Segment tags continue above every ID the old layout (and interleave) could have
      // produced; rule and snowflake tags of the same shape continue on their own (per-scope
      // counters, time).
      const floor =
        spec.mode === 'segment'
          ? floorAbove(old, await highestCounter(connection, spec.tag, Number(rows[0].counter_floor)), spec)
          : 0;
      await connection.query(
        'UPDATE idmint_counters SET max_id = GREATEST(max_id, CAST(? AS UNSIGNED)) WHERE tag = ?',
        [String(floor), spec.tag],
      );
      await connection.query(
        `UPDATE idmint_tags SET ${SET_SPEC}, epoch = epoch + 1, deleted = 0, counter_floor = CAST(? AS UNSIGNED),
           redis_name = ?, created_at = CURRENT_TIMESTAMP(3) WHERE tag = ?`,
        [...specValues(withKey(spec, old.permute?.key)), String(floor), redis, spec.tag],
      );
    });
    return (await this.get(spec.tag))!;
  }

  /** Stores a validated spec for an existing tag. Refuses to lower max_id_limit below IDs already allocated. */
  async update(spec: TagSpec): Promise<StoredTag> {
    await inTx(this.pool, async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT ${COLUMNS} FROM idmint_tags WHERE tag = ? AND deleted = 0 FOR UPDATE`,
        [spec.tag],
      );
      if (rows.length === 0) throw new IdmintError('TAG_NOT_FOUND', `tag "${spec.tag}" does not exist`);
      const allocated = await highestCounter(connection, spec.tag, Number(rows[0].counter_floor));
      const limit = spec.mode === 'rule' ? Number(spec.maxIdLimit) : counterLimit(spec, BigInt(spec.maxIdLimit));
      if (limit < allocated) {
        throw invalid(
          `max_id_limit ${spec.maxIdLimit} lies below IDs already allocated to Redis (counter ${allocated}); it can only be lowered to an ID above those`,
        );
      }
      await connection.query(`UPDATE idmint_tags SET ${SET_SPEC} WHERE tag = ?`, [...specValues(spec), spec.tag]);
    });
    return (await this.get(spec.tag))!;
  }

  /**
   * Records that the tag now lives on another Redis server, under a new epoch (so no state of
   * the old one is ever read again); false when the tag changed meanwhile (deleted,
   * re-created or moved: its epoch is no longer `epoch`).
   */
  async move(tag: string, epoch: number, to: string): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>(
      'UPDATE idmint_tags SET redis_name = ?, epoch = epoch + 1 WHERE tag = ? AND epoch = ? AND deleted = 0',
      [to, tag, epoch],
    );
    return result.affectedRows === 1;
  }

  /** Number of live tags per Redis server name. */
  async countByRedis(): Promise<Map<string, number>> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT redis_name, COUNT(*) AS n FROM idmint_tags WHERE deleted = 0 GROUP BY redis_name',
    );
    return new Map(rows.map((r) => [String(r.redis_name), Number(r.n)]));
  }

  /** Marks the tag deleted; returns what it was, for clearing its Redis state. */
  async remove(tag: string): Promise<StoredTag> {
    return inTx(this.pool, async (connection) => {
      const [rows] = await connection.query<RowDataPacket[]>(
        `SELECT ${COLUMNS} FROM idmint_tags WHERE tag = ? AND deleted = 0 FOR UPDATE`,
        [tag],
      );
      if (rows.length === 0) throw new IdmintError('TAG_NOT_FOUND', `tag "${tag}" does not exist`);
      await connection.query('UPDATE idmint_tags SET deleted = 1, enabled = 0 WHERE tag = ?', [tag]);
      return fromRow(rows[0]);
    });
  }
}

export { inTx };

/**
 * Inserts a new tag inside the caller's transaction (imports write many tags in one),
 * starting its counters above `counterFloor`. Fails with ER_DUP_ENTRY when the name exists.
 */
export async function insertTag(
  connection: PoolConnection,
  spec: TagSpec,
  counterFloor: number,
  redis = 'default',
): Promise<void> {
  await connection
    .query(`INSERT INTO idmint_tags SET tag = ?, ${SET_SPEC}, counter_floor = CAST(? AS UNSIGNED), redis_name = ?`, [
      spec.tag,
      ...specValues(withKey(spec)),
      String(counterFloor),
      redis,
    ])
    .catch((err: unknown) => {
      throw withoutStatement(err);
    });
}
