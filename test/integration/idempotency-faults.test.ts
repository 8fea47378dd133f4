// suite: single — restarts its own redis-servers and fails over its own Sentinel group
// Keyed requests to a plain `order: global` segment tag are looked up, taken and kept in one
// Redis call (idem-takes-4.lua) while the counter is in its steady state. Here that path meets
// a Redis that lost data while a client retries a key at the worst moment and an observer
// records every answer: (a) the server restarted from a snapshot taken before some keys were
// answered, (b) restarted empty, (c) a Sentinel failover under keyed requests. What
// docs/GUARANTEES.md promises for keys across Redis loss is checked over every answer
// (test/helpers/keyed-load.ts, assertKeyPromises): a key the data the server came back with
// holds is answered the same IDs; a key it lost is served as a first request, with IDs above
// every ID answered before the fault, never anyone else's; no ID twice; no key with two answers
// on one side of the fault, and none answered from a process's memory of what the server lost.
// Batch sizes are random: IDEM_FAULTS_SEED=<seed> replays a run.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { cleanup, skipOnCluster, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis, withRedisPort } from '../../tools/redis-server.js';
import { counter, now, waitFor } from '../helpers/fault-load.js';
import { assertKeyPromises, assertNoneRemembered, Observer, Retrier } from '../helpers/keyed-load.js';
import { masterAddr, sentinelScript } from '../helpers/sentinel-group.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const SEED = Number(process.env.IDEM_FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`idempotency-faults: IDEM_FAULTS_SEED=${SEED}`);

const SENTINEL_BASE = Number(process.env.IDEM_FAULTS_SENTINEL_BASE_PORT ?? 7531);

/** Keys answered per phase, and a request without a key after every third of them. */
const KEYS_PER_PHASE = 30;

/**
 * Two idmint processes on one Redis, a tag whose segments last (its steady state is the one-call path), and an
 * observer.
 */
async function serving(
  names: ReturnType<typeof testNames>,
  redisUrl: string,
  tag: string,
  nodes: LocalNode[],
  extra: Record<string, string> = {},
) {
  for (let i = 0; i < 2; i++)
    nodes.push(
      await startLocalNode(names, {
        REDIS_URL: redisUrl,
        REFILL_WAIT_MS: '1500',
        NODE_ID: `idem-faults-${tag}-${i}`,
        LOG_LEVEL: 'error',
        // Answers held in memory far past the fault: a process must drop them when its connection
        // to the Redis that lost them closes, not when they age out (kept-answers.ts).
        IDEMPOTENCY_HOLD_MS: '120000',
        ...extra,
      }),
    );
  const mine = nodes.slice(-2);
  await createTag(mine[0].url, { tag, step: 100_000, min_step: 100_000 });
  const observer = new Observer();
  let turn = 0;
  const url = () => mine[turn++ % 2].url;
  const count = counter(SEED ^ tag.length, 3);
  const asked = new Map<string, number>();
  await waitFor(`${tag} serves`, async () => (await observer.ask(url(), tag, 1)).ids, 20_000);
  /** keys prefix-0 .. prefix-(k-1), each until answered, and unkeyed requests between them. */
  const send = async (prefix: string, k = KEYS_PER_PHASE) => {
    for (let i = 0; i < k; i++) {
      const key = `${prefix}-${i}`;
      const n = count();
      asked.set(key, n);
      await observer.answerOf(url(), tag, n, key);
      if (i % 3 === 0) await observer.ask(url(), tag, count());
    }
  };
  /** A retrier running across `fault`; returns when the server was back (performance.now()). */
  const across = async (fault: () => Promise<void>): Promise<{ faultAt: number; backAt: number }> => {
    const retrier = new Retrier(observer, url, tag, 'retry', count);
    try {
      await waitFor('the retrier answered', () => retrier.keys.size >= 3, 20_000);
      const faultAt = now();
      await fault();
      const backAt = now();
      await waitFor(
        'a retried key answered after the fault',
        () => observer.answers.some((a) => a.key?.startsWith('retry') && a.ids && a.sent >= backAt),
        30_000,
      );
      for (const [key, n] of retrier.keys) asked.set(key, n);
      return { faultAt, backAt };
    } finally {
      await retrier.stop();
    }
  };
  /** Every key asked again until answered, then requests without a key. */
  const replayAll = async () => {
    for (const [key, n] of asked) await observer.answerOf(url(), tag, n, key);
    for (let i = 0; i < 10; i++) await observer.ask(url(), tag, count());
  };
  return { observer, send, across, replayAll };
}

