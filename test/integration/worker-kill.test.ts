// suite: single — MySQL transactions frozen by a proxy and a killed process
// A node killed (SIGKILL) in the middle of refill jobs. Node A, a child process, reaches MySQL
// through a proxy that freezes its refill transactions: for tag `wk1` right after COMMIT was
// sent (the segment is allocated and logged in MySQL, the answer never arrives, so it is
// never installed), for tag `wk2` right after the counter UPDATE (uncommitted, row locked).
// A is killed there. Node B (direct MySQL) takes over: the stalled jobs run again on B, the
// uncommitted allocation was rolled back, the orphaned segment is never served, and the
// clients, moved from A to B, see no duplicate and no step backwards across the switch.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { poolOptions } from '../../src/store/mysql/pool.js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { SqlFreezeProxy } from '../../tools/proxies/sql-freeze-proxy.js';
import {
  Load,
  answered,
  assertClientOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  counter,
  now,
  waitFor,
  type ClientSpec,
} from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const STEP = 1000;
const TAGS = ['wk1', 'wk2'] as const;

describe('a node killed in the middle of a refill', () => {
  const names = testNames();
  let proxy: SqlFreezeProxy;
  let direct: mysql.Pool;
  let a: ChildNode | undefined;
  let b: LocalNode | undefined;
  const ref = (tag: string) => ({ tag, epoch: 1, shard: 0 });
  const segmentRows = async (tag: string) =>
    (
      await direct.query<RowDataPacket[]>(
        'SELECT first_id, last_id, node_id FROM idmint_segments WHERE tag = ? ORDER BY id',
        [tag],
      )
    )[0].map((r) => ({
      first: Number(r.first_id),
      last: Number(r.last_id),
      node: String(r.node_id),
    }));

  before(async () => {
    proxy = await SqlFreezeProxy.start(3306);
    direct = mysql.createPool(poolOptions(names.mysqlUrl));
    a = await spawnNode(names, {
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/x`),
      NODE_ID: 'node-a',
      REFILL_WAIT_MS: '500',
    });
    for (const tag of TAGS) {
      await createTag(a.url, { tag, step: STEP, min_step: STEP, max_step: STEP });
      await fetchIds(a.url, tag, 1);
    }
  });

  after(async () => {
    await a?.kill().catch(() => undefined);
    await b?.close().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    await direct?.end().catch(() => undefined);
    await cleanup(names);
  });

  it('another node takes over the stalled refills: service continues, no duplicate, global order holds', {
    timeout: 55000,
  }, async () => {
    // Freeze A's prefetch refills of both tags mid-transaction.
    const frozen = Promise.all([
      proxy.arm({ name: 'wk1 after COMMIT', pattern: /'wk1'[\s\S]*\bCOMMIT\b/ }),
      proxy.arm({ name: 'wk2 after UPDATE', pattern: /'wk2'[\s\S]*UPDATE idmint_counters SET max_id/ }),
    ]);
    let target = a!.url;
    const clients: ClientSpec[] = [];
    TAGS.forEach((tag, t) => {
      for (let c = 0; c < 2; c++) {
        clients.push({
          name: `${tag}-c${c}`,
          tag,
          url: () => target,
          count: counter(31 * t + c + 1, 5),
          pauseOnSuccess: 2,
          pauseOnError: 100,
        });
      }
    });
    const load = new Load(clients);
    let killedAt = 0;
    let killStart = 0;
    const completedOnB: { tag: string; jobId?: string; result: string; first?: number; at: number }[] = [];
    let stalledJobs: { tag: string; id?: string }[] = [];
    let orphan: { first: number; last: number } | undefined;
    try {
      await waitFor("both of A's refills frozen mid-transaction", () => proxy.frozen.length === 2, 10000);
      const [f1, f2] = await frozen;
      assert.ok(Math.abs(f1.at - f2.at) < 3000, "both refills froze close together (before A's transaction timeout)");

      // wk1's segment is committed in MySQL but not in Redis.
      orphan = await waitFor(
        'the orphaned wk1 segment in the log',
        async () => (await segmentRows('wk1')).find((r) => r.node === 'node-a' && r.first > 1),
        2000,
      );

      // B starts (its worker cannot take the jobs: A still holds their locks), then A dies.
      b = await startLocalNode(names, { NODE_ID: 'node-b', REFILL_WAIT_MS: '500', LOG_LEVEL: 'error' });
      b.rt.refillWorker!.on('completed', (job, out) => {
        completedOnB.push({ tag: job.data.tag, jobId: job.id, result: out.result, first: out.first, at: now() });
      });
      const active = await b.rt.producer.queue.getActive();
      stalledJobs = active.map((j) => ({ tag: j.data.tag, id: j.id }));
      assert.deepEqual(stalledJobs.map((j) => j.tag).sort(), [...TAGS], 'A is running one refill job per tag');
      const st1 = await b.rt.segments.stats(ref('wk1'));
      assert.equal(st1.next, undefined, 'the committed wk1 segment never reached Redis');
      assert.ok(st1.end! < orphan.first);

      killStart = now();
      await a!.kill();
      killedAt = now();
      target = b.url;

      // Both tags are served again through B, from segments B allocated.
      for (const tag of TAGS) {
        await waitFor(
          `B completes a refill of ${tag}`,
          () => completedOnB.some((c) => c.tag === tag && (c.result === 'current' || c.result === 'next')),
          25000,
          100,
        );
      }
      const resumed = now();
      await waitFor('both tags served again', () => TAGS.every((tag) => load.okSince(resumed, tag).length > 20), 10000);
    } finally {
      await load.stop();
    }

    const recs = load.records;
    const of = (tag: string) => recs.filter((r) => r.tag === tag);
    const jobsOf = (tag: string) => stalledJobs.filter((j) => j.tag === tag).map((j) => j.id);
    const rows = Object.fromEntries(await Promise.all(TAGS.map(async (t) => [t, await segmentRows(t)] as const)));
    console.log(
      JSON.stringify({
        requests: recs.length,
        killedAfter_ms: Math.round(killedAt - killStart),
        completedOnB: completedOnB.map((c) => ({ ...c, at: Math.round(c.at - killedAt) })),
        stalledJobs,
        segments: rows,
        noAnswer: recs.filter((r) => r.status === 0).length,
        unavailable: recs.filter((r) => r.status === 503).length,
      }),
    );

    // Only clean failures: 503 UNAVAILABLE, or no answer from A around its death.
    assertOnlyCleanUnavailable(recs, {
      what: 'worker kill',
      transportOk: (r) => r.url === a!.url && r.done >= killStart,
    });

    for (const tag of TAGS) {
      // The stalled job itself ran again on B.
      assert.ok(
        completedOnB.some(
          (c) => c.tag === tag && jobsOf(tag).includes(c.jobId) && (c.result === 'current' || c.result === 'next'),
        ),
        `${tag}: the job A was running completed on B`,
      );
      // The promises, across the switch from A to B.
      const ids = assertNoDuplicates(of(tag), tag);
      assert.ok(ids > 500, `${tag}: ${ids} IDs checked`);
      assertClientOrder(of(tag), tag);
      assert.ok(assertRealTimeOrder(of(tag), tag) > 200, `${tag}: real-time order had answers to compare`);
      const fromA = answered(of(tag)).filter((r) => r.url === a!.url);
      const fromB = answered(of(tag)).filter((r) => r.url === b!.url);
      assert.ok(
        fromA.length > 20 && fromB.length > 20,
        `${tag}: served by A (${fromA.length}) and then by B (${fromB.length})`,
      );
      // Segment log: disjoint, and B's segments come from B.
      const log = rows[tag];
      for (let i = 1; i < log.length; i++)
        assert.ok(log[i].first > log[i - 1].last, `${tag}: segments disjoint and ascending`);
      const bSeg = log.find((r) => r.node === 'node-b');
      assert.ok(bSeg, `${tag}: B allocated a segment`);
      assert.ok(
        fromB.some((r) => r.ids[0] >= BigInt(bSeg.first)),
        `${tag}: IDs served from the segment B allocated`,
      );
    }

    // wk1: the segment A committed but never installed is wasted, never served.
    const inOrphan = answered(of('wk1'))
      .flatMap((r) => r.ids)
      .filter((id) => id >= BigInt(orphan!.first) && id <= BigInt(orphan!.last));
    assert.deepEqual(inOrphan, [], 'no ID from the orphaned segment');
    assert.ok(
      rows.wk1.filter((r) => r.node === 'node-b').every((r) => r.first > orphan!.last),
      'B allocated above the orphaned segment',
    );

    // wk2: A's allocation was never committed: MySQL rolled it back when A died, so B's first
    // segment starts right after A's last committed one.
    const aRows = rows.wk2.filter((r) => r.node === 'node-a');
    const bFirst = rows.wk2.find((r) => r.node === 'node-b')!;
    assert.equal(aRows.length, 1, 'only the cold-start segment of wk2 was committed by A');
    assert.equal(bFirst.first, aRows[0].last + 1, 'the rolled-back range was allocated again, to B');
  });
});
