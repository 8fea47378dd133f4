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
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"' && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      let j = i;
      while (j < text.length && text[j] !== '\n') j++;
      out += ' '.repeat(j - i);
      i = j;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new SpecProblems([`${file}:${line}: a comment opened with /* is never closed`]);
      const body = text.slice(i, end + 2);
      out += body.replace(/[^\n]/g, ' ');
      line += body.split('\n').length - 1;
      i = end + 2;
    } else {
      if (c === '\n') line++;
      out += c;
      i++;
    }
  }
  return out;
}

/** The line and column of a JSON.parse error's position, when it names one. */
function where(text: string, e: Error): string {
  const m = /position (\d+)/.exec(e.message);
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  return `:${line}:${Number(m[1]) - before.lastIndexOf('\n')}`;
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
  } catch (e) {
    throw new SpecProblems([`${file}${where(json, e as Error)}: not JSON (${(e as Error).message})`]);
  }
  const problems: string[] = [];
  const c = (raw ?? {}) as Record<string, unknown>;
  const int = (k: string, def: number): number => {
    const v = c[k] ?? def;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      problems.push(`${file}: ${k} must be a whole number`);
      return def;
    }
    return v;
  };
  const idStep = int('id_step', 1);
  const idOffset = int('id_offset', 0);
  if (idStep < 1 || idOffset < 0 || idOffset >= idStep)
    problems.push(
      `${file}: id_offset must lie from 0 to id_step - 1 (id_step ${idStep}, id_offset ${idOffset}), as id_server requires`,
    );
  const rules: { name: string; luaFile: string; batchSave: number }[] = [];
  if (!Array.isArray(c.rules)) problems.push(`${file}: "rules" must be a list of {"name", "lua_file"}`);
  else {
    c.rules.forEach((r: unknown, i: number) => {
      const x = (r ?? {}) as Record<string, unknown>;
      if (typeof x.name !== 'string' || x.name === '' || typeof x.lua_file !== 'string' || x.lua_file === '') {
        problems.push(`${file}: rules[${i}] needs a "name" and a "lua_file"`);
      } else if (x.batch_save !== undefined && (typeof x.batch_save !== 'number' || !Number.isInteger(x.batch_save))) {
        problems.push(`${file}: rules[${i}].batch_save must be a whole number`);
        // id_server saves a counter id_step * batch_save above the one it hands out; an absent
        // batch_save (or one below 1) counts as 1, as id_server counts it.
      } else
        rules.push({
          name: x.name,
          luaFile: x.lua_file,
          batchSave: Math.max(1, (x.batch_save as number | undefined) ?? 1),
        });
    });
  }
  const names = rules.map((r) => r.name);
  for (const n of new Set(names.filter((n, i) => names.indexOf(n) !== i)))
    problems.push(`${file}: rule "${n}" is listed twice`);
  if (problems.length) throw new SpecProblems(problems);
  return { idStep, idOffset, rules };
}