describe('idempotency keys of the one-call path across Redis faults', {
  skip: skipOnCluster('it restarts its own redis-servers'),
}, () => {
  const names = testNames();
  const servers: RedisServer[] = [];
  const nodes: LocalNode[] = [];

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    for (const s of servers) {
      await cleanup(names, s.url).catch(() => undefined);
      await s.stop();
    }
  });

  it('a snapshot restored: keys it holds answer the same IDs, keys answered after it get a first answer above every ID seen, no ID twice', {
    timeout: 150_000,
  }, async () => {
    const server = await RedisServer.start();
    servers.push(server);
    const { observer, send, across, replayAll } = await serving(names, server.url, 'snap', nodes);
    await send('kept');
    const lostFrom = now();
    await withRedis(server.url, (r) => r.call('SAVE'));
    // Answered after the snapshot: the restored data has neither their records nor the cursor past them.
    await send('lost');
    const { faultAt, backAt } = await across(async () => {
      await server.kill();
      await server.start();
    });
    await replayAll();
    const seen = assertKeyPromises(observer.answers, lostFrom, faultAt, backAt);
    console.log(`snapshot restored: ${JSON.stringify(seen)} in ${observer.answers.length} answers`);
    assert.ok(seen.changed > 0, 'some keys answered after the snapshot were lost and answered anew');
  });

  it('restarted empty: every key lost gets a first answer above every ID seen, no ID twice', {
    timeout: 150_000,
  }, async () => {
    const server = await RedisServer.start();
    servers.push(server);
    const { observer, send, across, replayAll } = await serving(names, server.url, 'empty', nodes);
    await send('lost');
    const { faultAt, backAt } = await across(() => server.restartEmpty());
    await replayAll();
    const seen = assertKeyPromises(observer.answers, -Infinity, faultAt, backAt);
    assertNoneRemembered(observer.answers, faultAt, backAt);
    console.log(`restarted empty: ${JSON.stringify(seen)} in ${observer.answers.length} answers`);
    assert.ok(seen.changed > 0, 'the keys were lost and answered anew');
  });

  it('a lagging replica promoted by Sentinel: keys it holds answer the same IDs, keys it missed a first answer above every ID seen, no ID twice', {
    timeout: 150_000,
  }, async () => {
    const script = sentinelScript(SENTINEL_BASE);
    const seeds = script('start').split('\n').pop()!;
    const sentinels = seeds.split(',').map((a) => Number(a.split(':')[1]));
    const had = nodes.length;
    try {
      const master = script('master');
      const { observer, send, across, replayAll } = await serving(
        names,
        `redis://127.0.0.1:${SENTINEL_BASE}`,
        'failover',
        nodes,
        {
          REDIS_SENTINELS: seeds,
          REDIS_SENTINEL_MASTER: master,
        },
      );
      const first = Number((await masterAddr(sentinels[0])).split(':')[1]);
      await send('kept');
      // Everything so far reaches the replica; then its link is cut (the master refuses its
      // resynchronisation), so the keys answered next and the cursor past them never reach it.
      await withRedisPort(first, async (r) => {
        assert.equal(await r.call('WAIT', '1', '5000'), 1, 'the replica acknowledged every write so far');
        await r.call('ACL', 'SETUSER', 'default', '-psync', '-sync');
        await r.call('CLIENT', 'KILL', 'TYPE', 'replica');
      });
      const lostFrom = now();
      await send('lost');
      const { faultAt, backAt } = await across(async () => {
        const pid = await withRedisPort(first, async (m) =>
          Number(/process_id:(\d+)/.exec(await m.info('server'))![1]),
        );
        process.kill(pid, 'SIGKILL');
        await waitFor(
          'the sentinels promoted the replica',
          async () => (await masterAddr(sentinels[0])) !== `127.0.0.1:${first}`,
          60_000,
          100,
        );
      });
      await replayAll();
      const seen = assertKeyPromises(observer.answers, lostFrom, faultAt, backAt);
      console.log(`lagging replica promoted: ${JSON.stringify(seen)} in ${observer.answers.length} answers`);
      assert.ok(seen.changed > 0, 'keys answered after the replica was cut off were lost and answered anew');
    } finally {
      // Its processes go before the group does (else they would wait for a master).
      for (const n of nodes.splice(had)) await n.close().catch(() => undefined);
      const current = await masterAddr(sentinels[1]).catch(() => '');
      if (current) await cleanup(names, `redis://${current}`).catch(() => undefined);
      script('stop');
    }
  });
});
