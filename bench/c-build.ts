// Builds the benchmarks' C load generators with the system gcc (scripts/gcc.sh installs it)
// into .tools/ (ignored), again whenever the source is newer than the program.
import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ROOT } from '../tools/child.js';

/** Builds `source` (a path from the repository's root) when needed; answers the program's path. */
export function buildC(source: string): string {
  const src = join(ROOT, source);
  const dir = join(ROOT, '.tools/bench');
  const binary = join(dir, basename(source, '.c'));
  const fresh = (() => {
    try {
      return statSync(binary).mtimeMs >= statSync(src).mtimeMs;
    } catch {
      return false;
    }
  })();
  if (fresh) return binary;
  mkdirSync(dir, { recursive: true });
  const r = spawnSync('gcc', ['-O2', '-Wall', '-o', binary, src], { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`gcc could not build ${source} (run: bash scripts/gcc.sh): ${r.error?.message ?? r.stderr}`);
  return binary;
}
