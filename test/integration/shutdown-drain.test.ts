// suite: single — process shutdown with a drain
// The drain on SIGTERM (SHUTDOWN_DRAIN_MS): the node reports not ready at once (/readyz 503
// "draining", gRPC health NOT_SERVING) while clients that keep asking for IDs over HTTP and
// gRPC through the signal get every one of them until the drain is over; then it closes and
// exits with 0. A second signal during the drain exits at once; SHUTDOWN_DRAIN_MS=0 closes at
// once; `serve --processes 2` drains each of its processes the same way. Times come from the
// node's own log lines: no fixed waits.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { freePort, logLines, startTsx } from '../../tools/child.js';
import { createTag, fetchIds, spawnNode } from '../../tools/node.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { readyz } from '../helpers/answers.js';
import { HealthClient } from '../helpers/grpc-health-client.js';

const DRAIN_MS = 4000;
const DRAINING = '"msg":"draining: reporting not ready';
const DRAIN_OVER = '"msg":"drain over: closing"';

interface Result {
  readonly via: string;
  /** Date.now() when sent and when the answer (or failure) was seen. */
  readonly sent: number;
  readonly seen: number;
  readonly error?: string;
}

/** Clients asking for IDs one request after another each, until stopped. */
function keepAsking(clients: Record<string, () => Promise<unknown>>) {
  const results: Result[] = [];
  let stopped = false;
  const loops = Object.entries(clients).map(async ([via, ask]) => {
    while (!stopped) {
      const sent = Date.now();
      try {
        await ask();
        results.push({ via, sent, seen: Date.now() });
      } catch (err) {
        results.push({ via, sent, seen: Date.now(), error: (err as Error).message.slice(0, 120) });
        await sleep(5);
      }
    }
  });
  return {
    results,
    /** Resolves once each client has had `n` answers. */
    async warm(n: number) {
      while (Object.keys(clients).some((via) => results.filter((r) => r.via === via && !r.error).length < n))
        await sleep(10);
    },
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

const timeOf = (line: string) => (JSON.parse(line) as { time: number }).time;

describe('drain on SIGTERM', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('reports not ready at once, serves every request over HTTP and gRPC for SHUTDOWN_DRAIN_MS, then exits with 0', async () => {
    const grpcPort = await freePort();
    const node = await spawnNode(names, { SHUTDOWN_DRAIN_MS: String(DRAIN_MS), GRPC_PORT: String(grpcPort) });
    const ids = new IdsClient(grpcPort);
    const health = new HealthClient(grpcPort);
    try {
      await createTag(node.url, { tag: 'd', step: 1000, min_step: 100 });
      const exited = new Promise<number | null>((r) => node.proc.once('exit', (code) => r(code)));
      assert.equal(await health.check(''), 'SERVING');
      assert.equal((await readyz(node.url)).code, 200);
      const load = keepAsking({ http: () => fetchIds(node.url, 'd', 5), grpc: () => ids.next({ tag: 'd', count: 5 }) });
      await load.warm(20);
      const signalled = Date.now();
      node.proc.kill('SIGTERM');
      const began = timeOf(await node.waitForLine((l) => l.includes(DRAINING), 10_000));
      // Seen during the drain (the 'drain over' line is not logged yet).
      const ready = await readyz(node.url);
      const grpcHealth = await health.check('idmint.v1.Ids');
      const overSeen = node.output.some((l) => l.includes(DRAIN_OVER));
      const over = timeOf(await node.waitForLine((l) => l.includes(DRAIN_OVER), DRAIN_MS + 10_000));
      const code = await exited;
      const gone = Date.now();
      await load.stop();

      assert.ok(!overSeen, 'the readiness answers were read during the drain');
      assert.deepEqual({ code: ready.code, status: ready.status }, { code: 503, status: 'draining' });
      assert.equal(grpcHealth, 'NOT_SERVING');
      assert.ok(over - began >= DRAIN_MS - 5, `drained ${over - began} ms`);
      assert.equal(code, 0);
      assert.ok(gone - signalled >= DRAIN_MS, `exited ${gone - signalled} ms after SIGTERM, before the drain was over`);
      // An answer seen before the node logged the end of the drain was sent before it.
      const during = load.results.filter((r) => r.seen >= signalled && r.seen < over);
      const failed = during.filter((r) => r.error);
      assert.deepEqual(failed.slice(0, 5), [], `${failed.length} of ${during.length} requests failed during the drain`);
      for (const via of ['http', 'grpc']) {
        const n = during.filter((r) => r.via === via).length;
        assert.ok(n >= 20, `${via}: only ${n} requests answered during the drain`);
      }
    } finally {
      ids.close();
      health.close();
      await node.kill();
    }
  });

  it('a second SIGTERM during the drain exits at once', async () => {
    const node = await spawnNode(names, { SHUTDOWN_DRAIN_MS: '60000' });
    try {
      // Answered once the signal handlers are in place (they follow the 'idmint listening' line).
      assert.equal((await readyz(node.url)).code, 200);
      const exited = new Promise<number | null>((r) => node.proc.once('exit', (code) => r(code)));
      node.proc.kill('SIGTERM');
      await node.waitForLine((l) => l.includes(DRAINING), 10_000);
      assert.equal((await readyz(node.url)).status, 'draining');
      const t0 = Date.now();
      node.proc.kill('SIGTERM');
      const code = await exited;
      assert.ok(Date.now() - t0 < 5000, `exited ${Date.now() - t0} ms after the second signal`);
      assert.equal(code, 1);
      assert.ok(
        node.output.some((l) => l.includes('second signal: exiting now')),
        'the second signal is logged',
      );
    } finally {
      await node.kill();
    }
  });

  it('with SHUTDOWN_DRAIN_MS=0 closes at once, without a drain', async () => {
    const node = await spawnNode(names, { SHUTDOWN_DRAIN_MS: '0' });
    assert.equal((await readyz(node.url)).code, 200);
    const t0 = Date.now();
    const code = await node.stop();
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 < 10_000, `exited ${Date.now() - t0} ms after SIGTERM`);
    assert.ok(!node.output.some((l) => l.includes(DRAINING)), 'no drain was logged');
    assert.ok(
      node.output.some((l) => l.includes('"msg":"shutting down"')),
      'the signal was handled',
    );
  });
});

