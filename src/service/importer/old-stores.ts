// Reading the old system's store for an import: Leaf's leaf_alloc, Tinyid's tiny_id_info and
// tiny_id_token, id_server's config.json, Lua rule files, counter table and logs (streamed line
// by line: a log of any size). Read only: the old store is never written.
import { open, readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { dirname, resolve } from 'node:path';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { parseIdServerConfig } from '../../core/idserver-config.js';
import { parseIdServerLogLine } from '../../core/idserver-log.js';
import { parseIdServerLua } from '../../core/idserver-lua.js';
import type { OldCounterRow, OldRule, OldSegmentTag } from '../../core/import-plan.js';
import { SpecProblems } from '../../core/spec-problems.js';
import { poolOptions } from '../../store/mysql/pool.js';

/** Runs fn on one connection to the old database; a database that cannot be read is a refusal. */
async function withOldDb<T>(url: string, what: string, fn: (conn: mysql.Connection) => Promise<T>): Promise<T> {
  let opts: mysql.ConnectionOptions;
  try {
    const { connectionLimit: _, enableKeepAlive: __, ...rest } = poolOptions(url);
    opts = rest;
  } catch {
    throw new SpecProblems([
      `--mysql ${JSON.stringify(url)} is not a MySQL URL (mysql://user:password@host:port/database)`,
    ]);
  }
  if (!opts.database)
    throw new SpecProblems([`--mysql must name ${what}'s database: mysql://user:password@host:port/<database>`]);
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection(opts);
  } catch (error) {
    throw new SpecProblems([
      `cannot connect to ${what}'s database ${opts.host}:${opts.port}/${opts.database}: ${(error as Error).message}`,
    ]);
  }
  try {
    return await fn(conn);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ER_NO_SUCH_TABLE' || code === 'ER_BAD_FIELD_ERROR')
      throw new SpecProblems([`${what}'s database ${opts.database}: ${(error as Error).message}`]);
    throw error;
  } finally {
    await conn.end().catch(() => undefined);
  }
}

export async function readLeaf(url: string): Promise<OldSegmentTag[]> {
  return withOldDb(url, 'Leaf', async (conn) => {
    const [rows] = await conn.query<RowDataPacket[]>(
      'SELECT biz_tag, max_id, step, description FROM leaf_alloc ORDER BY biz_tag',
    );
    return rows.map((r) => ({
      tag: String(r.biz_tag),
      maxId: String(r.max_id),
      step: Number(r.step),
      description: r.description === null ? '' : String(r.description),
      stride: 1,
      offset: 0,
      tokens: [],
    }));
  });
}

export async function readTinyid(url: string): Promise<OldSegmentTag[]> {
  return withOldDb(url, 'Tinyid', async (conn) => {
    const [infos] = await conn.query<RowDataPacket[]>(
      'SELECT biz_type, max_id, step, delta, remainder FROM tiny_id_info ORDER BY biz_type',
    );
    const [tokens] = await conn.query<RowDataPacket[]>(
      'SELECT id, token, biz_type, remark FROM tiny_id_token ORDER BY id',
    );
    // Tinyid lets a token visit the bizType its row names, spelled as the row spells it, and
    // then reads that bizType's segments with `WHERE biz_type = ?` on tiny_id_info: under that
    // column's collation (case-insensitive in Tinyid's DDL, utf8 with its default collation).
    // The same comparison, on the same table, finds the row each token reaches (a few hundred
    // spellings a round trip, one SELECT each).
    const reaches = new Map<string, string>();
    const spellings = [...new Set(tokens.map((t) => String(t.biz_type)))];
    for (let i = 0; i < spellings.length; i += 500) {
      const chunk = spellings.slice(i, i + 500);
      const sql = chunk
        .map(() => '(SELECT ? AS spelled, biz_type FROM tiny_id_info WHERE biz_type = ?)')
        .join(' UNION ALL ');
      const [rows] = await conn.query<RowDataPacket[]>(
        sql,
        chunk.flatMap((b) => [b, b]),
      );
      for (const row of rows) reaches.set(String(row.spelled), String(row.biz_type));
    }
    return infos.map((r) => ({
      tag: String(r.biz_type),
      maxId: String(r.max_id),
      step: Number(r.step ?? 0),
      description: 'imported from Tinyid',
      // Tinyid hands out the values v of a segment with v % delta == remainder.
      stride: Number(r.delta ?? 1) || 1,
      offset: Number(r.remainder ?? 0),
      tokens: tokens
        .filter((t) => reaches.get(String(t.biz_type)) === String(r.biz_type) && String(t.token) !== '')
        .map((t) => ({ name: `tinyid-${String(t.id)}`, token: String(t.token), bizType: String(t.biz_type) })),
    }));
  });
}

export interface IdServerSources {
  readonly rules: OldRule[];
  readonly rows: OldCounterRow[];
}

/**
 * id_server's config.json and the Lua files it names: read from disk (the command line), or
 * sent in the request (the admin route, which never reads the server's files).
 */
export interface IdServerFiles {
  /** How the config is named in messages (its path, or "config.json"). */
  readonly configName: string;
  readConfig(): Promise<string>;
  /** The Lua file a rule names: how messages name it, and its text. */
  readLua(luaFile: string): Promise<{ name: string; text: string }>;
}

