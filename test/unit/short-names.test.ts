// No one-letter names in src/ outside short lambdas and loop indices: a name says what it holds.
// Read with the TypeScript parser, so a string or comment never counts. Allowed: the parameters of
// an arrow function whose body is an expression (`(a, b) => a - b`), the variables a classic
// `for (let i = 0; ...)` loop declares, and `_` for a value left unused.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Whether a declaration named `name` at `node` is one the rule allows. */
function allowed(node: ts.Node): boolean {
  const parent = node.parent;
  if (ts.isParameter(node) && ts.isArrowFunction(parent) && !ts.isBlock(parent.body)) return true;
  if (ts.isVariableDeclaration(node) && ts.isVariableDeclarationList(parent) && ts.isForStatement(parent.parent))
    return parent.parent.initializer === parent;
  return false;
}

/** The name of a variable, parameter, destructured, function or class declaration at `node`, when an identifier. */
function declaredName(node: ts.Node): ts.Identifier | undefined {
  const declares =
    ts.isVariableDeclaration(node) ||
    ts.isParameter(node) ||
    ts.isBindingElement(node) ||
    ts.isFunctionDeclaration(node) ||
    ts.isClassDeclaration(node);
  const name = declares ? node.name : undefined;
  return name !== undefined && ts.isIdentifier(name) ? name : undefined;
}

/** Whether `node` declares a one-letter name the rule refuses. */
function refused(node: ts.Node): ts.Identifier | undefined {
  const name = declaredName(node);
  return name !== undefined && name.text.length === 1 && name.text !== '_' && !allowed(node) ? name : undefined;
}

/** The one-letter declarations of one file the rule refuses, as file:line name. */
function shortNamesOf(file: string): string[] {
  const text = readFileSync(`${ROOT}${file}`, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const name = refused(node);
    if (name !== undefined) {
      const { line } = source.getLineAndCharacterOfPosition(name.getStart(source));
      found.push(`${file}:${line + 1} ${name.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The tracked TypeScript files of src/. */
function sourceFiles(): string[] {
  return execFileSync('git', ['ls-files', 'src/*.ts', 'src/**/*.ts'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '');
}

describe('short names', () => {
  it('finds a one-letter variable, parameter and destructured name, and allows the exceptions', () => {
    const probe = (text: string): string[] => {
      const source = ts.createSourceFile('probe.ts', text, ts.ScriptTarget.Latest, true);
      const names: string[] = [];
      const visit = (node: ts.Node): void => {
        const name = refused(node);
        if (name !== undefined) names.push(name.text);
        ts.forEachChild(node, visit);
      };
      visit(source);
      return names;
    };
    assert.deepEqual(probe('const x = 1; function f(y: number) { const { z } = o; for (const w of v) {} }'), [
      'x',
      'f',
      'y',
      'z',
      'w',
    ]);
    assert.deepEqual(probe('try {} catch (e) {}'), ['e']);
    assert.deepEqual(probe('a.map((x) => { return x; });'), ['x']);
    assert.deepEqual(probe('a.sort((x, y) => x - y); for (let i = 0; i < 3; i++) {} const [_] = a;'), []);
  });

  it('has no one-letter names in src/ outside short lambdas and loop indices', () => {
    const files = sourceFiles();
    assert.ok(files.length > 150, `only ${files.length} files read`);
    const found = files.flatMap(shortNamesOf);
    assert.deepEqual(found, []);
  });
});
