// suite: single — command-line parsing and start-up messages, no Redis key layout involved
// The command line: `serve --demo` gives a working demo tag, `worker` refills for others,
// and a bad setting stops start-up with a message naming the variable.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { startTsx } from '../../tools/child.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';

describe('command line', () => {
  const names = testNames();
  const children: ChildNode[] = [];
  after(async () => {
    for (const c of children) await c.kill();
    await cleanup(names);
  });

  it('refuses bad settings with exit code 2 and names each variable', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
      env: { ...process.env, ...testEnv(names), PORT: 'http', LOG_LEVEL: 'loud', REDIS_URL: 'nope' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 2);
    for (const v of ['PORT', 'LOG_LEVEL', 'REDIS_URL']) assert.match(r.stderr, new RegExp(v));
    const usage = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'dance'], { encoding: 'utf8' });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /usage: idmint serve/);
  });

  it('serves the demo tag with --demo semantics, refilled by a separate worker process', async () => {
    // The serving node runs no refill worker; only the `idmint worker` process refills. A busy
    // machine may take seconds to start either process: the IDs are asked once both said they
    // are ready, and a take may wait for the worker's refill longer than the default bound
    // (what is tested here is who refills, not how fast).
    const server = await spawnNode(names, { DEMO_TAG: 'demo', REFILL_CONCURRENCY: '0', REFILL_WAIT_MS: '30000' });
    children.push(server);
    const worker = startTsx(['src/cli.ts', 'worker'], {
      name: 'idmint worker',
      env: { ...process.env, ...testEnv(names, { LOG_LEVEL: 'info' }) },
    });
    try {
      await worker.waitForLine((l) => l.includes('"worker node started (no HTTP)"'), 60_000);
      const ids = await fetchIds(server.url, 'demo', 3000);
      assert.equal(new Set(ids.map(String)).size, 3000);
      assert.ok(
        worker.output.some((l) => l.includes('segment allocated')),
        'the worker process allocated the segments',
      );
      assert.ok(
        !server.output.some((l) => l.includes('segment allocated')),
        'the serving node allocated nothing itself',
      );
    } finally {
      await worker.stop();
    }
  });
});