export function filesOnDisk(configPath: string): IdServerFiles {
  const read = (path: string) =>
    readFile(path, 'utf8').catch((error: Error) => {
      throw new SpecProblems([`cannot read ${path}: ${error.message}`]);
    });
  return {
    configName: configPath,
    readConfig: () => read(configPath),
    readLua: async (luaFile) => {
      const name = resolve(dirname(configPath), luaFile);
      return { name, text: await read(name) };
    },
  };
}

export function filesSent(config: string, lua: Readonly<Record<string, string>>): IdServerFiles {
  return {
    configName: 'config.json',
    readConfig: async () => config,
    readLua: async (luaFile) => {
      if (!Object.hasOwn(lua, luaFile))
        throw new SpecProblems([`config.json names the Lua file "${luaFile}", which lua_files does not hold`]);
      return { name: luaFile, text: lua[luaFile] };
    },
  };
}

/** What id_server's logs hold: its saves (rows named "<log>:<line>"), and the lines set aside. */
export interface LogEvidence {
  readonly rows: OldCounterRow[];
  readonly setAside: string[];
}

/** Lines between two progress reports of a long log. */
export const PROGRESS_EVERY = 1_000_000;

/**
 * id_server's logs, line by line: files from disk (the command line) streamed, so a log of any
 * size is read in constant memory but for the saves it holds; texts sent in a request (the admin
 * route). A file that cannot be read is a refusal naming it; every such file is named at once.
 */
export async function readIdServerLogs(
  paths: readonly string[],
  texts: readonly { readonly name: string; readonly text: string }[],
  progress?: (line: string) => void,
): Promise<LogEvidence> {
  const rows: OldCounterRow[] = [];
  const setAside: string[] = [];
  const problems: string[] = [];
  const take = (name: string, lineNo: number, line: string) => {
    const parsed = parseIdServerLogLine(name, lineNo, line);
    if (typeof parsed === 'string') setAside.push(parsed);
    else if (parsed !== undefined) rows.push(parsed);
  };
  for (const path of paths) {
    try {
      const lineCount = await eachLine(path, take, (lines) =>
        progress?.(`${path}: ${lines} lines read, ${rows.length} save(s) found so far`),
      );
      if (lineCount >= PROGRESS_EVERY) progress?.(`${path}: ${lineCount} lines read`);
    } catch (error) {
      problems.push(`cannot read ${path}: ${(error as Error).message}`);
    }
  }
  for (const log of texts) log.text.split(/\r?\n/).forEach((line, i) => take(log.name, i + 1, line));
  if (problems.length) throw new SpecProblems(problems);
  return { rows, setAside };
}

/** Calls fn with each line of a file (numbered from 1); returns how many there were. */
async function eachLine(
  path: string,
  fn: (name: string, lineNo: number, line: string) => void,
  every: (lines: number) => void,
): Promise<number> {
  const fh = await open(path, 'r');
  const input = fh.createReadStream({ encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let failed: Error | undefined;
  input.once('error', (error) => {
    failed = error;
    lines.close();
  });
  let count = 0;
  try {
    for await (const line of lines) {
      fn(path, ++count, line);
      if (count % PROGRESS_EVERY === 0) every(count);
    }
  } finally {
    input.destroy();
    await fh.close().catch(() => undefined);
  }
  if (failed) throw failed;
  return count;
}

/** id_server's rules (config.json and the Lua files it names) and saved counters. */
export async function readIdServer(
  files: IdServerFiles,
  url: string,
  timeZone: string | undefined,
): Promise<IdServerSources> {
  const config = parseIdServerConfig(files.configName, await files.readConfig());
  const problems: string[] = [];
  const rules: OldRule[] = [];
  for (const entry of config.rules) {
    let file: string;
    let lua: string;
    try {
      ({ name: file, text: lua } = await files.readLua(entry.luaFile));
    } catch (error) {
      if (!(error instanceof SpecProblems)) throw error;
      problems.push(...error.problems.map((p) => `rule "${entry.name}": ${p}`));
      continue;
    }
    try {
      const rule = parseIdServerLua(file, lua);
      // A node's counters are min_counter + id_offset + k * id_step: the values congruent to
      // min_counter + id_offset, which is what idmint's offset (mod stride) names.
      rules.push({
        tag: entry.name,
        file,
        rule,
        timeZone,
        batchSave: entry.batchSave,
        stride: config.idStep,
        offset: (rule.minCounter + config.idOffset) % config.idStep,
      });
    } catch (error) {
      if (!(error instanceof SpecProblems)) throw error;
      problems.push(...error.problems);
    }
  }
  if (problems.length) throw new SpecProblems(problems);
  const rows = await withOldDb(url, 'id_server', async (conn) => {
    const [rs] = await conn.query<RowDataPacket[]>(
      'SELECT node_offset, counter, update_time, rule_name, app_name FROM counter',
    );
    return rs.map((r) => ({
      nodeOffset: Number(r.node_offset),
      counter: Number(r.counter),
      updateTime: Number(r.update_time),
      ruleName: String(r.rule_name),
      appName: String(r.app_name),
    }));
  });
  return { rules, rows };
}
