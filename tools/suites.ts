// Which integration tests run where: every test/integration file opens with a line
// `// suite: cluster` (it runs in the single-Redis run and again on a Redis Cluster, `npm run
// test:cluster`) or `// suite: single — <why>` (the single-Redis run only). Run as a script it
// prints the files of one suite, for the test runner:
//   node --import tsx tools/suites.ts cluster
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type Suite = 'cluster' | 'single';

export const INTEGRATION_DIR = fileURLToPath(new URL('../test/integration/', import.meta.url));

/** The suite a test file declares in its first line; undefined when it declares none (or no reason for single). */
export function declaredSuite(text: string): Suite | undefined {
  const first = text.split('\n', 1)[0];
  if (/^\/\/ suite: cluster\s*$/.test(first)) return 'cluster';
  if (/^\/\/ suite: single — \S/.test(first)) return 'single';
  return undefined;
}

/** Every integration test file (relative to the repository's root, sorted) with its suite. */
export function integrationSuites(): { file: string; suite: Suite | undefined }[] {
  return readdirSync(INTEGRATION_DIR)
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => ({ file: `test/integration/${f}`, suite: declaredSuite(readFileSync(INTEGRATION_DIR + f, 'utf8')) }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const want = process.argv[2];
  if (want !== 'cluster' && want !== 'single') {
    console.error('usage: node --import tsx tools/suites.ts cluster|single');
    process.exit(2);
  }
  const all = integrationSuites();
  const undeclared = all.filter((t) => t.suite === undefined).map((t) => t.file);
  if (undeclared.length) {
    console.error(`no "// suite: cluster" or "// suite: single — <why>" first line in: ${undeclared.join(', ')}`);
    process.exit(1);
  }
  const files = all.filter((t) => t.suite === want).map((t) => t.file);
  if (files.length === 0) {
    console.error(`no integration test declares suite ${want}`);
    process.exit(1);
  }
  console.log(files.join('\n'));
}
