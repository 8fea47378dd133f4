// suite: single — starts a Redis Cluster of its own and kills one of its masters
// A Redis Cluster master SIGKILLed under load: its replica is promoted (cluster-node-timeout
// 3 s), possibly without the master's last writes. A private 3-master cluster of its own
// (scripts/redis-cluster.sh on other ports) serves two idmint processes while clients hammer
// an `order: global` tag whose keys live on the master that is killed, and an `order: node` tag.
// Promises checked over every request: no ID answered twice, global-order IDs never below
// one already answered, node order per process, failures only clean 503s, service resumes,
// and the promoted replica's state is recognised as another server's and abandoned.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { withRedisPort } from '../../tools/redis-server.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { redisIdentity } from '../../tools/redis-stats.js';
import {
  answered,
  assertGlobalAndNodeOrder,
  assertOnlyCleanUnavailable,
  clientsPerNode,
  instanceChanges,
  Load,
  maxId,
  now,
  waitFor,
} from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const BASE = Number(process.env.FAILOVER_CLUSTER_BASE_PORT ?? 7301);
const script = (cmd: string) =>
  execFileSync('bash', ['scripts/redis-cluster.sh', cmd], {
    env: { ...process.env, REDIS_CLUSTER_BASE_PORT: String(BASE) },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

/** The master serving a key's slot: its port and process id. */
async function masterOf(key: string): Promise<{ port: number; pid: number }> {
  return withRedisPort(BASE, async (r) => {
    const slot = Number(await r.call('CLUSTER', 'KEYSLOT', key));
    const ranges = (await r.call('CLUSTER', 'SLOTS')) as [
      number,
      number,
      [string, number, ...unknown[]],
      ...unknown[],
    ][];
    const hit = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
    assert.ok(hit, `slot ${slot} is served`);
    const port = Number(hit[2][1]);
    const pid = await withRedisPort(port, async (m) => Number(/process_id:(\d+)/.exec(await m.info('server'))![1]));
    return { port, pid };
  });
}

describe('a Redis Cluster master killed under load', () => {
  const names = testNames();
  const nodes: LocalNode[] = [];
  let seeds = '';

  before(async () => {
    seeds = script('start').split('\n').pop()!;
    assert.match(seeds, /^127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){5}$/, `the cluster script printed its seeds: ${seeds}`);
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await startLocalNode(names, {
          REDIS_CLUSTER_NODES: seeds,
          REFILL_WAIT_MS: '2000',
          NODE_ID: `cf-node-${i}`,
          LOG_LEVEL: 'error',
        }),
      );
    }
    const seg = { mode: 'segment', step: 200, min_step: 100, max_step: 1000, target_seconds: 1 };
    await createTag(nodes[0].url, { tag: 'g', ...seg });
    await createTag(nodes[0].url, { tag: 'n', order: 'node', node_block: 50, ...seg });
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names, `redis://127.0.0.1:${BASE}`).catch(() => undefined);
    script('stop');
  });

  it('never duplicates or goes backwards while the replica takes over, and resumes', { timeout: 90000 }, async (t) => {
    const key = nodes[0].rt.keys.segment('g', 1, 0);
    // The global tag's master is killed; the node tag lives wherever its slot puts it.
    const victim = await masterOf(key);

    const load = new Load(
      clientsPerNode(
        nodes.map((n) => n.url),
        ['g', 'n'],
        3,
        11,
        { pauseOnError: 50 },
      ),
    );
    const served = (t: number, what: string) =>
      waitFor(
        `service ${what}`,
        () => nodes.every((n) => ['g', 'n'].every((tag) => load.okSince(t, tag).some((r) => r.url === n.url))),
        45000,
      );
    let killedAt = 0;
    let back = 0;
    try {
      await served(now(), 'before the fault');
      await sleep(1000);
      killedAt = now();
      process.kill(victim.pid, 'SIGKILL');
      await served(killedAt + 1, 'after the failover');
      back = now();
      await sleep(1000);
    } finally {
      await load.stop();
    }
    const promoted = await masterOf(key);
    assert.notEqual(promoted.port, victim.port, 'a replica took over the slot');

    const recs = load.records;
    const of = (tag: string) => recs.filter((r) => r.tag === tag);
    const n503 = assertOnlyCleanUnavailable(recs, { what: 'cluster failover' });
    const ids = assertGlobalAndNodeOrder(
      recs,
      nodes.map((n) => n.url),
    );
    assert.ok(ids.global > 2000 && ids.node > 2000, `enough IDs checked (${JSON.stringify(ids)})`);
    // After the takeover everything lies above everything answered before the kill.
    const before = maxId(of('g').filter((r) => r.done < killedAt));
    const firstAfter = answered(of('g'))
      .filter((r) => r.sent > back)
      .sort((a, b) => a.done - b.done)[0];
    assert.ok(firstAfter.ids[0] > before, `${firstAfter.ids[0]} lies above ${before}`);
    // The promoted replica's segment state came from another server: abandoned, not served. The
    // hash now names the promoted server; the nodes count the change, unless the take that met it
    // timed out on the way back (its effect in Redis stands, the count is lost).
    const [rid, identity] = await withRedisPort(promoted.port, async (r) => [
      await r.hget(key, 'rid'),
      await redisIdentity(r),
    ]);
    assert.equal(rid, identity, 'the state of the global tag was written afresh by the promoted server');
    const changes = await instanceChanges(
      nodes.map((n) => n.url),
      ['g', 'n'],
    );
    // One script run meets the change first and rewrites the state: each tag's is abandoned at
    // most once (by one process), never again once the promoted server has written it.
    assert.ok(changes <= 2, `the state of the two tags was abandoned ${changes} times`);
    t.diagnostic(JSON.stringify({ ids, n503, recoveredMs: Math.round(back - killedAt), changes }));
  });
});
