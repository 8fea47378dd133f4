// Lines of code are at most 120 columns: Biome's layout (biome.json) holds the code, and this
// test the comments, which Biome does not wrap. Left whole: a test file's `// suite:` line (read
// by tools/suites.ts as one line) and a comment line that quotes a line of another program
// (indented past its comment's text, as id_server's log lines are).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAX_COLUMNS = 120;
const COMMENT = /^\s*(\/\/|\*|\/\*)/;
const KEPT_WHOLE = /^\s*(\/\/ suite: |\/\/ {3}|\* {3})/;

/** The comment lines over MAX_COLUMNS of the tracked TypeScript and JavaScript files, as file:line. */
function longComments(): { long: string[]; files: number } {
  const files = execFileSync('git', ['ls-files', '*.ts', '*.mjs', '*.js'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && !file.startsWith('bench/results/'));
  const long: string[] = [];
  for (const file of files) {
    readFileSync(`${ROOT}${file}`, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        if (line.length > MAX_COLUMNS && COMMENT.test(line) && !KEPT_WHOLE.test(line))
          long.push(`${file}:${index + 1}`);
      });
  }
  return { long, files: files.length };
}

describe('line width', () => {
  it(`keeps every comment line at most ${MAX_COLUMNS} columns`, () => {
    const { long, files } = longComments();
    assert.ok(files > 300, `only ${files} files read`);
    assert.deepEqual(long, []);
  });
});
