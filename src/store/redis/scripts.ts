// Loads the Lua scripts in ./commands (named <verb>-<numberOfKeys>.lua) into an ioredis
// client with defineCommand, which sends EVALSHA and falls back to EVAL when Redis has
// forgotten a script (after a restart).
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { RedisClient } from './connection.js';

const DIR = join(fileURLToPath(new URL('.', import.meta.url)), 'commands');

export type ScriptReply = (string | number)[];
export type ScriptFn = (keys: string[], args: (string | number)[]) => Promise<unknown>;

/** The text of a script file, e.g. scriptText('take-2'). */
export function scriptText(file: string): string {
  return readFileSync(join(DIR, `${file}.lua`), 'utf8');
}

export function loadScripts(redis: RedisClient): Record<string, ScriptFn> {
  const out: Record<string, ScriptFn> = {};
  for (const file of readdirSync(DIR)) {
    const m = /^([a-z][a-z-]*)-(\d+)\.lua$/.exec(file);
    if (!m) continue;
    const [, verb, numKeys] = m;
    const name = `idmint_${verb.replace(/-/g, '_')}`;
    redis.defineCommand(name, { numberOfKeys: Number(numKeys), lua: readFileSync(join(DIR, file), 'utf8') });
    const fn = (redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>)[name].bind(redis);
    out[verb] = (keys, args) => fn(...keys, ...args);
  }
  return out;
}
