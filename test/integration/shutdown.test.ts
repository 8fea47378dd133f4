// suite: single — process shutdown under load
// Graceful shutdown under load: SIGTERM while requests are in flight exits with code 0 within
// a few seconds; every request either gets its IDs or fails cleanly (a 503, or a refused or
// closed connection: never a 500, a partial body or a wrong answer), and no ID is ever handed
// out twice across restarts of the node. With its Redis silent, a shutdown ends within
// SHUTDOWN_TIMEOUT_MS, abandoning what cannot finish, and exits with 1. Right after Redis
// dropped every connection (a restart, killed or timed-out clients), a shutdown does not wait
// on a worker connection that is between reconnects: it is graceful once they are back.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testNames } from '../../tools/env.js';
import { duplicates, isAnswer, show, timedTake, type Answer, type Failure } from '../helpers/load.js';
import { waitFor } from '../helpers/fault-load.js';
import { createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { LIVE_WAIT_MS } from '../../src/consumer/worker-close.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';
import { rng, SEED } from '../../tools/prng.js';

const CLIENTS = 8;
/** Load before the signal: answers, and IDs of each tag (with the lives after it, well over the 20,000 checked). */
const LOAD_ANSWERS = 100;
const LOAD_IDS = 10_000;
const EXIT_WITHIN_MS = 5000;
const GLOBAL = 'sd_global';
const NODE = 'sd_node';

interface Life {
  readonly answers: Answer[];
  readonly failures: Failure[];
  /** performance.now() when SIGTERM was sent and when the process had exited. */
  readonly signalled: number;
  readonly exited: number;
  readonly code: number | null;
  /** Requests to tags that were cold when the signal was sent. */
  readonly cold: (Answer | Failure)[];
}

/** Loads the node, sends SIGTERM while load goes on, and keeps sending until it has exited. */
async function liveAndTerminate(node: ChildNode, life: number): Promise<Life> {
  const answers: Answer[] = [];
  const failures: Failure[] = [];
  const exitedP = new Promise<number | null>((r) => node.proc.once('exit', (code) => r(code)));
  let gone = false;
  const loops = Array.from({ length: CLIENTS }, async (_, client) => {
    const r = rng(SEED + life * 100 + client);
    while (!gone) {
      const tag = r.next() < 0.5 ? GLOBAL : NODE;
      const single = r.next() < 0.3;
      // Some large batches keep requests in flight for longer.
      const count = single ? 1 : r.next() < 0.1 ? r.int(1000, 10000) : r.int(1, 100);
      const res = await timedTake(node.url, { client, node: life }, tag, count, single);
      if (isAnswer(res)) answers.push(res);
      else failures.push(res);
      if (!isAnswer(res) && res.status === 0) await sleep(5);
    }
  });
  const idsOf = (tag: string) => answers.reduce((n, a) => (a.tag === tag ? n + a.ids.length : n), 0);
  await waitFor(
    'load before the signal',
    () => answers.length > LOAD_ANSWERS && idsOf(GLOBAL) > LOAD_IDS && idsOf(NODE) > LOAD_IDS,
    60_000,
    20,
  );
  // Requests to a fresh tag wait for its first refill: in flight across the signal.
  const coldTag = `sd_cold_${life}`;
  await createTag(node.url, { tag: coldTag, step: 100, min_step: 10 });
  const coldP = Array.from({ length: 10 }, (_, i) =>
    timedTake(node.url, { client: 100 + i, node: life }, coldTag, 5, false),
  );
  // The signal goes out while they wait for the tag's first refill: 3 ms is an upper bound, not a
  // wait for something (long enough for them to reach the node, shorter than a refill takes).
  // Waiting until they are seen waiting let the refill finish first on a quiet machine: nothing
  // was then in flight to hold the closing node open, and no request met its 503.
  await sleep(3);
  const signalled = performance.now();
  node.proc.kill('SIGTERM');
  const code = await exitedP;
  const exited = performance.now();
  gone = true;
  await Promise.all(loops);
  const cold = await Promise.all(coldP);
  return { answers, failures, signalled, exited, code, cold };
}

/**
 * A failure is clean when the client learns it got no ID: a 503 answer (whatever its body;
 * the body's shape is checked on its own below), or a refused or closed connection. A 500,
 * any other status, a body that is not JSON, or a 200 without the IDs asked for is not.
 */
function unclean(f: Failure): string | undefined {
  if (f.status === 0 || (f.status === 503 && !f.detail.includes('not JSON'))) return undefined;
  return f.detail;
}

describe('graceful shutdown under load', () => {
  const names = testNames();
  const lives: Life[] = [];
  let last: ChildNode | undefined;

  before(async () => {
    for (let life = 0; life < 2; life++) {
      const node = await spawnNode(names, { NODE_ID: `sd-${life}` });
      if (life === 0) {
        await createTag(node.url, { tag: GLOBAL, step: 200, min_step: 100, target_seconds: 1 });
        await createTag(node.url, {
          tag: NODE,
          order: 'node',
          node_block: 500,
          step: 200,
          min_step: 100,
          target_seconds: 1,
        });
      }
      lives.push(await liveAndTerminate(node, life));
    }
    last = await spawnNode(names, { NODE_ID: 'sd-2' });
  });
  after(async () => {
    await last?.stop();
    await cleanup(names);
  });

  it('exits with code 0 within a few seconds of SIGTERM, while under load', (t) => {
    t.diagnostic(`batch sizes of seed ${SEED} (SEED=${SEED} replays them)`);
    for (const [i, l] of lives.entries()) {
      const ms = l.exited - l.signalled;
      t.diagnostic(
        `life ${i}: exited ${ms.toFixed(0)} ms after SIGTERM; ${l.answers.length} answered, ${l.failures.length} failed`,
      );
      assert.equal(l.code, 0, `life ${i} exit code`);
      assert.ok(ms < EXIT_WITHIN_MS, `life ${i} took ${ms.toFixed(0)} ms to exit`);
      assert.ok(l.answers.length > 100, `life ${i}: only ${l.answers.length} requests answered before the signal`);
    }
  });

  it('requests in flight at the signal get their IDs or fail cleanly', (t) => {
    for (const [i, l] of lives.entries()) {
      const all = [...l.answers, ...l.failures, ...l.cold];
      const inFlight = all.filter((r) => r.sent < l.signalled && r.answered > l.signalled);
      const completed = inFlight.filter(isAnswer);
      const kinds = new Map<string, number>();
      for (const f of inFlight.filter((r): r is Failure => !isAnswer(r)))
        kinds.set(f.detail.slice(0, 60), (kinds.get(f.detail.slice(0, 60)) ?? 0) + 1);
      t.diagnostic(
        `life ${i}: ${inFlight.length} in flight at the signal, ${completed.length} completed with IDs; cold tag: ${l.cold.filter(isAnswer).length}/10 served; failures: ${show([...kinds])}`,
      );
      assert.ok(inFlight.length >= 5, `life ${i}: only ${inFlight.length} requests were in flight`);
      const bad = [...l.failures, ...l.cold.filter((r): r is Failure => !isAnswer(r))]
        .map(unclean)
        .filter((s) => s !== undefined);
      assert.deepEqual(bad.slice(0, 5), [], `life ${i}: ${bad.length} requests failed uncleanly`);
      // The node drains what it is serving rather than dropping it.
      assert.ok(completed.length >= 1, `life ${i}: no request in flight at the signal completed`);
      // Nothing answered before the signal failed.
      const early = l.failures.filter((f) => f.answered < l.signalled);
      assert.deepEqual(early.map((f) => f.detail).slice(0, 5), [], `life ${i}: requests failed before the signal`);
    }
  });

  // The API promises {"error":{"code","message"}} and Retry-After on every 503. Requests that
  // reach a closing node on a kept-alive connection are answered by Fastify's own load-shedding
  // 503 ({"error":"Service Unavailable","statusCode":503}: no code, no Retry-After).
  it('error answers during shutdown carry the error shape and Retry-After of the API', (t) => {
    const answered = lives.flatMap((l) =>
      [...l.failures, ...l.cold.filter((r): r is Failure => !isAnswer(r))].filter((f) => f.status !== 0),
    );
    t.diagnostic(
      `${answered.length} error answers during shutdown: ${[...new Set(answered.map((f) => f.detail))].slice(0, 3).join(' | ')}`,
    );
    assert.ok(answered.length > 0, 'no request was answered with an error while closing');
    for (const f of answered) {
      assert.equal(f.status, 503, f.detail);
      assert.equal(f.code, 'UNAVAILABLE', f.detail);
      assert.match(f.retryAfter ?? '', /^\d+$/, `no Retry-After on ${f.detail}`);
    }
  });

  it('never repeats an ID across the restarts, and global IDs keep increasing', async () => {
    const after: Answer[] = [];
    for (let i = 0; i < 200; i++) {
      for (const tag of [GLOBAL, NODE]) {
        const res = await timedTake(last!.url, { client: 0, node: 2 }, tag, 50, false);
        assert.ok(isAnswer(res), show(res));
        after.push(res);
      }
    }
    const everything = [...lives.flatMap((l) => [...l.answers]), ...after];
    for (const tag of [GLOBAL, NODE]) {
      const { total, repeated } = duplicates(everything.filter((a) => a.tag === tag));
      assert.ok(total > 20_000, `${tag}: only ${total} IDs checked`);
      assert.deepEqual(repeated.slice(0, 10), [], `${tag}: ${repeated.length} of ${total} IDs repeated`);
    }
    // Every life's global IDs lie above the previous life's: answered later, so larger.
    const top = (xs: Answer[]) => xs.flatMap((a) => a.ids).reduce((m, v) => (v > m ? v : m), 0n);
    const bottom = (xs: Answer[]) =>
      xs.flatMap((a) => a.ids).reduce((m, v) => (v < m ? v : m), BigInt(Number.MAX_SAFE_INTEGER));
    const byLife = [
      ...lives.map((l) => l.answers.filter((a) => a.tag === GLOBAL)),
      after.filter((a) => a.tag === GLOBAL),
    ];
    for (let i = 1; i < byLife.length; i++) {
      assert.ok(
        bottom(byLife[i]) > top(byLife[i - 1]),
        `life ${i} issued ${bottom(byLife[i])}, not above ${top(byLife[i - 1])} of life ${i - 1}`,
      );
    }
  });
});

describe('shutdown with a silent Redis', () => {
  const names = testNames();
  let proxy: FaultProxy;
  let node: ChildNode | undefined;
  const SHUTDOWN_TIMEOUT_MS = 2000;

  before(async () => {
    proxy = await FaultProxy.start(6379, { seed: 9 });
    node = await spawnNode(names, { REDIS_URL: proxy.url, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
    await createTag(node.url, { tag: 'g', mode: 'segment', order: 'global' });
    await fetchIds(node.url, 'g', 3);
  });
  after(async () => {
    await node?.kill();
    await proxy?.close();
    await cleanup(names);
  });

  it('ends within SHUTDOWN_TIMEOUT_MS, says which steps it abandoned, and exits with 1', async () => {
    proxy.blackhole();
    const t0 = performance.now();
    const code = await node!.stop();
    const took = performance.now() - t0;
    const forced = node!.output.find((l) => l.includes('"msg":"shutdown forced'));
    node = undefined;
    assert.ok(took < SHUTDOWN_TIMEOUT_MS + 2500, `SIGTERM to exit took ${took.toFixed(0)} ms`);
    assert.equal(code, 1);
    assert.ok(forced, 'the forced shutdown is logged');
    const line = JSON.parse(forced) as { unfinished: string[]; shutdownTimeoutMs: number };
    assert.equal(line.shutdownTimeoutMs, SHUTDOWN_TIMEOUT_MS);
    assert.ok(line.unfinished.includes('redis quit'), line.unfinished.join(', '));
  });
});

describe('shutdown right after Redis dropped its connections', () => {
  const names = testNames();
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await cleanup(names, redis.url).catch(() => undefined);
    await redis?.stop();
  });

  it('is graceful and prompt: no worker close waits for a connection between reconnects', {
    timeout: 120000,
  }, async (t) => {
    const SHUTDOWN_TIMEOUT_MS = 5000;
    t.diagnostic(`seed ${SEED} (SEED=${SEED} replays it)`);
    const rand = rng(SEED + 17);
    const slow: string[] = [];
    for (let i = 0; i < 12; i++) {
      const node = await startLocalNode(names, {
        REDIS_URL: redis.url,
        GRPC_PORT: '0',
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        LOG_LEVEL: 'fatal',
      });
      await sleep(50 + rand.next() * 100);
      // Every client of this private server but ours is dropped, as a restart would.
      await withRedis(redis.url, async (r) => {
        await r.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
        await r.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      });
      await sleep(rand.next() * 60);
      const t0 = performance.now();
      let error = '';
      await node.close().catch((err: Error) => {
        error = err.message;
      });
      const took = performance.now() - t0;
      if (error || took > LIVE_WAIT_MS + 1000) slow.push(`close ${i}: ${took.toFixed(0)} ms ${error}`);
    }
    assert.deepEqual(slow, [], `closes after dropped connections were forced or slow:\n${slow.join('\n')}`);
  });
});
