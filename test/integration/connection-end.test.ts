// suite: single — ends connections to a single Redis from inside (a cluster's node connections are the cluster client's own)
// A connection that ioredis leaves in `end` (its final state) without idmint closing it is
// opened again by the connection supervisor (src/store/redis/supervisor.ts), whatever its
// role: the request path's, BullMQ's queue and worker connections, the announcements'
// subscriber, and the blocking connections BullMQ duplicates for its workers. Each is ended
// for real through the test-mode debug route (its socket dropped, its connector disconnected
// while it reconnects, as ioredis's failover detector does); then the restart is counted, the
// node is ready again, and it serves IDs that need refills (queue, worker and blocking
// connections at work) and sees a tag change announced by another node (the subscriber). A
// worker whose blocking connection failed under it fetches its next job soon after the
// connection is back, not after BullMQ's default 15 s pause (runRetryDelay).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { REFILL_JOB, REFILL_QUEUE, type RefillJobData } from '../../src/jobs/refill.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const ROLES = ['command', 'queue', 'worker', 'subscriber', 'worker-blocking'];

const restarts = async (url: string, role: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^idmint_connection_restarts_total\\{server="default",role="${role}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return m ? Number(m[1]) : 0;
};

describe('a Redis connection ended from inside', () => {
  const names = testNames();
  const nodes: LocalNode[] = [];

  before(async () => {
    for (let i = 0; i < 2; i++)
      nodes.push(await startLocalNode(names, { TEST_MODE: '1', NODE_ID: `end-node-${i}`, LOG_LEVEL: 'error' }));
    await createTag(nodes[0].url, { tag: 'e', mode: 'segment', step: 100, min_step: 100, max_step: 100 });
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names);
  });

  for (const role of ROLES) {
    it(`${role}: is opened again, counted, and the node serves as before`, { timeout: 60000 }, async () => {
      const [n, other] = nodes;
      const before = await restarts(n.url, role);
      const res = await fetch(`${n.url}/v1/debug/redis/end`, {
        method: 'POST',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify({ role }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      assert.deepEqual(await res.json(), { role, ended: 1 });
      await waitFor(
        `the ${role} connection reopened and counted`,
        async () => (await restarts(n.url, role)) > before,
        15000,
      );
      await waitFor('the node ready', async () => (await fetch(`${n.url}/readyz`)).status === 200, 15000);
      // Three segments' worth: refills have to run (queue, worker, blocking connection).
      let got = 0;
      await waitFor(
        'IDs across refills',
        async () => {
          const r = await fetch(`${n.url}/v1/ids/e?count=50`);
          if (r.status === 200) got += ((await r.json()) as { ids: string[] }).ids.length;
          return got >= 300;
        },
        30000,
        0,
      );
      // A change made on the other node is announced to this one (subscriber).
      const step = 100 + ROLES.indexOf(role) + 1;
      const patch = await fetch(`${other.url}/v1/admin/tags/e`, {
        method: 'PATCH',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify({ max_step: step * 10 }),
      });
      assert.equal(patch.status, 200, await patch.clone().text());
      await waitFor(
        'the change seen by this node',
        async () =>
          ((await (await fetch(`${n.url}/v1/admin/tags/e`, { headers: adminHeaders })).json()) as { max_step?: number })
            .max_step ===
          step * 10,
        15000,
      );
    });
  }
});

describe('a node whose worker connection ended', () => {
  const names = testNames();
  let node: LocalNode | undefined;
  before(async () => {
    node = await startLocalNode(names, { TEST_MODE: '1', LOG_LEVEL: 'error' });
  });
  after(async () => {
    await node?.close().catch(() => undefined);
    await cleanup(names);
  });

  it('runs a refill job soon after its worker connection failed under it, not after 15 s', {
    timeout: 60000,
  }, async () => {
    const n = node!;
    const queue = new Queue(REFILL_QUEUE, { connection: n.rt.redis, prefix: n.rt.keys.queuePrefix() });
    try {
      const res = await fetch(`${n.url}/v1/debug/redis/end`, {
        method: 'POST',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'worker' }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      // At once, while the connection is ended: the worker's blocking wait returns with the
      // job and its fetch of the job fails on the ended connection. A job of a tag that does
      // not exist ends at once ('tag-gone').
      const t0 = performance.now();
      const job = await queue.add(
        REFILL_JOB,
        { tag: 'no-such-tag', epoch: 1, shard: 0, gen: '0', seg: 0, urgent: true } satisfies RefillJobData,
        {
          jobId: 'after-end',
        },
      );
      await waitFor('the job done', async () => (await job.isCompleted()) || (await job.isFailed()), 30000);
      const took = performance.now() - t0;
      assert.ok(took < 8000, `the job ran after ${took.toFixed(0)} ms`);
    } finally {
      await queue.close();
    }
  });
});
