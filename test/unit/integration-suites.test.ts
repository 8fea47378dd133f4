// Every integration test says where it runs: its first line is `// suite: cluster` (the
// single-Redis run and `npm run test:cluster`) or `// suite: single — <why>`, so a new file
// cannot silently miss the cluster run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { declaredSuite, integrationSuites } from '../../tools/suites.js';

describe('integration test suites', () => {
  it('are declared by every integration test file', () => {
    const all = integrationSuites();
    assert.ok(all.length > 0);
    const undeclared = all.filter((t) => t.suite === undefined).map((t) => t.file);
    assert.deepEqual(undeclared, [], 'first line must be "// suite: cluster" or "// suite: single — <why>"');
    assert.ok(all.some((t) => t.suite === 'cluster'));
  });

  it('are read from the first line only, and single needs a reason', () => {
    assert.equal(declaredSuite('// suite: cluster\n// what it tests\n'), 'cluster');
    assert.equal(declaredSuite('// suite: single — a private redis-server\n'), 'single');
    assert.equal(declaredSuite('// suite: single\n'), undefined);
    assert.equal(declaredSuite('// suite: single — \n'), undefined);
    assert.equal(declaredSuite('// what it tests\n// suite: cluster\n'), undefined);
    assert.equal(declaredSuite('// suite: clusters\n'), undefined);
    assert.equal(declaredSuite(''), undefined);
  });
});
