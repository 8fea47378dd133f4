// The text of the Lua scripts in ./commands, with their includes expanded. A script names a
// shared piece as bullmq does, on a line of its own:
//
//   --- @include "includes/server-run-id"
//
// The path is relative to the script's folder (".lua" may be left out); the line is replaced
// by the included file's text, itself expanded. A file is included at most once per script
// (a second @include of it expands to nothing), a cycle or a missing file is an error when
// the script is loaded, never a script that fails in Redis.
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder of the scripts; the build copies it (and includes/) beside the compiled code. */
export const COMMANDS_DIR = join(fileURLToPath(new URL('.', import.meta.url)), 'commands');

/** Every script, named <verb>-<numberOfKeys> as its file. */
export const SCRIPT_FILES = [
  'take-2',
  'install-2',
  'exhaust-1',
  'prime-2',
  'lease-acquire-1',
  'lease-renew-1',
  'lease-release-1',
  'idem-claim-3',
  'idem-takes-4',
  'idem-record-3',
  'idem-release-3',
  'idem-held-1',
] as const;
export type ScriptFile = (typeof SCRIPT_FILES)[number];

const INCLUDE = /^---[ \t]*@include[ \t]+"([^"]+)"[ \t]*$/gm;

/**
 * The text of `file` (a path to a .lua file) with every @include expanded. Throws naming the
 * script and the include when an included file is missing or includes itself.
 */
export function expandIncludes(file: string, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): string {
  const seen = new Set<string>();
  const expand = (path: string, chain: readonly string[]): string => {
    const text = read(path);
    return text.replace(INCLUDE, (_line, name: string) => {
      const target = join(dirname(path), name.endsWith('.lua') ? name : `${name}.lua`);
      if (chain.includes(target))
        throw new Error(
          `${relative(dirname(file), file)}: @include "${name}" includes itself (${[...chain, target].map((p) => relative(dirname(file), p)).join(' -> ')})`,
        );
      if (seen.has(target)) return '';
      seen.add(target);
      let included: string;
      try {
        included = expand(target, [...chain, target]);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT')
          throw new Error(`${relative(dirname(file), path)}: @include "${name}": no such file (${target})`, {
            cause: err,
          });
        throw err;
      }
      return included.endsWith('\n') ? included.slice(0, -1) : included;
    });
  };
  return expand(file, [file]);
}

/** The text of a script as it is sent to Redis, includes expanded, e.g. scriptText('take-2'). */
export function scriptText(file: ScriptFile): string {
  return expandIncludes(join(COMMANDS_DIR, `${file}.lua`));
}

/** The number of keys of a script, from its name. */
export function numberOfKeys(file: ScriptFile): number {
  return Number(/-(\d+)$/.exec(file)![1]);
}
