// `idmint import <system>`: reads the old system's store, plans every tag (src/core/import-plan.ts)
// and writes the plan in one MySQL transaction, so an import either happens whole or not at
// all. A tag that idmint already serves and whose counter lies below the old system's is
// raised the way a move is made safe: its Redis state is retired first (takes answer "moved"
// and wait for the new definition), then MySQL raises its marks under a new epoch, then the
// change is announced; its old buffered segments are never served again. A re-run finds every
// counter at or above the old one and changes nothing. An import stopped between retiring and
// writing (killed, MySQL lost) leaves its tags retired, each with a note naming the import and
// how to finish it (running it again), which their requests answer.
import type { Logger } from 'pino';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { planRules } from '../../core/import-plan-rules.js';
import { planSegments } from '../../core/import-plan-segments.js';
import { planLeafSnowflake, type LeafSnowflakeImport } from '../../core/import-plan-snowflake.js';
import type { ImportPlan, OldSystem, OperatorFloor, TagPlan } from '../../core/import-plan.js';
import { validateTimeZone } from '../../core/period.js';
import { runsOutAt } from '../../core/snowflake-layout.js';
import { SpecProblems } from '../../core/spec-problems.js';
import { IdmintError, invalid } from '../../errors.js';
import { inTx, insertTag, type TagsRepo } from '../../store/mysql/tags-repo.js';
import { hashToken } from '../../token-hash.js';
import type { SegmentStore } from '../../store/redis/segments.js';
import { readCurrent } from './current.js';
import { filesOnDisk, filesSent, readIdServer, readIdServerLogs, readLeaf, readTinyid } from './old-stores.js';

export interface ImportRequest {
  readonly system: OldSystem;
  /** URL of the old system's MySQL database (every system but leaf-snowflake). */
  readonly mysql?: string;
  /** id_server: path of its config.json (Lua files are read relative to it). */
  readonly config?: string;
  /** id_server, instead of a path: the text of config.json and of each Lua file it names. */
  readonly files?: { readonly config: string; readonly lua: Readonly<Record<string, string>> };
  /**
   * id_server: the zone its servers ran in (their local time decided dates and periods). No
   * default: a rule whose IDs carry a date or whose counter resets is refused without it.
   */
  readonly timeZone?: string;
  readonly dryRun?: boolean;
  /** id_server: accept templates whose IDs repeat within 10 years (as for rule creation). */
  readonly force?: boolean;
  /** id_server: counter values added above every saved counter's bound (saved + id_step * batch_save). */
  readonly margin?: number;
  /** id_server: floors the operator gives, per rule or per (rule, app). */
  readonly floors?: readonly OperatorFloor[];
  /** id_server: paths of its log files, whose logged saves raise the floors. */
  readonly logFiles?: readonly string[];
  /** id_server, instead of paths: the text of its log. */
  readonly logs?: readonly { readonly name: string; readonly text: string }[];
  /** id_server: apply floors read from its log even where they reach max_counter. */
  readonly trustLog?: boolean;
  /** leaf-snowflake: the tag to create, Leaf's twepoch and layout, the clock-skew allowance. */
  readonly leafSnowflake?: Omit<LeafSnowflakeImport, 'force'>;
  /** Progress of long reads (log files), a line at a time. */
  readonly progress?: (line: string) => void;
  /** How to finish this import when it stops midway (its tags' requests name it): the command, or the route. */
  readonly finish?: string;
}

export interface ImportedTag {
  readonly tag: string;
  readonly mode: string;
  readonly action: TagPlan['action'];
  readonly old_max: string;
  /** Segment tags: the first counter value idmint will hand out is above this. */
  readonly counter_floor?: string;
  readonly floors: { shard: number; scope: string; counter: string }[];
  readonly tokens_added: number;
  /** Rule tags: the zone that dates the IDs and decides the periods. */
  readonly time_zone?: string;
  /** Snowflake tags: the layout. */
  readonly snowflake?: {
    epoch: string;
    epoch_ms: number;
    time_bits: number;
    worker_bits: number;
    seq_bits: number;
    runs_out_at: string;
  };
  readonly notes: readonly string[];
}

export interface ImportReport {
  readonly system: OldSystem;
  readonly dry_run: boolean;
  readonly tags: ImportedTag[];
  readonly notes: readonly string[];
}

export interface ImporterDeps {
  readonly pool: Pool;
  readonly tags: TagsRepo;
  readonly segments: SegmentStore;
  /** Tells every serving process that a tag changed. */
  readonly announce: (tag: string) => Promise<void>;
  readonly log: Logger;
  readonly now?: () => number;
  /** Runs once the tags to raise are retired, before MySQL is written (a test pauses here to kill the import). */
  readonly afterRetire?: () => Promise<void>;
}

