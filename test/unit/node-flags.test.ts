// The node flags a server runs with (src/process/node-flags.ts): which a process lacks, and every
// shipped way to start a server passing them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { missingServeFlags, SERVE_NODE_FLAGS } from '../../src/process/node-flags.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('missingServeFlags', () => {
  it('lists every serving flag for a process started without flags', () => {
    assert.deepEqual(missingServeFlags([]), [...SERVE_NODE_FLAGS]);
    assert.deepEqual(missingServeFlags(['--import', 'tsx'], ''), [...SERVE_NODE_FLAGS]);
  });

  it('counts a flag given on the command line or in NODE_OPTIONS, with any value or spelling', () => {
    const [gc, min] = ['--single-threaded-gc', '--min-semi-space-size=64'];
    assert.deepEqual(missingServeFlags(['--max-semi-space-size=64', min, gc]), []);
    assert.deepEqual(
      missingServeFlags([gc], '--enable-source-maps  --max-semi-space-size=128 --min-semi-space-size=8'),
      [],
    );
    assert.deepEqual(
      missingServeFlags(['--max_semi_space_size=32', '--min_semi_space_size=16', '--single_threaded_gc']),
      [],
    );
    assert.deepEqual(missingServeFlags(['--max-semi-space-size', '16', '--min-semi-space-size', '16', gc]), []);
    assert.deepEqual(missingServeFlags(['--max-old-space-size=64']), [...SERVE_NODE_FLAGS]);
    assert.deepEqual(missingServeFlags(['--max-semi-space-size=64']), [min, gc]);
    assert.deepEqual(missingServeFlags(['--max-semi-space-size=64', gc]), [min], 'the young generation left to shrink');
  });

  it('counts a flag the operator turned off (--no-...) as given', () => {
    const min = '--min-semi-space-size=64';
    assert.deepEqual(missingServeFlags(['--max-semi-space-size=64', min, '--no-single-threaded-gc']), []);
    assert.deepEqual(missingServeFlags(['--max-semi-space-size=64', min], '--no-single_threaded_gc'), []);
  });
});

describe('the shipped ways to start a server', () => {
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  const starts: [string, string][] = [
    ['npm start', scripts.start],
    ['npm run serve', scripts.serve],
    [
      'the Dockerfile',
      read('Dockerfile')
        .split('\n')
        .find((l) => l.startsWith('CMD '))!,
    ],
    [
      'the Kubernetes manifest',
      read('deploy/kubernetes/deployment.yaml')
        .split('\n')
        .find((l) => l.includes('dist/cli.js'))!,
    ],
    ['bin/idmint.mjs', read('bin/idmint.mjs').split('\n')[0]],
  ];

  for (const [what, line] of starts) {
    it(`${what} passes node the serving flags`, () => {
      assert.ok(line, `${what}: no start command found`);
      for (const flag of SERVE_NODE_FLAGS) assert.ok(line.includes(flag), `${what} (${line}) lacks ${flag}`);
    });
  }
});
