// `idmint import <system>`: the command line of an import. idmint's own Redis and MySQL come
// from the environment (docs/CONFIG.md); the old system's store from the options. Prints the
// plan (--dry-run: and writes nothing), or the report as JSON with --json.
import pino from 'pino';
import { EVERY_APP, FOLD_SHARD } from '../../core/app-fold.js';
import { operatorFloor } from '../../core/idserver-floors.js';
import { SYSTEMS, type OldSystem, type OperatorFloor } from '../../core/import-plan.js';
import type { Config } from '../../config.js';
import { IdmintError } from '../../errors.js';
import { migrate } from '../../store/mysql/migrations.js';
import { createPool } from '../../store/mysql/pool.js';
import { TagsRepo } from '../../store/mysql/tags-repo.js';
import { createDefaultRedis, createRedis, whenReady, type RedisClient } from '../../store/redis/connection.js';
import { Keys } from '../../store/redis/keys.js';
import { SegmentStore } from '../../store/redis/segments.js';
import { Importer, type ImportReport, type ImportRequest } from './importer.js';

export const IMPORT_USAGE = `       idmint import leaf --mysql <url of Leaf's database>
       idmint import tinyid --mysql <url of Tinyid's database>
       idmint import id_server --config <its config.json> --mysql <url of its database> [--time-zone <zone>]
                               [--margin <counters>] [--floor <rule>[/<app>]=<counter>]... [--idserver-log <file>]...
                               create (or raise) tags above every ID the old system handed out;
                               --dry-run: print the plan and write nothing; --json: the report as JSON`;

export interface ImportArgs {
  readonly request: ImportRequest;
  readonly json: boolean;
}

/** Parses `import <system> ...`; a string is the problem to print with the usage. */
export function parseImportArgs(args: readonly string[]): ImportArgs | string {
  const [system, ...rest] = args;
  if (!SYSTEMS.includes(system as OldSystem)) return `import needs a system: ${SYSTEMS.join(', ')}`;
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  const floors: OperatorFloor[] = [];
  const logFiles: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (name === '--dry-run' || name === '--json' || name === '--force') {
      flags.add(name);
    } else if (name === '--mysql' || name === '--config' || name === '--time-zone' || name === '--margin' || name === '--floor' || name === '--idserver-log') {
      const v = eq > 0 ? a.slice(eq + 1) : rest[++i];
      if (v === undefined || v === '') return `${name} needs a value`;
      if (name === '--floor') {
        const at = v.lastIndexOf('=');
        const f = at > 0 ? operatorFloor(v.slice(0, at), v.slice(at + 1)) : `--floor needs <rule>=<counter> or <rule>/<app>=<counter>, got "${v}"`;
        if (typeof f === 'string') return f;
        floors.push(f);
      } else if (name === '--idserver-log') logFiles.push(v);
      else values[name] = v;
    } else return `unknown option ${a}`;
  }
  const margin = values['--margin'];
  if (margin !== undefined && !/^\d{1,15}$/.test(margin)) return `--margin must be a whole number of counters (0 or more), got "${margin}"`;
  if (!values['--mysql']) return `import ${system} needs --mysql <url of its database>`;
  if (system === 'id_server' && !values['--config']) return 'import id_server needs --config <path of its config.json>';
  if (system !== 'id_server' && (values['--config'] || values['--time-zone'] || margin !== undefined || floors.length || logFiles.length))
    return `--config, --time-zone, --margin, --floor and --idserver-log are options of import id_server`;
  return {
    request: {
      system: system as OldSystem,
      mysql: values['--mysql'],
      config: values['--config'],
      timeZone: values['--time-zone'],
      dryRun: flags.has('--dry-run'),
      force: flags.has('--force'),
      ...(margin !== undefined ? { margin: Number(margin) } : {}),
      ...(floors.length ? { floors } : {}),
      ...(logFiles.length ? { logFiles } : {}),
    },
    json: flags.has('--json'),
  };
}

/** The report in lines for people. */
export function formatReport(r: ImportReport): string {
  const out = [`${r.dry_run ? 'dry run (nothing written): ' : ''}import from ${r.system}, ${r.tags.length} tag(s)`];
  for (const t of r.tags) {
    const floor = t.counter_floor !== undefined ? `, first counter above ${t.counter_floor}` : '';
    const scopes = t.floors
      .filter((f) => f.scope !== '')
      .map(
        (f) =>
          `${f.scope}${f.shard === FOLD_SHARD ? (f.scope.startsWith(`${EVERY_APP}/`) ? ' (every app)' : ' (every case)') : ''} above sequence ${f.counter}`,
      );
    out.push(
      `  ${t.action.padEnd(9)} ${t.mode.padEnd(7)} ${t.tag}: old max ${t.old_max}${floor}${scopes.length ? `; counters ${scopes.join(', ')}` : ''}${t.tokens_added ? `; ${t.tokens_added} token(s) added` : ''}`,
    );
    for (const n of t.notes) out.push(`            note: ${n}`);
  }
  for (const n of r.notes) out.push(`  note: ${n}`);
  return out.join('\n');
}

/** Runs an import against idmint's own stores; returns the process exit code. */
export async function runImport(config: Config, args: ImportArgs): Promise<number> {
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }, pino.destination(2));
  const keys = new Keys(config.redisPrefix);
  const redis = createDefaultRedis(config, 'command');
  const named: [string, RedisClient][] = Object.entries(config.redisUrls)
    .filter(([n]) => n !== 'default')
    .map(([n, url]) => [n, createRedis(url, 'command', undefined, config.redisSentinelPassword)]);
  const clients = [redis, ...named.map(([, c]) => c)];
  for (const c of clients) c.on('error', () => undefined);
  const pool = await createPool(config.mysqlUrl);
  try {
    await whenReady(redis);
    await migrate(pool);
    const importer = new Importer({
      pool,
      tags: new TagsRepo(pool),
      log,
      segments: new SegmentStore({ default: redis, ...Object.fromEntries(named) }, keys),
      announce: async (tag) => {
        await redis.publish(keys.tagsChanged(), tag);
      },
    });
    const report = await importer.run(args.request);
    // Written out before the process exits: a large report to a pipe is written asynchronously.
    const text = `${args.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`;
    await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
    return 0;
  } catch (err) {
    if (err instanceof IdmintError) {
      console.error(err.message);
      return err.code === 'INVALID_ARGUMENT' ? 2 : 1;
    }
    throw err;
  } finally {
    for (const c of clients) await c.quit().catch(() => c.disconnect());
    await pool.end().catch(() => undefined);
  }
}
