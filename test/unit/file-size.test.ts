// Each file of src/ holds one job: a file that grows past 400 lines has taken a second one and
// is split by job (as the coalescer, the rule template and the import plan were). The same holds
// for the TypeScript of bench/ and tools/ (as bench:udp and bench:idempotency were split) and of
// test/: a test file holds one promise, split by what it tests with its shared setup in
// test/helpers/ (as the fuzz, import and lease tests were). The README is the front page: at
// most 250 lines, the rest lives in docs/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
/** The folders whose .ts files are held to MAX_LINES too, with at least this many files each. */
const TS_DIRS = { bench: 40, tools: 10, test: 200 } as const;
const MAX_LINES = 400;
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const README_MAX_LINES = 250;

function* sourceFiles(dir: string, ending = /\.(ts|js|lua)$/): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p, ending);
    else if (ending.test(e.name)) yield p;
  }
}

/** The files of dir (matching ending) longer than MAX_LINES, each with its length; and how many were read. */
function longFiles(dir: string, ending?: RegExp): { long: string[]; files: number } {
  const long: string[] = [];
  let files = 0;
  for (const f of sourceFiles(dir, ending)) {
    files++;
    const lines = readFileSync(f, 'utf8').split('\n').length - 1;
    if (lines > MAX_LINES) long.push(`${f.slice(ROOT.length)}: ${lines} lines`);
  }
  return { long, files };
}

describe('source files', () => {
  it(`keeps every file of src/ at most ${MAX_LINES} lines`, () => {
    const { long, files } = longFiles(SRC);
    assert.ok(files > 100, `only ${files} source files found under ${SRC}`);
    assert.deepEqual(long, []);
  });

  for (const [dir, least] of Object.entries(TS_DIRS)) {
    it(`keeps every .ts file of ${dir}/ at most ${MAX_LINES} lines`, () => {
      const { long, files } = longFiles(join(ROOT, dir), /\.ts$/);
      assert.ok(files >= least, `only ${files} .ts files found under ${dir}/`);
      assert.deepEqual(long, []);
    });
  }

  it(`keeps README.md at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(README, 'utf8').split('\n').length - 1;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  });
});
