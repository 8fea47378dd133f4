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
                               [--margin <counters>] [--floor <rule>[/<app>]=<counter>]... [--idserver-log <file>]... [--trust-log]
       idmint import leaf-snowflake --tag <name> [--twepoch <ms>] [--layout 41/10/12] [--clock-skew <duration>]
                               create (or raise) tags above every ID the old system handed out;
                               --dry-run: print the plan and write nothing; --json: the report as JSON;
                               idmint import --help: every option`;

export const IMPORT_HELP = `usage:
${IMPORT_USAGE}

Every import (docs/MIGRATING.md):
  --dry-run               print what would be created or raised; write nothing
  --json                  print the report as JSON (as POST /v1/admin/import answers)
  --mysql <url>           the old system's database, read only (leaf, tinyid, id_server)
id_server:
  --config <path>         its config.json; the Lua files it names are read relative to it
  --time-zone <zone>      the IANA zone its servers ran in; no default: required for a rule
                          whose IDs carry a date or whose counter resets
  --margin <n>            counter values added above every saved counter's bound
  --floor <rule>=<n>      every app of the rule continues above n in the current period
  --floor <rule>/<app>=<n>  that app (every case of its name) continues above n
  --idserver-log <file>   a log of id_server (repeatable, any size: read line by line);
                          the saves it logged count as saved rows
  --trust-log             apply a floor a log line would raise to max_counter or above
                          (reported and not applied without it)
  --force                 accept a template whose IDs repeat within 10 years
leaf-snowflake (Leaf's snowflake mode: nothing to read, its IDs come from its clocks):
  --tag <name>            the idmint snowflake tag to create: the key Leaf's clients send
  --twepoch <ms>          Leaf's twepoch (default 1288834974657, Leaf's own)
  --layout <t>/<w>/<s>    Leaf's time/worker/sequence bits (default 41/10/12); the tag keeps them
  --clock-skew <d>        how far a Leaf node's clock may have run ahead of idmint's
                          (default 24h; 1500ms, 90s, 30m, 36h or 2d)
  --force                 accept a layout that runs out within 10 years`;

export interface ImportArgs {
  readonly request: ImportRequest;
  readonly json: boolean;
}

const VALUE_OPTIONS = [
  '--mysql',
  '--config',
  '--time-zone',
  '--margin',
  '--floor',
  '--idserver-log',
  '--tag',
  '--twepoch',
  '--layout',
  '--clock-skew',
];
const FLAGS = ['--dry-run', '--json', '--force', '--trust-log'];
const ID_SERVER_ONLY = ['--config', '--time-zone', '--margin', '--floor', '--idserver-log', '--trust-log'];
const SNOWFLAKE_ONLY = ['--tag', '--twepoch', '--layout', '--clock-skew'];
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as 1500ms, 90s, 30m, 36h or 2d (a bare number is ms), in ms; undefined when not one. */
export function parseDurationMs(text: string): number | undefined {
  const match = /^(\d{1,12})(ms|s|m|h|d)?$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNITS_MS[match[2] ?? 'ms'];
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The command line as a person would type it again, with the password of a URL left out. */
export function commandLine(args: readonly string[]): string {
  const shown = args.map((arg) => {
    const masked = arg.replace(/^((?:--mysql=)?mysql:\/\/[^:/@]*:)[^/]*@/, '$1***@');
    return /^[\w@%+=:,./*-]+$/.test(masked) ? masked : `'${masked.replace(/'/g, `'\\''`)}'`;
  });
  return `idmint import ${shown.join(' ')}${shown.some((a) => a.includes(':***@')) ? ' (*** stands for the password)' : ''}`;
}

