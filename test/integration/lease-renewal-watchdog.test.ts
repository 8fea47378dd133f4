// suite: cluster
// Lease renewals whose BullMQ chain breaks come back by themselves. Each renewal job, when a
// worker takes it, adds the next one; the adversary removes that next job from the lease
// queue, as a Redis failed over to a replica that had not received it would (BullMQ also drops
// it when adding it fails with a reply error). Without the renewal watchdog nothing renews the
// leases again: they lapse one lease TTL later and the process's heartbeat goes with them. With
// it, renewals start again within a renewal interval and a half and the leases stay valid. The
// same when the whole queue is gone (a janitor that took the process for dead removes it).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { leaseQueueName } from '../../src/jobs/lease-renewal.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';
import { LEASE_ENV, workers, type Workers } from '../helpers/snowflake-lease-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const NODE_ID = 'wd-a';

describe('lease renewals whose job chain broke', () => {
  const names = testNames();
  let node: LocalNode;
  let redis: RedisClient;

  before(async () => {
    redis = testRedis();
    node = await startLocalNode(names, { ...LEASE_ENV, NODE_ID });
    await createTag(node.url, { tag: 'wd_sf', mode: 'snowflake' });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    redis?.disconnect();
    await cleanup(names);
  });

  /** Removes every delayed job of the process's lease queue: the next renewal is never taken. */
  async function dropNextRenewal(): Promise<number> {
    const queue = `${new Keys(names.prefix).queuePrefix()}:${leaseQueueName(NODE_ID)}`;
    const ids = await redis.zrange(`${queue}:delayed`, '0', '-1');
    for (const id of ids) {
      await redis.zrem(`${queue}:delayed`, id);
      await redis.del(`${queue}:${id}`);
    }
    return ids.length;
  }

  /** Three renewals after `since`, one of them scheduled again; then every lease valid, none lost. */
  async function healedSince(since: Workers['this_node']['lease_events'], what: string): Promise<void> {
    const healed = await waitFor(
      `three renewals after ${what}`,
      async () => {
        const w = await workers(node.url);
        return w.this_node.lease_events.renewed >= since.renewed + 3 && w;
      },
      15000,
    );
    const events = healed.this_node.lease_events;
    assert.ok(events.rescheduled > since.rescheduled, 'renewals came back without being scheduled again');
    assert.equal(events.lost, since.lost, 'a lease was lost');
    assert.ok(
      healed.this_node.leases.every((l) => l.valid),
      `a lease is not valid: ${JSON.stringify(healed.this_node.leases)}`,
    );
    assert.equal((await fetch(`${node.url}/v1/id/wd_sf`)).status, 200);
  }

  it('starts again by itself and keeps the leases valid', { timeout: 60000 }, async () => {
    assert.equal((await fetch(`${node.url}/v1/id/wd_sf`)).status, 200);
    const first = await waitFor(
      'a first scheduled renewal',
      async () => {
        const w = await workers(node.url);
        return w.this_node.lease_events.renewed >= 1 && w;
      },
      15000,
    );
    // The next job is added when a renewal is taken: remove it right after one was.
    await waitFor(
      'a renewal taken after the first, and its next job',
      async () => (await workers(node.url)).this_node.lease_events.renewed > first.this_node.lease_events.renewed,
      15000,
      10,
    );
    assert.ok((await dropNextRenewal()) >= 1, 'no delayed renewal job to remove');
    await healedSince((await workers(node.url)).this_node.lease_events, 'the chain broke');
  });

  it('comes back after its whole queue was removed, as a janitor that took the process for dead removes it', {
    timeout: 60000,
  }, async () => {
    const since = (await workers(node.url)).this_node.lease_events;
    const queue = new Queue(leaseQueueName(NODE_ID), {
      connection: redis,
      prefix: new Keys(names.prefix).queuePrefix(),
    });
    try {
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
    await healedSince(since, 'the queue was removed');
  });
});
