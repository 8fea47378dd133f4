// suite: single — restarts a private redis-server empty
// Segment mode when Redis loses everything under load: two nodes share a private
// redis-server that is restarted empty twice and flushed once while clients hammer an
// `order: global` and an `order: node` tag. Promises checked over every request: no ID
// answered twice, global-order IDs never go below an ID already answered, node-order IDs
// increase per node, failures are only 503 UNAVAILABLE with Retry-After, service resumes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { redisRunId } from '../../tools/redis-stats.js';
import {
  Load,
  answered,
  assertClientOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  counter,
  maxId,
  now,
  waitFor,
  type ClientSpec,
  type Rec,
} from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

describe('segment mode across Redis restarts and data loss', () => {
  const names = testNames();
  let redis: RedisServer;
  const nodes: LocalNode[] = [];

  before(async () => {
    redis = await RedisServer.start();
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await startLocalNode(names, {
          REDIS_URL: redis.url,
          REFILL_WAIT_MS: '1500',
          NODE_ID: `rr-node-${i}`,
          LOG_LEVEL: 'error',
        }),
      );
    }
    // Small, adaptive segments so refills run all the time, also across the faults.
    await createTag(nodes[0].url, {
      tag: 'g',
      mode: 'segment',
      step: 200,
      min_step: 100,
      max_step: 1000,
      target_seconds: 1,
    });
    await createTag(nodes[0].url, {
      tag: 'n',
      mode: 'segment',
      order: 'node',
      step: 200,
      min_step: 100,
      max_step: 1000,
      target_seconds: 1,
      node_block: 50,
    });
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names, redis.url).catch(() => undefined);
    await redis.kill();
  });

  it('never duplicates or goes backwards, answers only 503 while Redis is away, and recovers', {
    timeout: 150_000,
  }, async () => {
    // Steady load between the faults, long enough for the real-time order check to have well
    // over 1000 answers to constrain on a slow machine too.
    const STEADY_MS = 1500;
    const segKey = (tag: string) => nodes[0].rt.keys.segment(tag, 1, 0);
    const genOf = (tag: string) => withRedis(redis.url, (r) => r.hget(segKey(tag), 'gen'));
    const runId = () => withRedis(redis.url, redisRunId);

    const clients: ClientSpec[] = [];
    let seed = 1;
    nodes.forEach((node, ni) => {
      for (const tag of ['g', 'n']) {
        for (let c = 0; c < 3; c++) {
          clients.push({ name: `${tag}-node${ni}-c${c}`, tag, url: () => node.url, count: counter(seed++, 20) });
        }
      }
    });
    const load = new Load(clients);

    /** Waits until every node served both tags to a request sent after t. */
    const recovered = (t: number, what: string) =>
      waitFor(
        `service after ${what}`,
        () => nodes.every((n) => ['g', 'n'].every((tag) => load.okSince(t, tag).some((r) => r.url === n.url))),
        15000,
      );

    const faults: { what: string; at: number; back: number; genBefore: string | null; genAfter: string | null }[] = [];
    try {
      await recovered(now(), 'start');
      await sleep(STEADY_MS);

      // 1: restart, down for 300 ms.
      let genBefore = await genOf('g');
      const run1 = await runId();
      let at = now();
      await redis.restartEmpty(300);
      let back = now();
      await recovered(back, 'restart 1');
      assert.notEqual(await runId(), run1, 'redis-server was really restarted');
      faults.push({ what: 'restart 1', at, back, genBefore, genAfter: await genOf('g') });
      await sleep(STEADY_MS);

      // 2: every key lost without the connections noticing (FLUSHALL).
      genBefore = await genOf('g');
      at = now();
      await withRedis(redis.url, (r) => r.flushall());
      back = now();
      await recovered(back, 'FLUSHALL');
      faults.push({ what: 'FLUSHALL', at, back, genBefore, genAfter: await genOf('g') });
      await sleep(STEADY_MS);

      // 3: restart with no pause.
      genBefore = await genOf('g');
      at = now();
      await redis.restartEmpty(0);
      back = now();
      await recovered(back, 'restart 2');
      faults.push({ what: 'restart 2', at, back, genBefore, genAfter: await genOf('g') });
      await sleep(STEADY_MS);
      // Enough IDs to check, however busy the machine: the load runs on until each tag has them.
      const idsOf = (tag: string) => load.records.reduce((n, r) => n + (r.tag === tag && r.ids ? r.ids.length : 0), 0);
      // And enough answers of the global tag that real time orders (a request sent after
      // another was answered), which a slow machine makes fewer per second.
      const ordered = () =>
        assertRealTimeOrder(
          load.records.filter((r) => r.tag === 'g'),
          'global tag',
        );
      await waitFor(
        'more than 5000 IDs of each tag, 1000 answers ordered in real time',
        () => idsOf('g') > 5000 && idsOf('n') > 5000 && ordered() > 1000,
        60_000,
      );
    } finally {
      await load.stop();
    }

    // The faults happened: every one of them dropped the tag's Redis state (a new gen).
    for (const f of faults) {
      assert.ok(f.genBefore, `${f.what}: the tag had Redis state before`);
      assert.ok(f.genAfter, `${f.what}: the tag has Redis state again after`);
      assert.notEqual(f.genAfter, f.genBefore, `${f.what}: the tag's Redis state was lost and rebuilt`);
    }

    const recs = load.records;
    const of = (tag: string, url?: string) => recs.filter((r) => r.tag === tag && (url === undefined || r.url === url));
    const summary = (rs: Rec[]) => ({ ok: answered(rs).length, failed: rs.length - answered(rs).length });

    // Never a 500, never a wrong answer: every failure is a clean 503 UNAVAILABLE.
    const n503 = assertOnlyCleanUnavailable(recs, { what: 'redis restart' });
    assert.ok(n503 > 0, 'some requests met the outage (otherwise the fault was not felt)');

    // Never a duplicate, per tag, across both nodes and all three faults.
    const gIds = assertNoDuplicates(of('g'), 'global tag');
    const nIds = assertNoDuplicates(of('n'), 'node tag');
    assert.ok(gIds > 5000 && nIds > 5000, `enough IDs checked (global ${gIds}, node ${nIds})`);

    // order: global: per client, and in real time across every client of both nodes.
    assertClientOrder(of('g'), 'global tag');
    const constrained = assertRealTimeOrder(of('g'), 'global tag');
    assert.ok(constrained > 1000, `real-time order constrained ${constrained} answers`);

    // order: node: per client, and in real time among the clients of one node.
    assertClientOrder(of('n'), 'node tag');
    for (const n of nodes) assertRealTimeOrder(of('n', n.url), `node tag on ${n.url}`);

    // Service resumed after each fault, on each node, for both tags.
    for (const f of faults) {
      for (const n of nodes) {
        for (const tag of ['g', 'n']) {
          assert.ok(
            recs.some((r) => r.ids !== undefined && r.tag === tag && r.url === n.url && r.sent >= f.back),
            `${f.what}: ${tag} served again by ${n.url}`,
          );
        }
      }
    }

    // IDs served after a loss come from segments allocated after it: each one lies above
    // every ID answered before the fault started.
    for (const f of faults) {
      const maxBefore = maxId(of('g').filter((r) => r.done < f.at));
      const firstAfter = answered(of('g'))
        .filter((r) => r.sent > f.back)
        .sort((a, b) => a.done - b.done)[0];
      assert.ok(
        maxBefore > 0n && firstAfter.ids[0] > maxBefore,
        `${f.what}: ${firstAfter.ids[0]} lies above ${maxBefore}`,
      );
    }

    const t = (x: number) => Math.round(x);
    console.log(
      JSON.stringify({
        global: { ...summary(of('g')), ids: gIds, constrained },
        node: { ...summary(of('n')), ids: nIds },
        n503,
        faults: faults.map((f) => ({
          what: f.what,
          recovered_ms: t(
            (answered(of('g'))
              .filter((r) => r.sent >= f.back)
              .sort((a, b) => a.done - b.done)[0]?.done ?? f.back) - f.back,
          ),
        })),
      }),
    );
  });
});
