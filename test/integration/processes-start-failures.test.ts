// suite: single — the process management of serve --processes
// `idmint serve --processes N` failing at start-up: a bad --processes value exits with code 2,
// and a process that keeps failing at start-up is replaced with backoff, then given up on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { after, describe, it } from 'node:test';
import { MAX_START_FAILURES } from '../../src/process/processes.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { ROOT, startPrimary } from '../helpers/serve-primary.js';

describe('serve --processes: failures at start-up', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('refuses a bad --processes value with exit code 2', () => {
    for (const v of ['0', 'many', '']) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--processes', v], {
        cwd: ROOT,
        env: { ...process.env, ...testEnv(names) },
        encoding: 'utf8',
      });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /--processes needs a number/);
    }
  });

  it('stops replacing a process that keeps failing at start-up, and exits non-zero when none is left', async () => {
    // Every process fails to bind the UDP port, which something else holds.
    const holder = createSocket('udp4');
    await new Promise<void>((r) => holder.bind(0, '127.0.0.1', r));
    try {
      const p = startPrimary(names, 2, { UDP_PORT: String(holder.address().port) });
      // Killed, should it never exit, once it starts a process past the limit (it does not give
      // up) or prints nothing for 30 s (it hangs): not after a fixed time, for each start-up
      // takes seconds on a busy machine.
      let printed = 0;
      let quietSince = Date.now();
      const guard = setInterval(() => {
        if (p.output.length !== printed) [printed, quietSince] = [p.output.length, Date.now()];
        const starts = p.logs().filter((l) => l.msg === 'serving process starting').length;
        if (starts > 2 * MAX_START_FAILURES || Date.now() - quietSince > 30_000) p.proc.kill('SIGKILL');
      }, 250);
      const code = await p.exited;
      clearInterval(guard);
      const logs = p.logs();
      assert.equal(code, 1, p.output.slice(-20).join('\n'));
      const gaveUp = logs
        .filter((l) => typeof l.msg === 'string' && l.msg.includes('not replacing it again'))
        .map((l) => l.index)
        .sort();
      assert.deepEqual(gaveUp, [0, 1]);
      assert.ok(logs.some((l) => l.msg === 'no serving process is left; exiting'));
      // Backoff: the replacements came later and later.
      const delays = logs
        .filter((l) => l.index === 0 && l.msg === 'serving process exited unexpectedly; replacing it')
        .map((l) => l.restartInMs);
      assert.deepEqual(delays, [250, 500, 1000, 2000]);
    } finally {
      holder.close();
    }
  });
});
