// suite: single — a private redis-server as a named Redis behind a fault proxy
// A refill that failed while its Redis was silent waits out a retry backoff that grows to 5 s.
// Once the server answers again, a request waiting on the dry tag must not wait that backoff
// out: its urgent refill request pulls the backed-off job forward, so the tag is served again
// within a command timeout of the link coming back, not seconds later.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Job } from 'bullmq';
import { cleanup, testNames } from '../../tools/env.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { REFILL_RESCHEDULE_MS, refillBackoffMs, type RefillJobData } from '../../src/jobs/refill.js';
import { RefillProducer } from '../../src/producer/refill-producer.js';
import { fetchRecorded, now, waitFor } from '../helpers/fault-load.js';

const COMMAND_TIMEOUT_MS = 300;
const REFILL_WAIT_MS = 1000;
/** Failed attempts after which the job's next try is 5 s away (the backoff's cap). */
const ATTEMPTS_AT_CAP = 7;

describe('a refill backed off while its Redis was silent', () => {
  const names = testNames();
  let redisB: RedisServer;
  let pb: FaultProxy;
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    redisB = await RedisServer.start();
    pb = await FaultProxy.start(redisB.port, { seed: 5 });
    node = await startLocalNode(names, {
      REDIS_URLS: `b=${pb.url}`,
      REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS),
      REFILL_WAIT_MS: String(REFILL_WAIT_MS),
      LOG_LEVEL: 'fatal',
    });
  });

  after(async () => {
    pb?.restore();
    await node?.close().catch(() => undefined);
    await pb?.close().catch(() => undefined);
    await cleanup(names).catch(() => undefined);
    await redisB?.stop();
  });

  const queue = () => node.rt.producer.queue;
  const idle = async () =>
    (await queue().getJobCounts('waiting', 'active', 'delayed', 'prioritized')) as Record<string, number>;

  it('is pulled forward by a waiting request once the link is back', { timeout: 60000 }, async (t) => {
    assert.equal(refillBackoffMs(ATTEMPTS_AT_CAP), 5000, 'the backoff this test relies on changed');
    await createTag(node.url, { tag: 'r', mode: 'segment', step: 10, min_step: 10, max_step: 10, redis: 'b' });
    assert.deepEqual(await fetchIds(node.url, 'r', 1), [1n]);
    await waitFor('refills done', async () => Object.values(await idle()).every((n) => n === 0), 5000, 20);

    // Refills stop, the tag runs dry (its refill job queued, not run), then the link to b goes
    // silent and the refill runs into it, again and again, until its backoff is at the cap.
    const worker = node.rt.refillWorker;
    assert.ok(worker, 'this node runs no refill worker');
    await worker.pause();
    const st = await node.rt.segments.stats({
      tag: 'r',
      epoch: (await node.rt.registry.get('r'))?.epoch ?? 0,
      shard: 0,
      redis: 'b',
    });
    const left = (st.end ?? 0) - (st.cur ?? 1) + 1 + (st.next ? st.next[1] - st.next[0] + 1 : 0);
    if (left > 0) await fetchIds(node.url, 'r', left);
    const dry = await fetchRecorded('dry', node.url, 'r', 1, 5000);
    assert.equal(dry.status, 503, `the tag is not dry: ${dry.status} ${dry.detail ?? ''}`);
    pb.blackhole();
    worker.resume();
    let job: Job | undefined;
    await waitFor(
      `the refill failing ${ATTEMPTS_AT_CAP} times`,
      async () => {
        [job] = await queue().getJobs(['delayed']);
        return job !== undefined && job.attemptsMade >= ATTEMPTS_AT_CAP;
      },
      30000,
      20,
    );
    assert.ok(job);
    const failedAt = job.finishedOn ?? job.processedOn ?? Date.now();

    pb.restore();
    const t1 = now();
    await waitFor(
      'r served again',
      async () => {
        const r = await fetchRecorded('probe', node.url, 'r', 1, 5000);
        if (r.ids === undefined) throw new Error(`${r.status} ${r.code ?? ''} ${r.detail ?? ''}`);
        return true;
      },
      15000,
      50,
    );
    const took = now() - t1;
    t.diagnostic(`served again ${took.toFixed(0)} ms after the link came back`);
    // The link comes back within a reconnect (retries at most 1 s apart, each ready check
    // bounded by the command timeout); then one refill. The backed-off job alone would have
    // waited until failedAt + 5 s.
    const bound = 1000 + 4 * COMMAND_TIMEOUT_MS + REFILL_WAIT_MS;
    assert.ok(
      took <= bound,
      `r was served again ${took.toFixed(0)} ms after the link came back (bound ${bound} ms); the job's next try was due ${failedAt + 5000 - Date.now() + took} ms after it`,
    );
  });

  it('pulls one job forward at most every REFILL_RESCHEDULE_MS per process, and only for urgent requests', async () => {
    let clock = 1_000_000;
    const producer = new RefillProducer(node.rt.redis, `${names.prefix}:resched`, undefined, () => clock);
    const asked: boolean[] = [];
    producer.queue.add = (async (
      _name: string,
      _d: RefillJobData,
      opts?: { deduplication?: { reschedule?: boolean } },
    ) => {
      asked.push(opts?.deduplication?.reschedule === true);
    }) as never;
    const job = (seg: number, urgent: boolean): RefillJobData => ({
      tag: 'x',
      epoch: 1,
      shard: 0,
      gen: 'g',
      seg,
      urgent,
    });
    try {
      await producer.request(job(1, false));
      await producer.request(job(1, true));
      await producer.request(job(1, true));
      await producer.request(job(2, true));
      clock += REFILL_RESCHEDULE_MS - 1;
      await producer.request(job(1, true));
      clock += 1;
      await producer.request(job(1, true));
      assert.deepEqual(asked, [false, true, false, true, false, true]);
    } finally {
      await producer.close();
    }
  });
});
