// suite: cluster
// A BullMQ worker's graceful close waits for the job it is running and for its blocking
// connection to end, with no bound of its own. Here a job that never finishes makes it hang
// for certain: closeWorker (src/consumer/worker-close.ts) gives it up after its bound, stops
// the job's lock renewals and drops the blocking connection, so a node's shutdown keeps its
// SHUTDOWN_TIMEOUT_MS. The job is left to its lock, as a killed process leaves it. The same
// holds on every topology: the default Redis of the run (single, or the cluster of
// test:cluster) and a Sentinel group's master, whose connections end through their connector.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Queue, Worker } from 'bullmq';
import { closeWorker } from '../../src/consumer/worker-close.js';
import { createDefaultRedis } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import type { Config } from '../../src/config.js';
import { cleanup, skipOnCluster, testConfig, testNames } from '../../tools/env.js';
import { waitFor } from '../helpers/fault-load.js';
import { masterAddr, sentinelScript } from '../helpers/sentinel-group.js';

/** A worker whose job never finishes, closed with closeWorker: given up after its bound. */
async function closeHanging(config: Config, prefix: string, setRelease: (r: () => void) => void): Promise<void> {
  const queueConn = createDefaultRedis(config, 'queue');
  const workerConn = createDefaultRedis(config, 'worker');
  try {
    const queue = new Queue('hang', { connection: queueConn, prefix });
    const hanging = new Promise<void>((resolve) => setRelease(resolve));
    let started = false;
    const worker = new Worker(
      'hang',
      async () => {
        started = true;
        await hanging;
      },
      { connection: workerConn, prefix, lockDuration: 2000 },
    );
    worker.on('error', () => undefined);
    await queue.add('job', {}, { jobId: 'stuck' });
    await waitFor('the job to run', () => started, 20000);

    const GRACEFUL_MS = 1000;
    const t0 = performance.now();
    // Without the bound this never settles while the job hangs: the wait below times out.
    const outcome = await Promise.race([
      closeWorker(worker, 2000, GRACEFUL_MS),
      new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 15000).unref()),
    ]);
    const took = performance.now() - t0;
    assert.equal(outcome, 'dropped', `closeWorker did not settle (${took.toFixed(0)} ms)`);
    assert.ok(took < 2000 + GRACEFUL_MS + 1000, `closeWorker took ${took.toFixed(0)} ms`);
    // Dropped: its blocking connection was disconnected (a cluster's stays 'disconnecting'
    // while its node connections close).
    const blocking = await worker.backend.blockingClient;
    assert.ok(
      blocking === undefined || ['end', 'close', 'disconnecting'].includes(blocking.status),
      `blocking connection ${blocking?.status}`,
    );
    // The lock is no longer renewed: it expires, and the stalled check of another worker
    // would run the job again.
    await waitFor(
      'the job lock to expire',
      async () => (await queueConn.exists(`${prefix}:hang:stuck:lock`)) === 0,
      10000,
    );
    assert.equal(await queue.getJobState('stuck'), 'active', 'the job is left as it was');
    await queue.close();
  } finally {
    queueConn.disconnect();
    workerConn.disconnect();
  }
}

describe('closing a worker whose graceful close hangs', () => {
  const names = testNames();
  let release: () => void = () => undefined;
  after(async () => {
    release();
    await cleanup(names);
  });

  it('gives up the graceful close after its bound and drops the worker, its job left to its lock', {
    timeout: 60000,
  }, async () => {
    await closeHanging(testConfig(names), new Keys(names.prefix).queuePrefix(), (r) => (release = r));
  });
});

describe('closing a worker whose graceful close hangs, on a Sentinel group', {
  skip: skipOnCluster('it starts a Sentinel group of its own'),
}, () => {
  const BASE = Number(process.env.CLOSE_SENTINEL_BASE_PORT ?? 7481);
  const names = testNames();
  const script = sentinelScript(BASE);
  let seeds = '';
  let release: () => void = () => undefined;
  after(async () => {
    release();
    const sentinel = Number(seeds.split(',')[0]?.split(':')[1]);
    const master = sentinel ? await masterAddr(sentinel).catch(() => '') : '';
    if (master) await cleanup(names, `redis://${master}`).catch(() => undefined);
    script('stop');
  });

  it('gives up the graceful close after its bound there too', { timeout: 90000 }, async () => {
    seeds = script('start').split('\n').pop()!;
    const config = testConfig(names, {
      REDIS_URL: 'redis://unused:1/0',
      REDIS_SENTINELS: seeds,
      REDIS_SENTINEL_MASTER: 'idmint',
    });
    await closeHanging(config, new Keys(names.prefix).queuePrefix(), (r) => (release = r));
  });
});
