// suite: cluster
// A pause of the idmint process itself (SIGSTOP, a long GC, a frozen VM) is not a silent
// network. The process wakes with its timers overdue and the replies it waited for already
// received by the kernel; its Redis commands must settle with those replies and its
// connections stay open, so the requests that waited through the pause get their IDs; a
// command made just before the pause and written after it counts its deadline from its write.
// A network that really is silent still times out (network-faults.test.ts holds the bounds).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDefaultRedis, createRedis, whenReady, type RedisClient } from '../../src/store/redis/connection.js';
import { cleanup, skipOnCluster, testConfig, testNames } from '../../tools/env.js';
import { createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';
import { Load, assertNoDuplicates, assertRealTimeOrder, now } from '../helpers/fault-load.js';

const COMMAND_TIMEOUT_MS = 500;
/** Longer than the command timeout, so both of ioredis's timers are due when the process wakes. */
const PAUSE_MS = 3 * COMMAND_TIMEOUT_MS;

/** Keeps this thread busy for ms: no timer, no socket read, as when the process is stopped. */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    (v) => ({ ok: true as const, v }),
    (e: Error) => ({ ok: false as const, error: e.message }),
  );

describe('a paused process keeps its Redis connections and its replies', () => {
  const names = testNames();
  let redis: RedisClient;

  before(async () => {
    redis = createDefaultRedis(testConfig(names, { REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) }), 'command');
    await whenReady(redis);
    await redis.set(`${names.prefix}:pause`, 'here');
  });
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  // Made: the command is made and the thread stops in the same turn (on a single server's
  // connection it is then still held by the write batching, written after the pause). Made in an
  // immediate: the same in the turn's last phase, so that it is written only after the
  // connection's deadline timer came due (its deadline counts from its write). Written: the
  // thread stops once the command was written, before its reply was read.
  for (const when of ['made', 'made in an immediate', 'written'] as const)
    it(`a command ${when} when the thread stops gets its reply, and the connection stays open`, async () => {
      await pausedRounds(when);
    });

  async function pausedRounds(when: 'made' | 'made in an immediate' | 'written'): Promise<void> {
    const paused = () => {
      const pending = outcome(redis.get(`${names.prefix}:pause`));
      block(PAUSE_MS);
      return pending;
    };
    for (let round = 0; round < 3; round++) {
      let pending: ReturnType<typeof outcome>;
      if (when === 'made') pending = paused();
      else if (when === 'made in an immediate')
        pending = (
          await new Promise<{ p: ReturnType<typeof outcome> }>((resolve) =>
            setImmediate(() => resolve({ p: paused() })),
          )
        ).p;
      else {
        pending = outcome(redis.get(`${names.prefix}:pause`));
        // The write batching writes in this turn's immediates (write-batching.ts): after them.
        await new Promise((resolve) => setImmediate(resolve));
        block(PAUSE_MS);
      }
      assert.deepEqual(await pending, { ok: true, v: 'here' }, `round ${round}: the reply arrived during the pause`);
      assert.equal(redis.status, 'ready', `round ${round}: the connection was not reset`);
      await sleep(5);
      assert.equal(redis.status, 'ready', `round ${round}: no reconnect after the pause`);
      assert.deepEqual(
        await outcome(redis.get(`${names.prefix}:pause`)),
        { ok: true, v: 'here' },
        `round ${round}: the next command`,
      );
    }
  }

  it('a peer that is silent still times out, and the connection is reset', {
    skip: skipOnCluster('proxies one connection'),
  }, async () => {
    const proxy = await FaultProxy.start(6379, { seed: 5 });
    const r = createRedis(proxy.url, 'command', COMMAND_TIMEOUT_MS);
    r.on('error', () => undefined);
    try {
      await whenReady(r);
      await r.ping();
      proxy.blackhole();
      const t0 = now();
      const got = await outcome(r.get(`${names.prefix}:pause`));
      const took = now() - t0;
      assert.deepEqual(got, { ok: false, error: 'Command timed out' });
      assert.ok(
        took >= COMMAND_TIMEOUT_MS - 5 && took < COMMAND_TIMEOUT_MS + 500,
        `timed out after ${took.toFixed(0)} ms`,
      );
      await sleep(50);
      assert.notEqual(r.status, 'ready', 'the silent connection was dropped');
    } finally {
      r.disconnect();
      await proxy.close();
    }
  });
});

describe('a node stopped with SIGSTOP under load answers every request once it resumes', {
  skip: skipOnCluster('proxies the connection to one Redis'),
}, () => {
  const names = testNames();
  let proxy: FaultProxy;
  let node: ChildNode;

  before(async () => {
    // Latency on the replies, so takes are in flight whenever the node is stopped.
    proxy = await FaultProxy.start(6379, { seed: 7 });
    proxy.set({ latencyMs: 20 }, 'down');
    node = await spawnNode(names, { REDIS_URL: proxy.url, REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) });
    await createTag(node.url, { tag: 'g', mode: 'segment', order: 'global', step: 1000 });
  });
  after(async () => {
    if (node) process.kill(node.pid, 'SIGCONT');
    await node?.stop();
    await proxy?.close();
    await cleanup(names);
  });

  it('no request fails and no connection is reset by the pause', async () => {
    const load = new Load(
      Array.from({ length: 8 }, (_, i) => ({
        name: `c${i}`,
        tag: 'g',
        url: () => node.url,
        count: () => 1 + (i % 3),
        pauseOnSuccess: 2,
      })),
    );
    // Every client is looping before the node is stopped; two pauses, so that requests caught
    // in flight do not depend on where the clients were at one instant of a busy machine.
    for (const until = now() + 10000; new Set(load.records.map((r) => r.client)).size < 8; await sleep(20)) {
      assert.ok(now() < until, 'the clients never all got an answer');
    }
    await sleep(300);
    const pauses: { stopped: number; resumed: number }[] = [];
    for (let i = 0; i < 2; i++) {
      const stopped = now();
      process.kill(node.pid, 'SIGSTOP');
      await sleep(PAUSE_MS);
      process.kill(node.pid, 'SIGCONT');
      pauses.push({ stopped, resumed: now() });
      await sleep(800);
    }
    const resumed = pauses[pauses.length - 1].resumed;
    const recs = await load.stop();

    const failed = recs.filter((r) => r.status !== 200);
    assert.deepEqual(
      failed.slice(0, 5).map((r) => `${r.client}: ${r.status} ${r.code ?? ''} ${r.detail ?? ''}`),
      [],
      `${failed.length} of ${recs.length} requests failed`,
    );
    const waited = recs.filter((r) => pauses.some((p) => r.sent < p.stopped && r.done > p.resumed));
    assert.ok(waited.length >= 4, `requests in flight through the pause: ${waited.length}`);
    assert.ok(recs.filter((r) => r.sent > resumed).length > 20, 'requests after the pause');
    assertNoDuplicates(recs, 'g');
    assertRealTimeOrder(recs, 'g');
    const reset = node.output.filter((l) => /Socket timeout|Command timed out|reconnect/i.test(l));
    assert.deepEqual(reset, [], 'the node logged no timeout or reconnect');
  });
});
