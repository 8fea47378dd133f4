// suite: cluster
// The shared janitor's schedule comes back by itself after its chain broke. Each janitor run,
// when a worker takes it, adds the next; the adversary removes the next run (and any waiting
// one) from the janitor's queue in one script, as a Redis failed over to a replica that had not
// received it would, while keeping the scheduler's record. Seen from outside: a dead node's
// lease queue planted after the break is still removed, and the node counts the lease event
// `janitor_rescheduled`. Without the janitor watchdog nothing runs the janitor again and the
// planted queue stays for good.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { JANITOR_QUEUE } from '../../src/jobs/janitor.js';
import { leaseQueueName, RENEW_JOB, RENEW_SCHEDULER } from '../../src/jobs/lease-renewal.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';
import { workers } from '../helpers/snowflake-lease-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const EVERY_MS = 1000;

/** Removes every delayed and waiting job of a queue and their hashes, in one script. */
const DROP_PENDING = `
local n = 0
for _, list in ipairs({KEYS[1], KEYS[2]}) do
  local ids = redis.call('TYPE', list).ok == 'zset' and redis.call('ZRANGE', list, 0, -1)
    or redis.call('LRANGE', list, 0, -1)
  for _, id in ipairs(ids) do
    redis.call('DEL', ARGV[1] .. id)
    n = n + 1
  end
  redis.call('DEL', list)
end
return n`;

describe("the janitor's schedule whose chain broke", () => {
  const names = testNames();
  const prefix = new Keys(names.prefix).queuePrefix();
  let node: LocalNode;
  let redis: RedisClient;

  before(async () => {
    redis = testRedis();
    node = await startLocalNode(names, { JANITOR_EVERY_MS: String(EVERY_MS) });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    redis?.disconnect();
    await cleanup(names);
  });

  const meta = (nodeId: string) => `${prefix}:${leaseQueueName(nodeId)}:meta`;

  /** A lease queue of a node with no heartbeat, as a killed process leaves it. */
  async function plantDeadQueue(nodeId: string): Promise<void> {
    const queue = new Queue(leaseQueueName(nodeId), { connection: redis, prefix });
    try {
      await queue.upsertJobScheduler(RENEW_SCHEDULER, { every: 60_000 }, { name: RENEW_JOB });
    } finally {
      await queue.close();
    }
    assert.equal(await redis.exists(meta(nodeId)), 1, 'the planted queue has its meta key');
  }

  const removedBy = (nodeId: string, what: string) =>
    waitFor(what, async () => (await redis.exists(meta(nodeId))) === 0, 20_000);

  it('runs again and removes a dead node queue planted after the break', { timeout: 60_000 }, async () => {
    await plantDeadQueue('ghost-before');
    await removedBy('ghost-before', 'the janitor removing a dead node queue before the break');

    const before = (await workers(node.url)).this_node.lease_events.janitor_rescheduled;
    const queue = `${prefix}:${JANITOR_QUEUE}`;
    const dropped = Number(await redis.eval(DROP_PENDING, 2, `${queue}:delayed`, `${queue}:wait`, `${queue}:`));
    assert.ok(dropped >= 1, 'no pending janitor run to remove');

    await plantDeadQueue('ghost-after');
    await removedBy('ghost-after', 'the janitor removing a dead node queue planted after the break');
    const after = (await workers(node.url)).this_node.lease_events.janitor_rescheduled;
    assert.ok(after > before, `the schedule came back without being scheduled again (${before} -> ${after})`);
  });
});
