// Tags are one union of kinds (core/tag-kinds.ts) whose behaviour lives beside each kind's
// source (service/mode-sources.ts, service/tag-kinds.ts and kinds/*.ts). Two habits would undo
// that, and this scan of the sources refuses both: asserting that a kind's settings are there
// (`tag.rule!`: narrow on the mode instead, and the field is never null), anywhere in src/ or
// test/; and a transport deciding by mode or kind (src/api's TypeScript: it calls the service,
// which asks the kind). The admin page's browser code may still show fields by kind.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** This file: its fixtures are what the scan refuses. */
const SELF = fileURLToPath(import.meta.url);

function* tsFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts')) yield p;
  }
}

/** A line of comment (a comment may name what the code must not do), not of code. */
const COMMENT = /^\s*(\/\/|\/\*|\*)/;

/** A non-null assertion on a kind's settings: `x.rule!`, `x.snowflake!.epochMs`, `x?.permute!`. */
const ASSERTED = /\.(rule|snowflake|permute)!(?!=)/;

/** What a transport must not decide by: a comparison with a mode or kind, a case of one, a kind's settings read. */
const BRANCHES: readonly [RegExp, string][] = [
  [/\b(mode|kind)\s*[!=]==?/, 'compares a mode or kind'],
  [/[!=]==?\s*[\w.?]*\b(mode|kind)\b/, 'compares a mode or kind'],
  [/[!=]==?\s*'(segment|snowflake|rule|runs|decimals|strings)'/, 'compares with the name of a kind'],
  [/'(segment|snowflake|rule)'\s*[!=]==?/, 'compares with the name of a kind'],
  [/\bcase\s+'(segment|snowflake|rule|runs|decimals|strings)'/, 'has a case for a kind'],
  [/\.(rule|snowflake|permute)\b(?!\s*:)/, "reads a kind's settings"],
];

/** Lines of `text` that break a rule, as "line: what". */
function findings(text: string, rules: readonly [RegExp, string][]): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (!COMMENT.test(line))
      for (const [re, what] of rules) if (re.test(line)) out.push(`${i + 1}: ${what}: ${line.trim()}`);
  });
  return out;
}

const assertions = (text: string) => findings(text, [[ASSERTED, 'asserts a kind setting is there']]);
const branches = (text: string) => findings(text, BRANCHES);

describe('kinds of tag: the scan itself', () => {
  it('finds what it is for (fixtures)', () => {
    for (const bad of ['const r = tag.rule!;', 'f(t.spec.snowflake!.epochMs)', 'if (o?.permute!.key) {}'])
      assert.equal(assertions(bad).length, 1, bad);
    for (const bad of [
      "if (d.mode === 'snowflake') x();",
      "return tag.mode !== 'segment';",
      "if (chunk.kind === 'runs') send();",
      "const ranged = ranges && 'decimals' === chunk.kind;",
      "switch (c.mode) { case 'rule': break; }",
      'const extra = t.permute ? 1 : 0;',
      'const l = t.snowflake;',
      "return mode === 'rule' ? a : b;",
    ])
      assert.ok(branches(bad).length >= 1, bad);
  });

  it('lets through what is no kind decision', () => {
    for (const fine of [
      'if (a !== b) x();',
      "if (format === 'ranges') y();",
      'const { mode, id, ...parts } = d;',
      'snowflake?: { time: string };',
      '// if (tag.mode === "rule")',
    ])
      assert.deepEqual([...assertions(fine), ...branches(fine)], [], fine);
  });
});

describe('kinds of tag: the sources', () => {
  it("asserts no kind's settings are there, in src/ or test/", () => {
    const found: string[] = [];
    for (const dir of ['src', 'test'])
      for (const f of tsFiles(join(ROOT, dir)))
        if (f !== SELF) for (const x of assertions(readFileSync(f, 'utf8'))) found.push(`${relative(ROOT, f)}:${x}`);
    assert.deepEqual(found, []);
  });

  it('decides nothing by mode or kind in src/api (the service asks the kind)', () => {
    const found: string[] = [];
    let files = 0;
    for (const f of tsFiles(join(ROOT, 'src/api'))) {
      files++;
      for (const x of branches(readFileSync(f, 'utf8'))) found.push(`${relative(ROOT, f)}:${x}`);
    }
    assert.ok(files > 40, `only ${files} files under src/api`);
    assert.deepEqual(found, []);
  });
});