/** How many lines of id_server's logs set aside are named one by one in the report. */
const SET_ASIDE_SHOWN = 50;

function refused(error: SpecProblems): IdmintError {
  return invalid(`import refused, nothing was written: ${error.problems.join('; ')}`);
}

export class Importer {
  constructor(private readonly deps: ImporterDeps) {}

  async run(req: ImportRequest): Promise<ImportReport> {
    let plan: ImportPlan;
    let redisOf: ReadonlyMap<string, string>;
    try {
      ({ plan, redisOf } = await this.plan(req));
    } catch (error) {
      if (error instanceof SpecProblems) throw refused(error);
      throw error;
    }
    if (!req.dryRun) await this.apply(plan, redisOf, req.finish);
    return report(plan, req.dryRun === true);
  }

  private async plan(req: ImportRequest): Promise<{ plan: ImportPlan; redisOf: ReadonlyMap<string, string> }> {
    const { pool, tags } = this.deps;
    const now = () => this.deps.now?.() ?? Date.now();
    if (req.system === 'leaf-snowflake') {
      const leaf = req.leafSnowflake;
      if (!leaf?.tag)
        throw new SpecProblems([
          'leaf-snowflake needs the tag to create: --tag <name> ("tag" over HTTP), the key Leaf\'s clients send',
        ]);
      const current = await readCurrent(pool, tags, [leaf.tag]);
      return { plan: planLeafSnowflake({ ...leaf, force: req.force }, current, now()), redisOf: current.redis };
    }
    if (!req.mysql)
      throw new SpecProblems([`${req.system} needs the old system's database: --mysql <url> ("mysql" over HTTP)`]);
    if (req.system === 'leaf' || req.system === 'tinyid') {
      const old = req.system === 'leaf' ? await readLeaf(req.mysql) : await readTinyid(req.mysql);
      const current = await readCurrent(
        pool,
        tags,
        old.map((o) => o.tag),
      );
      return { plan: planSegments(req.system, old, current, hashToken), redisOf: current.redis };
    }
    const files =
      req.config !== undefined
        ? filesOnDisk(req.config)
        : req.files
          ? filesSent(req.files.config, req.files.lua)
          : undefined;
    if (!files) throw new SpecProblems(['id_server needs its config.json and Lua files']);
    const zone = req.timeZone === undefined ? undefined : validateTimeZone(req.timeZone);
    const { rules, rows } = await readIdServer(files, req.mysql, zone);
    const logged = await readIdServerLogs(req.logFiles ?? [], req.logs ?? [], req.progress);
    const current = await readCurrent(
      pool,
      tags,
      rules.map((r) => r.tag),
    );
    const plan = planRules(rules, [...rows, ...logged.rows], current, now(), {
      force: req.force,
      margin: req.margin,
      floors: req.floors,
      trustLog: req.trustLog,
    });
    return { plan: { ...plan, notes: [...plan.notes, ...setAsideNotes(logged.setAside)] }, redisOf: current.redis };
  }

