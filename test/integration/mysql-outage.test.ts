// suite: single — MySQL cut off through a proxy; the Redis side runs on the cluster in api.test.ts
// Segment mode while MySQL is cut off: the node reaches MySQL through a TCP proxy that is
// blocked mid-load. IDs keep flowing from the segments already in Redis, the refill job
// fails and is retried with backoff (no segment is allocated meanwhile), and once MySQL is
// back the same job allocates and installs, with no duplicate and no step backwards. While
// MySQL is away, requests to a warm tag do not wait on it. A tag that runs dry meanwhile
// answers 503 UNAVAILABLE with Retry-After within REFILL_WAIT_MS, and serves again after
// MySQL returns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { refillBackoffMs } from '../../src/jobs/refill.js';
import { poolOptions } from '../../src/store/mysql/pool.js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';
import {
  Load,
  answered,
  assertClientOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  counter,
  fetchRecorded,
  maxId,
  now,
  waitFor,
  type Rec,
} from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const REFILL_WAIT_MS = 1000;
const BUF_STEP = 100000;
/** Small prefetch for `buf`, so one batch reaches the next segment's prefetch point. */
const BUF_PREFETCH = 0.05;
const DRY_STEP = 100;

describe('segment mode while MySQL is unreachable', () => {
  const names = testNames();
  let proxy: TcpProxy;
  let node: LocalNode;
  let direct: mysql.Pool;
  const failures: { at: number; tag: string; jobId?: string; attempts: number; err: string }[] = [];
  const starts: { at: number; tag: string; jobId?: string; attempts: number }[] = [];
  const completions: { at: number; tag: string; jobId?: string; result: string }[] = [];
  // When the worker decided each retry's backoff: it schedules the retry right after, while the
  // 'failed' event comes a Redis round trip later (later still on a busy machine).
  const backoffs: { at: number; jobId?: string; attempts: number }[] = [];
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
    }));

  before(async () => {
    proxy = await TcpProxy.start(3306);
    node = await startLocalNode(names, {
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/x`),
      REFILL_WAIT_MS: String(REFILL_WAIT_MS),
      LOG_LEVEL: 'error',
      NODE_ID: 'mysql-outage-node',
    });
    direct = mysql.createPool(poolOptions(names.mysqlUrl));
    const settings = node.rt.refillWorker!.opts.settings;
    const strategy = settings?.backoffStrategy;
    assert.ok(settings && strategy, 'the refill worker has its own backoff strategy');
    settings.backoffStrategy = (attemptsMade, type, err, job) => {
      backoffs.push({ at: now(), jobId: job?.id, attempts: attemptsMade });
      return strategy(attemptsMade, type, err, job);
    };
    node.rt.refillWorker!.on('failed', (job, err) => {
      failures.push({
        at: now(),
        tag: job?.data.tag ?? '?',
        jobId: job?.id,
        attempts: job?.attemptsMade ?? -1,
        err: err.message,
      });
    });
    node.rt.refillWorker!.on('active', (job) => {
      starts.push({ at: now(), tag: job.data.tag, jobId: job.id, attempts: job.attemptsMade });
    });
    node.rt.refillWorker!.on('completed', (job, out) => {
      completions.push({ at: now(), tag: job.data.tag, jobId: job.id, result: out.result });
    });
    // Fixed step sizes: `buf` holds far more than the test consumes while MySQL is away,
    // `dry` runs out within a few requests.
    await createTag(node.url, {
      tag: 'buf',
      step: BUF_STEP,
      min_step: BUF_STEP,
      max_step: BUF_STEP,
      prefetch: BUF_PREFETCH,
    });
    await createTag(node.url, { tag: 'dry', step: DRY_STEP, min_step: DRY_STEP, max_step: DRY_STEP });
    // Warm both: current segment and the prefetched next one are in Redis.
    for (const tag of ['buf', 'dry']) {
      await fetchIds(node.url, tag, 1);
      const step = tag === 'buf' ? BUF_STEP : DRY_STEP;
      for (let n = Math.ceil(step * 0.25); n > 0; n -= 10000) await fetchIds(node.url, tag, Math.min(n, 10000));
      await waitFor(`${tag} has a next segment`, async () => (await node.rt.segments.stats(ref(tag))).next, 5000);
    }
  });

  after(async () => {
    proxy?.unblock();
    await node?.close().catch(() => undefined);
    await direct?.end().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    await cleanup(names);
  });

  // What the outage test saw, also checked by the next test.
  const outage = { recs: [] as Rec[], blockAt: 0, unblockAt: 0 };

  it('keeps serving from the buffered segments, retries the refill with backoff, and resumes after MySQL returns', {
    timeout: 45000,
  }, async () => {
    // Bring the current segment close to its end while MySQL is still there; the next one
    // is already in Redis.
    const pre: Rec[] = [];
    const s0 = await node.rt.segments.stats(ref('buf'));
    assert.ok(s0.next && s0.cur !== undefined && s0.end !== undefined, 'current and next segment present');
    for (let n = s0.end - s0.cur + 1 - 3000; n > 0; n -= 10000)
      pre.push(await fetchRecorded('pre', node.url, 'buf', Math.min(n, 10000)));

    const load = new Load(
      Array.from({ length: 4 }, (_, i) => ({
        name: `c${i}`,
        tag: 'buf',
        url: () => node.url,
        count: counter(i + 7, 10),
        pauseOnSuccess: 1,
      })),
    );
    const jump: Rec[] = [];
    let rowsAtBlock: { first: number; last: number }[];
    let rowsWhileBlocked: { first: number; last: number }[];
    try {
      await sleep(300);
      rowsAtBlock = await segmentRows('buf');
      proxy.block();
      outage.blockAt = now();

      // Move into the next segment and past its prefetch point, so a refill is wanted while
      // MySQL is unreachable.
      const s = await node.rt.segments.stats(ref('buf'));
      assert.ok(s.next && s.cur !== undefined && s.end !== undefined, 'current and next segment present at the cut');
      for (let n = s.end - s.cur + 1 + Math.ceil(BUF_STEP * BUF_PREFETCH) + 100; n > 0; n -= 10000) {
        const r = await fetchRecorded('jump', node.url, 'buf', Math.min(n, 10000));
        jump.push(r);
        assert.ok(r.ids, `jump request served while MySQL is away: ${r.status} ${r.code ?? r.detail}`);
      }
      const promoted = await node.rt.segments.stats(ref('buf'));
      assert.equal(promoted.next, undefined, 'the next segment was promoted to current, and no new one arrived');

      // The refill fails (MySQL unreachable) and is retried: at least two failed attempts.
      await waitFor(
        'two failed refill attempts',
        () => failures.filter((f) => f.tag === 'buf' && f.at > outage.blockAt).length >= 2,
        15000,
      );
      await sleep(Math.max(0, 7000 - (now() - outage.blockAt)));
      rowsWhileBlocked = await segmentRows('buf');

      proxy.unblock();
      outage.unblockAt = now();
      await waitFor(
        'a refill completes after MySQL returns',
        () => completions.some((c) => c.tag === 'buf' && c.at > outage.unblockAt),
        12000,
      );
      await waitFor('buf has a next segment again', async () => (await node.rt.segments.stats(ref('buf'))).next, 2000);
      await sleep(500);
    } finally {
      proxy.unblock();
      await load.stop();
    }

    const { blockAt, unblockAt } = outage;
    const recs = [...pre, ...load.records, ...jump];
    outage.recs = recs;
    const during = answered(recs).filter((r) => r.sent >= blockAt && r.done <= unblockAt);
    const fails = failures.filter((f) => f.tag === 'buf' && f.at > blockAt && f.at <= unblockAt);
    console.log(
      JSON.stringify({
        requests: recs.length,
        servedDuringOutage: during.length,
        attempts: starts
          .filter((a) => a.tag === 'buf' && a.at > blockAt)
          .map((a) => ({ started_ms: Math.round(a.at - blockAt), attempt: a.attempts + 1 })),
        failed: fails.map((f) => ({
          at_ms: Math.round(f.at - blockAt),
          attemptsMade: f.attempts,
          err: f.err.slice(0, 60),
        })),
      }),
    );

    // Every request succeeded, also during the outage.
    assertOnlyCleanUnavailable(recs, { what: 'buffered tag' });
    assert.equal(recs.filter((r) => !r.ids).length, 0, 'no request failed: the buffered segments covered the outage');
    assert.ok(during.length >= 10, `${during.length} requests served while MySQL was away`);

    // MySQL really was out of reach: no segment was allocated while blocked.
    assert.deepEqual(rowsWhileBlocked, rowsAtBlock, 'no segment allocated while MySQL was cut off');
    // One refill job, failing and retried, each retry started no sooner than its backoff after
    // the worker decided it.
    assert.ok(fails.length >= 2, `${fails.length} failed attempts`);
    const jobIds = new Set(fails.map((f) => f.jobId));
    assert.equal(jobIds.size, 1, 'one refill job, retried');
    const jobId = [...jobIds][0];
    for (let i = 1; i < fails.length; i++)
      assert.equal(fails[i].attempts, fails[i - 1].attempts + 1, 'attempts count up');
    for (const f of fails) {
      const next = starts.find((a) => a.jobId === jobId && a.attempts === f.attempts);
      if (!next) continue;
      // From when the worker decided the backoff (the last decision for the job before this
      // failure's event), not from the event, which comes later.
      const decided = backoffs.filter((b) => b.jobId === jobId && b.at <= f.at).at(-1);
      assert.ok(decided, `the worker decided a backoff before attempt ${f.attempts} failed`);
      const waited = next.at - decided.at;
      assert.ok(
        waited >= refillBackoffMs(f.attempts) - 15,
        `retry after ${Math.round(waited)} ms, backoff for attempt ${f.attempts} is ${refillBackoffMs(f.attempts)} ms`,
      );
    }
    // After MySQL returned, that same job allocated and installed the next segment.
    const done = completions.filter((c) => c.tag === 'buf' && c.at > unblockAt);
    assert.ok(
      done.some((c) => c.jobId === jobId && (c.result === 'next' || c.result === 'current')),
      `the retried job completed: ${JSON.stringify(done)}`,
    );
    const rowsAfter = await segmentRows('buf');
    assert.ok(rowsAfter.length > rowsAtBlock.length, 'a segment was allocated after MySQL returned');
    for (let i = 1; i < rowsAfter.length; i++)
      assert.ok(rowsAfter[i].first > rowsAfter[i - 1].last, 'segments are disjoint and ascending');

    // The promises over every answer.
    const ids = assertNoDuplicates(recs, 'buffered tag');
    assert.ok(ids > BUF_STEP / 2, `${ids} IDs checked`);
    assertClientOrder(load.records, 'buffered tag');
    assert.ok(assertRealTimeOrder(recs, 'buffered tag') > 10, 'real-time order had answers to compare');
    // IDs continued after the outage, above everything answered during it.
    const afterUnblock = answered(recs).filter((r) => r.sent > unblockAt);
    assert.ok(afterUnblock.length > 0, 'requests served after MySQL returned');
    assert.ok(afterUnblock[0].ids[0] > maxId(during), 'IDs continue upwards after the outage');
  });

  it('answers buffered requests without waiting on the unreachable MySQL', () => {
    // Nothing on the path of a request to a warm tag needs MySQL: IDs come from Redis, and
    // the tag definition is the one already known. A request must not wait for MySQL's
    // connect timeout.
    const { recs, blockAt, unblockAt } = outage;
    assert.ok(recs.length > 0 && unblockAt > blockAt, 'the outage test ran');
    const during = answered(recs).filter((r) => r.sent >= blockAt + 1500 && r.done <= unblockAt);
    const latencies = during.map((r) => r.done - r.sent).sort((a, b) => a - b);
    const slow = latencies.filter((l) => l > 1000).length;
    console.log(
      JSON.stringify({
        served: during.length,
        p50: Math.round(latencies[latencies.length >> 1] ?? 0),
        max: Math.round(latencies[latencies.length - 1] ?? 0),
        over1s: slow,
      }),
    );
    assert.equal(
      slow,
      0,
      `${slow} of ${during.length} requests to a warm tag took over 1 s while MySQL was unreachable (max ${Math.round(latencies[latencies.length - 1] ?? 0)} ms)`,
    );
    assert.ok(during.length >= 200, `only ${during.length} requests served in ~5 s of MySQL outage by 4 clients`);
  });

  it('a tag that runs dry while MySQL is away answers 503 UNAVAILABLE with Retry-After within REFILL_WAIT_MS, then recovers', {
    timeout: 30000,
  }, async () => {
    const recs: Rec[] = [];
    const first = await fetchRecorded('pre', node.url, 'dry', 1);
    assert.ok(first.ids, 'dry tag serves before the cut');
    recs.push(first);
    proxy.block();
    const dryAnswers: Rec[] = [];
    let served = 0;
    try {
      // Use up both buffered segments (at most 2 × DRY_STEP IDs), then ask three more times.
      for (let i = 0; i < 20 && dryAnswers.length < 3; i++) {
        const r = await fetchRecorded('drain', node.url, 'dry', 30);
        recs.push(r);
        if (r.ids) served += r.count;
        else dryAnswers.push(r);
      }
    } finally {
      proxy.unblock();
    }
    const unblockAt = now();
    const back = await waitFor(
      'dry tag serves again',
      async () => {
        const r = await fetchRecorded('retry', node.url, 'dry', 5);
        recs.push(r);
        return r.ids ? r : undefined;
      },
      15000,
      100,
    );
    const took = dryAnswers.map((r) => Math.round(r.done - r.sent));
    console.log(
      JSON.stringify({
        servedBeforeDry: served,
        dryAnswerMs: took,
        recoveredAfterMs: Math.round(back.done - unblockAt),
      }),
    );

    assert.ok(served > 0 && served <= 2 * DRY_STEP, `${served} IDs served from the buffer before running dry`);
    assert.equal(dryAnswers.length, 3, 'the tag ran dry while MySQL was away');
    for (const r of dryAnswers) {
      assert.equal(r.status, 503);
      assert.equal(r.code, 'UNAVAILABLE');
      assert.match(r.retryAfter ?? '', /^\d+$/, 'Retry-After header');
    }
    assertOnlyCleanUnavailable(recs, { what: 'dry tag' });
    assertNoDuplicates(recs, 'dry tag');
    assertClientOrder(
      recs.map((r) => ({ ...r, client: 'one' })),
      'dry tag',
    );
    assert.ok(back.ids![0] > maxId(recs.filter((r) => r !== back)), 'IDs continue upwards after recovery');
    // The wait for a refill is bounded by REFILL_WAIT_MS (plus a little scheduling slack).
    for (const t of took)
      assert.ok(
        t <= REFILL_WAIT_MS + 500,
        `503 after ${t} ms; REFILL_WAIT_MS is ${REFILL_WAIT_MS} (all: ${took.join(', ')} ms)`,
      );
  });
});
