// suite: cluster
// idmint on a Redis Cluster (REDIS_CLUSTER_NODES, `npm run test:cluster` starts a local
// 3-master cluster with scripts/redis-cluster.sh): two processes serve segment tags whose
// keys lie on each of the three masters and a snowflake tag, with refills through BullMQ and
// lease renewals, and never hand out an ID twice; tag changes reach the other process over
// pub/sub; deleting a tag finds its keys with SCAN on the master that holds them; the lease
// janitor finds dead nodes' queues; /readyz reports the cluster. Skipped without a cluster.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis, type Cluster } from 'ioredis';
import { sweepDeadLeaseQueues } from '../../src/consumer/janitor-worker.js';
import { JANITOR_QUEUE } from '../../src/jobs/janitor.js';
import { leaseQueueName } from '../../src/jobs/lease-renewal.js';
import { REFILL_QUEUE } from '../../src/jobs/refill.js';
import { Keys } from '../../src/store/redis/keys.js';
import { checkRedis, createCluster } from '../../src/store/redis/connection.js';
import { LeaseStore } from '../../src/store/redis/leases.js';
import { ADMIN_TOKEN, ON_CLUSTER, cleanup, testNames, testRedis } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';

const TTL = 3000;
const LEASE_ENV = { LEASE_TTL_MS: String(TTL), LEASE_MARGIN_MS: '500' };
const STEP = 100;

const SKIP = ON_CLUSTER
  ? false
  : 'REDIS_CLUSTER_NODES is not set: these tests need a Redis Cluster (npm run test:cluster starts one)';

interface Workers {
  spaces: { worker_bits: number; leases: { worker_id: number; owner: string; expires_in_ms: number }[] }[];
  this_node: {
    leases: { worker_bits: number; worker_id: number; valid: boolean }[];
    lease_events: { renewed: number; lost: number };
  };
}