  private async apply(
    plan: ImportPlan,
    redisOf: ReadonlyMap<string, string>,
    finish: string | undefined,
  ): Promise<void> {
    const { pool, segments, announce, log } = this.deps;
    const raised = plan.tags.filter((t) => t.action === 'raise');
    // Retire the buffered state of every tag to raise before MySQL moves its floor: no take
    // can serve a segment from below the floor once the import has returned.
    const retired: TagPlan[] = [];
    try {
      const by = unfinished(plan, this.deps.now?.() ?? Date.now(), finish);
      for (const tag of raised) {
        await segments.retire(tag.tag, tag.epoch!, redisOf.get(tag.tag), by);
        retired.push(tag);
      }
    } catch (err) {
      await this.undoRetire(retired, redisOf);
      throw new IdmintError(
        'UNAVAILABLE',
        `import not written: the Redis state of tag "${raised[retired.length].tag}" could not be retired (${(err as Error).message}); retry once Redis answers`,
        { cause: err },
      );
    }
    if (raised.length) await this.deps.afterRetire?.();
    try {
      await inTx(pool, async (conn) => {
        for (const tag of plan.tags) {
          if (tag.action === 'create') {
            await insertTag(conn, tag.spec, tag.counterFloor ?? 0).catch((err: { code?: string }) => {
              if (err.code === 'ER_DUP_ENTRY')
                throw new IdmintError(
                  'CONFLICT',
                  `tag "${tag.tag}" was created while the import ran; run the import again`,
                );
              throw err;
            });
          } else if (tag.action === 'raise') {
            const [rows] = await conn.query<RowDataPacket[]>(
              'SELECT epoch, deleted FROM idmint_tags WHERE tag = ? FOR UPDATE',
              [tag.tag],
            );
            if (!rows.length || Number(rows[0].deleted) === 1 || Number(rows[0].epoch) !== tag.epoch) {
              throw new IdmintError(
                'CONFLICT',
                `tag "${tag.tag}" changed while the import ran (deleted, re-created or moved); run the import again`,
              );
            }
            await conn.query(
              'UPDATE idmint_tags SET counter_floor = GREATEST(counter_floor, CAST(? AS UNSIGNED)), epoch = epoch + 1 WHERE tag = ?',
              [String(tag.counterFloor ?? 0), tag.tag],
            );
          }
          for (const floor of tag.floors) {
            await conn.query(
              `INSERT INTO idmint_counters (tag, shard, scope, max_id, step) VALUES (?, ?, ?, CAST(? AS UNSIGNED), ?)
                 ON DUPLICATE KEY UPDATE max_id = GREATEST(max_id, VALUES(max_id))`,
              [tag.tag, floor.shard, floor.scope, String(floor.counter), tag.spec.step],
            );
          }
          for (const token of tag.tokens) {
            await conn.query('INSERT INTO idmint_client_tokens (tag, name, token_hash) VALUES (?, ?, ?)', [
              tag.tag,
              token.name,
              token.hash,
            ]);
          }
        }
      });
    } catch (err) {
      await this.undoRetire(retired, redisOf);
      throw err;
    }
    for (const tag of plan.tags) {
      if (tag.action !== 'unchanged' || tag.tokens.length) await announce(tag.tag);
    }
    for (const tag of raised) {
      void segments
        .reset(tag.tag, tag.epoch!, redisOf.get(tag.tag))
        .then(() => segments.forgetRetiredBy(tag.tag, tag.epoch!, redisOf.get(tag.tag)))
        .catch((err: Error) => log.warn({ tag: tag.tag, err: err.message }, 'Redis state of a raised tag left behind'));
    }
    log.info(
      { system: plan.system, created: plan.tags.filter((t) => t.action === 'create').length, raised: raised.length },
      'import written',
    );
  }

  /** Serves from the retired state again, but only where MySQL confirms the epoch is unchanged. */
  private async undoRetire(tags: readonly TagPlan[], redisOf: ReadonlyMap<string, string>): Promise<void> {
    for (const tag of tags) {
      const now = await this.deps.tags.get(tag.tag).catch(() => undefined);
      if (now && now.epoch === tag.epoch)
        await this.deps.segments.unretire(tag.tag, tag.epoch!, redisOf.get(tag.tag)).catch(() => undefined);
      else
        this.deps.log.warn(
          { tag: tag.tag },
          'tag left retired: the import may or may not have been written; run it again',
        );
    }
  }
}

/** The note a tag left retired by this import answers with: which import, and how to finish it. */
function unfinished(plan: ImportPlan, nowMs: number, finish: string | undefined): string {
  return `an import from ${plan.system} (started ${new Date(nowMs).toISOString()}) that retired the tag's Redis state and has not written the tag's new floor to MySQL; if that import is no longer running (killed, or it lost MySQL), finish it by running the same import again${finish ? `: ${finish}` : ''}`;
}

/** Lines of id_server's logs set aside (not in the shape of its saves), the first ones by name. */
function setAsideNotes(lines: readonly string[]): string[] {
  if (lines.length <= SET_ASIDE_SHOWN) return [...lines];
  return [
    ...lines.slice(0, SET_ASIDE_SHOWN),
    `${lines.length - SET_ASIDE_SHOWN} more line(s) of the logs set aside likewise (not in the shape of id_server's saves)`,
  ];
}

function report(plan: ImportPlan, dryRun: boolean): ImportReport {
  return {
    system: plan.system,
    dry_run: dryRun,
    tags: plan.tags.map((tag) => {
      const layout = tag.spec.mode === 'snowflake' ? tag.spec.snowflake : undefined;
      return {
        tag: tag.tag,
        mode: tag.mode,
        action: tag.action,
        old_max: tag.oldMax,
        ...(tag.counterFloor !== undefined ? { counter_floor: String(tag.counterFloor) } : {}),
        floors: tag.floors.map((f) => ({ shard: f.shard, scope: f.scope, counter: String(f.counter) })),
        tokens_added: tag.tokens.length,
        ...(tag.spec.mode === 'rule' ? { time_zone: tag.spec.rule.timeZone } : {}),
        ...(layout
          ? {
              snowflake: {
                epoch: new Date(layout.epochMs).toISOString(),
                epoch_ms: layout.epochMs,
                time_bits: layout.timeBits,
                worker_bits: layout.workerBits,
                seq_bits: layout.seqBits,
                runs_out_at: runsOutAt(layout).toISOString(),
              },
            }
          : {}),
        notes: tag.notes,
      };
    }),
    notes: plan.notes,
  };
}
