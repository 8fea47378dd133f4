// Reads id_server's config.json: the node's id_step and id_offset (its counters are the
// values offset + k * step) and its rules, each a name, a Lua file and batch_save. id_server
// reads it with jsoncpp's Reader, which allows comments (`//` to the end of the line and
// `/* ... */`, as its README's example has them): they are read the same way here. Pure.
import { SpecProblems } from './spec-problems.js';

/**
 * The text with comments outside strings replaced by spaces (newlines kept, so JSON.parse's
 * positions and the lines named in problems still match the file); an unclosed comment is
 * named with its line.
 */
export function stripJsonComments(file: string, text: string): string {
  let out = '';
  let pos = 0;
  let line = 1;
  while (pos < text.length) {
    const char = text[pos];
    if (char === '"') {
      let close = pos + 1;
      while (close < text.length && text[close] !== '"' && text[close] !== '\n') close += text[close] === '\\' ? 2 : 1;
      out += text.slice(pos, close + 1);
      pos = close + 1;
    } else if (char === '/' && text[pos + 1] === '/') {
      let lineEnd = pos;
      while (lineEnd < text.length && text[lineEnd] !== '\n') lineEnd++;
      out += ' '.repeat(lineEnd - pos);
      pos = lineEnd;
    } else if (char === '/' && text[pos + 1] === '*') {
      const end = text.indexOf('*/', pos + 2);
      if (end < 0) throw new SpecProblems([`${file}:${line}: a comment opened with /* is never closed`]);
      const body = text.slice(pos, end + 2);
      out += body.replace(/[^\n]/g, ' ');
      line += body.split('\n').length - 1;
      pos = end + 2;
    } else {
      if (char === '\n') line++;
      out += char;
      pos++;
    }
  }
  return out;
}

/** The line and column of a JSON.parse error's position, when it names one. */
function where(text: string, error: Error): string {
  const match = /position (\d+)/.exec(error.message);
  if (!match) return '';
  const before = text.slice(0, Number(match[1]));
  const line = before.split('\n').length;
  return `:${line}:${Number(match[1]) - before.lastIndexOf('\n')}`;
}

export interface IdServerConfig {
  readonly idStep: number;
  readonly idOffset: number;
  readonly rules: readonly { readonly name: string; readonly luaFile: string; readonly batchSave: number }[];
}

export function parseIdServerConfig(file: string, text: string): IdServerConfig {
  let raw: unknown;
  const json = stripJsonComments(file, text);
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new SpecProblems([`${file}${where(json, error as Error)}: not JSON (${(error as Error).message})`]);
  }
  const problems: string[] = [];
  const config = (raw ?? {}) as Record<string, unknown>;
  const int = (key: string, def: number): number => {
    const value = config[key] ?? def;
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      problems.push(`${file}: ${key} must be a whole number`);
      return def;
    }
    return value;
  };
  const idStep = int('id_step', 1);
  const idOffset = int('id_offset', 0);
  if (idStep < 1 || idOffset < 0 || idOffset >= idStep)
    problems.push(
      `${file}: id_offset must lie from 0 to id_step - 1 (id_step ${idStep}, id_offset ${idOffset}), as id_server requires`,
    );
  const rules: { name: string; luaFile: string; batchSave: number }[] = [];
  if (!Array.isArray(config.rules)) problems.push(`${file}: "rules" must be a list of {"name", "lua_file"}`);
  else {
    config.rules.forEach((item: unknown, index: number) => {
      const rule = (item ?? {}) as Record<string, unknown>;
      if (
        typeof rule.name !== 'string' ||
        rule.name === '' ||
        typeof rule.lua_file !== 'string' ||
        rule.lua_file === ''
      ) {
        problems.push(`${file}: rules[${index}] needs a "name" and a "lua_file"`);
      } else if (
        rule.batch_save !== undefined &&
        (typeof rule.batch_save !== 'number' || !Number.isInteger(rule.batch_save))
      ) {
        problems.push(`${file}: rules[${index}].batch_save must be a whole number`);
        // id_server saves a counter id_step * batch_save above the one it hands out; an absent
        // batch_save (or one below 1) counts as 1, as id_server counts it.
      } else
        rules.push({
          name: rule.name,
          luaFile: rule.lua_file,
          batchSave: Math.max(1, (rule.batch_save as number | undefined) ?? 1),
        });
    });
  }
  const names = rules.map((r) => r.name);
  for (const name of new Set(names.filter((n, i) => names.indexOf(n) !== i)))
    problems.push(`${file}: rule "${name}" is listed twice`);
  if (problems.length) throw new SpecProblems(problems);
  return { idStep, idOffset, rules };
}
