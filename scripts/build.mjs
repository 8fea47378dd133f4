// `npm run build`: compiles src/ to dist/ with tsc (tsconfig.build.json) and copies every
// file under src/ that is not TypeScript (Lua scripts and their includes/, the admin page,
// any asset a module reads through import.meta.url) to the same place under dist/, so that
// dist/ runs with plain node exactly as src/ runs under tsx. dist/ is emptied first: a module deleted from
// src/ must not linger in the build.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');

rmSync(DIST, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);

/** Every file under dir, recursively. */
function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

let copied = 0;
for (const file of files(SRC)) {
  if (/\.(c|m)?tsx?$/.test(file)) continue;
  const to = join(DIST, relative(SRC, file));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(file, to);
  copied++;
}
console.log(`built dist/ (${copied} asset files copied from src/)`);