/** Parses `import <system> ...`; a string is the problem to print with the usage. */
export function parseImportArgs(args: readonly string[]): ImportArgs | string {
  const [system, ...rest] = args;
  if (!SYSTEMS.includes(system as OldSystem)) return `import needs a system: ${SYSTEMS.join(', ')}`;
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  const floors: OperatorFloor[] = [];
  const logFiles: string[] = [];
  const given = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.includes(name) && eq < 0) {
      flags.add(name);
      given.add(name);
    } else if (VALUE_OPTIONS.includes(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
      if (value === undefined || value === '') return `${name} needs a value`;
      given.add(name);
      if (name === '--floor') {
        const at = value.lastIndexOf('=');
        const floor =
          at > 0
            ? operatorFloor(value.slice(0, at), value.slice(at + 1))
            : `--floor needs <rule>=<counter> or <rule>/<app>=<counter>, got "${value}"`;
        if (typeof floor === 'string') return floor;
        floors.push(floor);
      } else if (name === '--idserver-log') logFiles.push(value);
      else values[name] = value;
    } else return `unknown option ${arg}`;
  }
  const margin = values['--margin'];
  if (margin !== undefined && !/^\d{1,15}$/.test(margin))
    return `--margin must be a whole number of counters (0 or more), got "${margin}"`;
  const misplaced = [...given].filter((o) =>
    system === 'id_server'
      ? SNOWFLAKE_ONLY.includes(o)
      : system === 'leaf-snowflake'
        ? ID_SERVER_ONLY.includes(o) || o === '--mysql'
        : [...ID_SERVER_ONLY, ...SNOWFLAKE_ONLY, '--force'].includes(o),
  );
  if (misplaced.length) return `${misplaced.join(', ')}: not an option of import ${system} (idmint import --help)`;
  if (system === 'leaf-snowflake') return snowflakeArgs(values, flags);
  if (!values['--mysql']) return `import ${system} needs --mysql <url of its database>`;
  if (system === 'id_server' && !values['--config']) return 'import id_server needs --config <path of its config.json>';
  return {
    request: {
      system: system as OldSystem,
      mysql: values['--mysql'],
      config: values['--config'],
      timeZone: values['--time-zone'],
      dryRun: flags.has('--dry-run'),
      force: flags.has('--force'),
      trustLog: flags.has('--trust-log'),
      ...(margin !== undefined ? { margin: Number(margin) } : {}),
      ...(floors.length ? { floors } : {}),
      ...(logFiles.length ? { logFiles } : {}),
      finish: commandLine(args),
    },
    json: flags.has('--json'),
  };
}

function snowflakeArgs(values: Record<string, string>, flags: Set<string>): ImportArgs | string {
  const tag = values['--tag'];
  if (!tag) return "import leaf-snowflake needs --tag <name>: the idmint tag to create, the key Leaf's clients send";
  const tw = values['--twepoch'];
  if (tw !== undefined && !/^\d{1,16}$/.test(tw))
    return `--twepoch must be Leaf's twepoch in milliseconds since 1970 (e.g. 1288834974657), got "${tw}"`;
  const layout = values['--layout'];
  const bits = layout === undefined ? undefined : /^(\d{1,2})\/(\d{1,2})\/(\d{1,2})$/.exec(layout);
  if (bits === null)
    return `--layout must be Leaf's <time bits>/<worker bits>/<sequence bits> (e.g. 41/10/12), got "${layout}"`;
  const skew = values['--clock-skew'];
  const skewMs = skew === undefined ? undefined : parseDurationMs(skew);
  if (skew !== undefined && skewMs === undefined)
    return `--clock-skew must be a duration such as 1500ms, 90s, 30m, 36h or 2d, got "${skew}"`;
  return {
    request: {
      system: 'leaf-snowflake',
      leafSnowflake: {
        tag,
        ...(tw !== undefined ? { twepochMs: Number(tw) } : {}),
        ...(bits
          ? { layout: { timeBits: Number(bits[1]), workerBits: Number(bits[2]), seqBits: Number(bits[3]) } }
          : {}),
        ...(skewMs !== undefined ? { clockSkewMs: skewMs } : {}),
      },
      dryRun: flags.has('--dry-run'),
      force: flags.has('--force'),
    },
    json: flags.has('--json'),
  };
}

