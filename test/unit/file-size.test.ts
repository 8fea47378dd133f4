// Each file of src/ holds one job: a file that grows past 400 lines has taken a second one and
// is split by job (as the coalescer, the rule template and the import plan were). The README
// is the front page: at most 250 lines, the rest lives in docs/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const MAX_LINES = 400;
const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const README_MAX_LINES = 250;

function* sourceFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* sourceFiles(p);
    else if (/\.(ts|js|lua)$/.test(e.name)) yield p;
  }
}

describe('source files', () => {
  it(`keeps every file of src/ at most ${MAX_LINES} lines`, () => {
    const long: string[] = [];
    let files = 0;
    for (const f of sourceFiles(SRC)) {
      files++;
      const lines = readFileSync(f, 'utf8').split('\n').length - 1;
      if (lines > MAX_LINES) long.push(`${f.slice(SRC.length)}: ${lines} lines`);
    }
    assert.ok(files > 100, `only ${files} source files found under ${SRC}`);
    assert.deepEqual(long, []);
  });

  it(`keeps README.md at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(README, 'utf8').split('\n').length - 1;
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  });
});