describe('drain under serve --processes 2', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('the primary passes SIGTERM on: every process drains while serving, then all exit with 0', async () => {
    const env = {
      ...process.env,
      ...testEnv(names, { LOG_LEVEL: 'info', PORT: String(await freePort()), SHUTDOWN_DRAIN_MS: String(DRAIN_MS) }),
    };
    const child = startTsx(['src/cli.ts', 'serve', '--processes', '2'], { name: 'idmint --processes 2', env });
    try {
      const ready = JSON.parse(
        await child.waitForLine((l) => l.includes('"msg":"all serving processes ready"'), 60_000),
      ) as { address: string };
      const url = ready.address.replace('0.0.0.0', '127.0.0.1');
      await createTag(url, { tag: 'p', step: 1000, min_step: 100 });
      const load = keepAsking({ a: () => fetchIds(url, 'p', 3), b: () => fetchIds(url, 'p', 3) });
      await load.warm(20);
      const signalled = Date.now();
      child.proc.kill('SIGTERM');
      const drains = () =>
        logLines(child.output).filter((l) => String(l.msg).startsWith('draining: reporting not ready'));
      await child.waitUntil(() => drains().length === 2, 10_000);
      // Both processes share the port: whichever answers is draining.
      const answers = [await readyz(url), await readyz(url), await readyz(url), await readyz(url)];
      const overSeen = child.output.some((l) => l.includes(DRAIN_OVER));
      const over = timeOf(await child.waitForLine((l) => l.includes(DRAIN_OVER), DRAIN_MS + 10_000));
      const code = await child.exited;
      await load.stop();

      assert.ok(!overSeen, 'the readiness answers were read during the drain');
      assert.deepEqual(new Set(answers.map((a) => `${a.code} ${a.status}`)), new Set(['503 draining']));
      assert.equal(code, 0);
      const during = load.results.filter((r) => r.seen >= signalled && r.seen < over);
      const failed = during.filter((r) => r.error);
      assert.deepEqual(failed.slice(0, 5), [], `${failed.length} of ${during.length} requests failed during the drain`);
      assert.ok(during.length >= 40, `only ${during.length} requests answered during the drain`);
    } finally {
      await child.kill();
    }
  });
});