/** The report in lines for people. */
export function formatReport(report: ImportReport): string {
  const out = [
    `${report.dry_run ? 'dry run (nothing written): ' : ''}import from ${report.system}, ${report.tags.length} tag(s)`,
  ];
  for (const tag of report.tags) {
    const floor = tag.counter_floor !== undefined ? `, first counter above ${tag.counter_floor}` : '';
    const zone = tag.time_zone !== undefined ? `, zone ${tag.time_zone}` : '';
    const snowflake = tag.snowflake;
    const layout = snowflake
      ? `; epoch ${snowflake.epoch}, layout ${snowflake.time_bits}/${snowflake.worker_bits}/${snowflake.seq_bits}, runs out ${snowflake.runs_out_at}`
      : '';
    const scopes = tag.floors
      .filter((f) => f.scope !== '')
      .map(
        (f) =>
          `${f.scope}${f.shard === FOLD_SHARD ? (f.scope.startsWith(`${EVERY_APP}/`) ? ' (every app)' : ' (every case)') : ''} above sequence ${f.counter}`,
      );
    out.push(
      `  ${tag.action.padEnd(9)} ${tag.mode.padEnd(7)} ${tag.tag}: old max ${tag.old_max}${floor}${zone}${layout}${scopes.length ? `; counters ${scopes.join(', ')}` : ''}${tag.tokens_added ? `; ${tag.tokens_added} token(s) added` : ''}`,
    );
    for (const note of tag.notes) out.push(`            note: ${note}`);
  }
  for (const note of report.notes) out.push(`  note: ${note}`);
  return out.join('\n');
}

/**
 * Writes the report to stdout. A reader that went away (`| head -1`) is no failure: the import
 * is written by then, so the rest is dropped and the command still succeeds.
 */
function printReport(text: string): Promise<void> {
  return new Promise<void>((resolve) => {
    // Left in place after an error: the stream may report the same closed pipe again.
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') process.stderr.write(`the report could not be written: ${err.message}\n`);
      resolve();
    };
    process.stdout.on('error', onError);
    process.stdout.write(text, (err) => {
      if (err) return onError(err);
      process.stdout.off('error', onError);
      resolve();
    });
  });
}

/** A test's pause between retiring and writing (TEST_MODE only): it kills the import there. */
function pauseHook(config: Config): (() => Promise<void>) | undefined {
  if (!config.testMode || process.env.IMPORT_PAUSE_AFTER_RETIRE !== '1') return undefined;
  return () => {
    process.stderr.write('import paused after retiring (IMPORT_PAUSE_AFTER_RETIRE)\n');
    return new Promise<void>(() => undefined);
  };
}

/** Runs an import against idmint's own stores; returns the process exit code. */
export async function runImport(config: Config, args: ImportArgs): Promise<number> {
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }, pino.destination(2));
  const keys = new Keys(config.redisPrefix);
  const redis = createDefaultRedis(config, 'command');
  const named: [string, RedisClient][] = Object.entries(config.redisUrls)
    .filter(([name]) => name !== 'default')
    .map(([name, url]) => [name, createRedis(url, 'command', undefined, config.redisSentinelPassword)]);
  const clients = [redis, ...named.map(([, client]) => client)];
  for (const client of clients) client.on('error', () => undefined);
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
      afterRetire: pauseHook(config),
    });
    const report = await importer.run({ ...args.request, progress: (line) => process.stderr.write(`${line}\n`) });
    // Written out before the process exits: a large report to a pipe is written asynchronously.
    await printReport(`${args.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof IdmintError) {
      console.error(err.message);
      return err.code === 'INVALID_ARGUMENT' ? 2 : 1;
    }
    throw err;
  } finally {
    for (const client of clients) await client.quit().catch(() => client.disconnect());
    await pool.end().catch(() => undefined);
  }
}