async function workers(url: string): Promise<Workers> {
  const r = await fetch(`${url}/v1/admin/workers`, { headers: adminHeaders, signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 200, `admin workers: ${r.status}`);
  return (await r.json()) as Workers;
}

/** A process's last warnings and errors (pino levels 40 and up), for a failure's message. */
const troubleOf = (n: ChildNode): string =>
  n.output
    .filter((line) => /"level":(4|5|6)0/.test(line))
    .slice(-15)
    .join('\n');

/** Sequential batches from one process; each later batch lies above the one before. */
async function drive(url: string, tag: string, rounds: number, count: number): Promise<bigint[]> {
  const out: bigint[] = [];
  for (let i = 0; i < rounds; i++) {
    const ids = await fetchIds(url, tag, count);
    assert.equal(ids.length, count);
    if (out.length) assert.ok(ids[0] > out[out.length - 1], `${tag}: ${ids[0]} after ${out[out.length - 1]}`);
    out.push(...ids);
  }
  return out;
}

describe('idmint on a Redis Cluster', { skip: SKIP }, () => {
  const names = testNames();
  const keys = new Keys(names.prefix);
  let cluster: Cluster;
  /** Master port of every slot, from CLUSTER SLOTS. */
  const masterOfSlot = new Map<number, number>();
  const direct = new Map<number, Redis>();
  let a: ChildNode;
  let b: ChildNode;
  /** One segment tag per master: master port -> tag. */
  const tagOnMaster = new Map<number, string>();

  /** A plain connection to one master: it answers MOVED for a key it does not own. */
  const master = (port: number): Redis => {
    let r = direct.get(port);
    if (!r) direct.set(port, (r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 })));
    return r;
  };
  const slotOf = async (key: string) => Number(await cluster.cluster('KEYSLOT', key));

  before(async () => {
    cluster = testRedis() as Cluster;
    assert.equal(cluster.isCluster, true, 'REDIS_CLUSTER_NODES set, yet the test client is not a cluster');
    const slots = (await cluster.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    for (const [from, to, [, port]] of slots) for (let s = from; s <= to; s++) masterOfSlot.set(s, port);
    const masters = new Set(masterOfSlot.values());
    assert.ok(masters.size >= 3, `expected at least 3 masters, CLUSTER SLOTS names ${masters.size}`);
    // Tag names whose keys hash to each master (epoch 1, shard 0: a new tag's first hash).
    for (let i = 0; tagOnMaster.size < masters.size && i < 1000; i++) {
      const tag = `m${i}`;
      const port = masterOfSlot.get(await slotOf(keys.segment(tag, 1, 0)))!;
      if (!tagOnMaster.has(port)) tagOnMaster.set(port, tag);
    }
    assert.equal(tagOnMaster.size, masters.size, 'found no tag name for some master');
    // A long tag cache: a change seen at once by the other process came over pub/sub.
    const env = { ...LEASE_ENV, TAG_CACHE_MS: '60000', REFILL_WAIT_MS: '5000' };
    [a, b] = await Promise.all([
      spawnNode(names, { NODE_ID: 'cl-a', ...env }),
      spawnNode(names, { NODE_ID: 'cl-b', ...env }),
    ]);
    for (const tag of tagOnMaster.values())
      await createTag(a.url, { tag, mode: 'segment', step: STEP, min_step: STEP, max_step: STEP });
    await createTag(a.url, { tag: 'sf', mode: 'snowflake' });
    await createTag(a.url, { tag: 'sf2', mode: 'snowflake', worker_bits: 2 });
  });

  after(async () => {
    await Promise.all([a, b].map((n) => n?.stop().catch(() => undefined)));
    for (const r of direct.values()) r.disconnect();
    cluster?.disconnect();
    await cleanup(names);
  });

  it('serves tags whose keys lie on every master from two processes, unique and increasing, refilled through BullMQ', {
    timeout: 60000,
  }, async () => {
    const rounds = 20;
    const count = 25;
    const tags = [...tagOnMaster.values()];
    const per = await Promise.all(
      tags.flatMap((tag) => [a, b, a, b].map((n) => drive(n.url, tag, rounds, count).then((ids) => ({ tag, ids })))),
    );
    for (const tag of tags) {
      const all = per.filter((p) => p.tag === tag).flatMap((p) => p.ids);
      assert.equal(all.length, 4 * rounds * count);
      assert.equal(new Set(all.map(String)).size, all.length, `${tag}: an ID was handed out twice`);
    }
    // Each tag's segment hash lives on the master its slot names, and went through many
    // segments there: every install of a refill job reached it.
    for (const [port, tag] of tagOnMaster) {
      const key = keys.segment(tag, 1, 0);
      assert.equal(await master(port).exists(key), 1, `${key} is not on master ${port}`);
      const seg = Number(await master(port).hget(key, 'seg'));
      assert.ok(
        seg >= (4 * rounds * count) / STEP - 1,
        `${tag}: only ${seg} segments installed for ${4 * rounds * count} IDs of step ${STEP}`,
      );
    }
    // The refill jobs ran on the cluster: BullMQ's keys all share the hash-tagged prefix's slot.
    const q = new Queue(REFILL_QUEUE, { connection: cluster, prefix: keys.queuePrefix() });
    try {
      const counts = await q.getJobCounts('completed', 'failed');
      assert.ok(
        counts.completed >= tags.length * ((4 * rounds * count) / STEP - 1),
        `completed refill jobs: ${JSON.stringify(counts)}`,
      );
    } finally {
      await q.close();
    }
    const queueSlot = await slotOf(`${keys.queuePrefix()}:${REFILL_QUEUE}:meta`);
    const queueKeys: string[] = [];
    for (const m of cluster.nodes('master')) queueKeys.push(...(await m.keys(`${keys.queuePrefix()}:*`)));
    assert.ok(queueKeys.length > 3, `BullMQ keys: ${queueKeys.length}`);
    for (const k of queueKeys) assert.equal(await slotOf(k), queueSlot, `${k} is outside the queue prefix's slot`);
  });

  it('renews worker-id leases through BullMQ: both processes keep their ids past the TTL and never repeat an ID', {
    timeout: 30000,
  }, async () => {
    const first = await Promise.all([a, b].map((n) => fetchIds(n.url, 'sf', 100)));
    await Promise.all([a, b].map((n) => fetchIds(n.url, 'sf2', 10)));
    const before = await Promise.all([a, b].map((n) => workers(n.url)));
    const idOf = (w: Workers, bits: number) => w.this_node.leases.find((l) => l.worker_bits === bits)?.worker_id;
    assert.notEqual(idOf(before[0], 10), idOf(before[1], 10), 'both processes hold the same worker id');
    await sleep(TTL + 1500);
    const afterTtl = await Promise.all([a, b].map((n) => workers(n.url)));
    for (const [i, w] of afterTtl.entries()) {
      const name = i === 0 ? 'cl-a' : 'cl-b';
      assert.equal(idOf(w, 10), idOf(before[i], 10), `${name} changed its worker id`);
      assert.ok(
        w.this_node.leases.every((l) => l.valid),
        `${name} holds an invalid lease: ${JSON.stringify(w.this_node)}; its last warnings:\n${troubleOf([a, b][i])}`,
      );
      assert.ok(
        w.this_node.lease_events.renewed >= 3,
        `${name} renewed ${w.this_node.lease_events.renewed} times in ${TTL + 1500} ms`,
      );
      assert.equal(w.this_node.lease_events.lost, 0, `${name} lost a lease`);
    }
    // The spaces of both widths are listed, wherever their slots are ({ws10}, {ws2}).
    const spaces = afterTtl[0].spaces;
    assert.deepEqual(
      spaces.map((s) => s.worker_bits).sort((x, y) => x - y),
      [2, 10],
    );
    const ws10 = spaces.find((s) => s.worker_bits === 10)!;
    assert.deepEqual(ws10.leases.map((l) => l.owner).sort(), ['cl-a', 'cl-b']);
    assert.ok(ws10.leases.every((l) => l.expires_in_ms > 0 && l.expires_in_ms <= TTL));
    const later = await Promise.all([a, b].map((n) => fetchIds(n.url, 'sf', 100)));
    const all = [...first, ...later].flat();
    assert.equal(new Set(all.map(String)).size, all.length, 'a snowflake ID was handed out twice');
  });

  it('announces tag changes over pub/sub: a tag disabled through one process is refused by the other at once', {
    timeout: 20000,
  }, async () => {
    const tag = [...tagOnMaster.values()][0];
    await fetchIds(b.url, tag, 1); // b has the definition cached (TAG_CACHE_MS is a minute)
    const off = await fetch(`${a.url}/v1/admin/tags/${tag}`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: JSON.stringify({ enabled: false }),
    });
    assert.equal(off.status, 200);
    const until = Date.now() + 2000;
    let code: string | undefined;
    while (Date.now() < until) {
      const r = await fetch(`${b.url}/v1/id/${tag}`);
      code = ((await r.json()) as { error?: { code: string } }).error?.code;
      if (code === 'TAG_DISABLED') break;
      await sleep(20);
    }
    assert.equal(code, 'TAG_DISABLED', 'the other process still served the disabled tag 2 s later');
    const on = await fetch(`${a.url}/v1/admin/tags/${tag}`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: JSON.stringify({ enabled: true }),
    });
    assert.equal(on.status, 200);
  });

  it('deleting a tag removes its Redis state from the master that holds it', async () => {
    const [port, tag] = [...tagOnMaster.entries()][1];
    const key = keys.segment(tag, 1, 0);
    await fetchIds(a.url, tag, 1);
    assert.equal(await master(port).exists(key), 1);
    const del = await fetch(`${a.url}/v1/admin/tags/${tag}`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    assert.equal(del.status, 204);
    assert.equal(await master(port).exists(key), 0, `${key} left behind on master ${port}`);
  });

  it('the janitor removes the lease queue of a dead node and keeps the live ones', async () => {
    const prefix = keys.queuePrefix();
    const ghost = new Queue(leaseQueueName('ghost-1'), { connection: cluster, prefix });
    await ghost.upsertJobScheduler('renew', { every: 60000 }, { name: 'renew' });
    await ghost.close();
    const meta = (node: string) => `${prefix}:${leaseQueueName(node)}:meta`;
    assert.equal(await cluster.exists(meta('ghost-1')), 1);
    const removed = await sweepDeadLeaseQueues(cluster, cluster, prefix, new LeaseStore(cluster, keys), 'cl-test');
    assert.deepEqual(removed, ['ghost-1']);
    assert.equal(await cluster.exists(meta('ghost-1')), 0);
    assert.equal(
      await cluster.exists(meta('cl-a')),
      1,
      `the live node's lease queue was removed; its last warnings:\n${troubleOf(a)}`,
    );
    // The janitor's own queue shares the slot too.
    assert.equal(await slotOf(`${prefix}:${JANITOR_QUEUE}:meta`), await slotOf(meta('cl-a')));
  });

  it('reports the cluster in /readyz', async () => {
    for (const n of [a, b]) {
      const r = await fetch(`${n.url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const body = (await r.json()) as { status: string; checks: Record<string, string> };
      assert.equal(r.status, 200, JSON.stringify(body));
      assert.equal(body.checks.redis, 'ok');
    }
  });
});

// Needs no cluster: a cluster client whose seeds do not answer.
describe('readiness of a cluster connection', () => {
  it('is refused, with the reason, while the cluster client is not connected', async () => {
    const c = createCluster([{ host: '127.0.0.1', port: 1 }], 'redis://127.0.0.1', 'command');
    c.on('error', () => undefined);
    try {
      await assert.rejects(checkRedis(c), /Redis Cluster connection is (connecting|reconnecting|close|end)/);
    } finally {
      c.disconnect();
    }
  });
});
