// suite: single — private redis-servers and a proxy that fails over between them
// Redis replaced by a copy that missed the last writes: a replica promoted after the master
// handed out more IDs than it replicated, reached at the same address (a proxy retargeted, as
// a failover behind one endpoint does). The replica's segment cursors and lease keys lag;
// idmint must notice the other server (its identity) and never serve the lagging state:
// segment tags abandon it and continue from MySQL, worker-id spaces hold every id for one TTL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';
import { redisIdentity } from '../../tools/redis-stats.js';
import {
  answered,
  assertGlobalAndNodeOrder,
  assertNoDuplicates,
  assertRealTimeOrder,
  clientsPerNode,
  counter,
  instanceChanges,
  Load,
  maxId,
  now,
  waitFor,
  type ClientSpec,
  type Rec,
} from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const identity = (url: string) => withRedis(url, redisIdentity);

/** A master with one replica, behind a proxy that plays the failover. */
class ReplicatedRedis {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    readonly proxy: TcpProxy,
  ) {}

  static async start(): Promise<ReplicatedRedis> {
    const master = await RedisServer.start();
    const replica = await RedisServer.start();
    await withRedis(replica.url, (r) => r.call('REPLICAOF', '127.0.0.1', String(master.port)));
    const proxy = await TcpProxy.start(master.port);
    return new ReplicatedRedis(master, replica, proxy);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.proxy.port}`;
  }

  /** Waits until the replica has every write so far, then cuts it off: its data stops there. */
  async freezeReplica(): Promise<void> {
    await waitFor(
      'replica link up',
      () => withRedis(this.replica.url, async (r) => /master_link_status:up/.test(await r.info('replication'))),
      10000,
    );
    const acked = (await withRedis(this.master.url, (r) => r.call('WAIT', '1', '5000'))) as number;
    assert.equal(acked, 1, 'the replica acknowledged every write before it was cut off');
    await withRedis(this.replica.url, (r) => r.call('REPLICAOF', 'NO', 'ONE'));
  }

  /** The replica takes over at the proxy's address; the old connections drop. */
  failover(): void {
    this.proxy.retarget(this.replica.port);
  }

  async stop(): Promise<void> {
    await this.proxy.close().catch(() => undefined);
    await this.master.stop();
    await this.replica.stop();
  }
}

describe('segment tags across a failover to a lagging replica', () => {
  const names = testNames();
  let rr: ReplicatedRedis;
  const nodes: LocalNode[] = [];

  before(async () => {
    rr = await ReplicatedRedis.start();
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await startLocalNode(names, {
          REDIS_URL: rr.url,
          REFILL_WAIT_MS: '1500',
          NODE_ID: `fo-node-${i}`,
          LOG_LEVEL: 'error',
        }),
      );
    }
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
    await cleanup(names, rr.replica.url).catch(() => undefined);
    await rr.stop();
  });

  it("abandons the replica's segment state and continues above every ID answered", { timeout: 60000 }, async () => {
    const load = new Load(
      clientsPerNode(
        nodes.map((n) => n.url),
        ['g', 'n'],
        3,
        7,
      ),
    );
    const servedSince = (t: number, what: string) =>
      waitFor(
        `service ${what}`,
        () => nodes.every((n) => ['g', 'n'].every((tag) => load.okSince(t, tag).some((r) => r.url === n.url))),
        20000,
      );

    const segKey = nodes[0].rt.keys.segment('g', 1, 0);
    let frozenCursor: number, masterCursor: number, failoverAt: number;
    try {
      await servedSince(now(), 'at start');
      await sleep(500);
      await rr.freezeReplica();
      frozenCursor = Number(await withRedis(rr.replica.url, (r) => r.hget(segKey, 'cur')));
      // The master goes on handing out IDs the replica never sees.
      await sleep(1000);
      masterCursor = Number(await withRedis(rr.master.url, (r) => r.hget(segKey, 'cur')));
      failoverAt = now();
      rr.failover();
      await servedSince(failoverAt, 'after the failover');
      await sleep(1000);
    } finally {
      await load.stop();
    }
    assert.ok(
      masterCursor > frozenCursor,
      `the replica lags: its cursor ${frozenCursor}, the master's ${masterCursor}`,
    );

    const recs = load.records;
    const of = (tag: string) => recs.filter((r) => r.tag === tag);
    const ids = assertGlobalAndNodeOrder(
      recs,
      nodes.map((n) => n.url),
    );
    assert.ok(ids.global > 2000 && ids.node > 2000, `enough IDs checked (${JSON.stringify(ids)})`);

    // Failures during the switch are clean errors with a code, never a wrong answer.
    const failed = recs.filter((r: Rec) => r.ids === undefined);
    for (const r of failed)
      assert.ok(
        r.status === 503 && r.code,
        `a failure is a clean 503 with a code: ${JSON.stringify({ ...r, ids: undefined })}`,
      );

    // Everything answered after the failover lies above everything answered before it.
    const before = maxId(of('g').filter((r) => r.done < failoverAt));
    const firstAfter = answered(of('g'))
      .filter((r) => r.sent > failoverAt)
      .sort((a, b) => a.done - b.done)[0];
    assert.ok(firstAfter.ids[0] > before, `${firstAfter.ids[0]} lies above ${before}`);

    // The state in the new Redis was rebuilt under its own identity, and operators were told.
    assert.equal(await withRedis(rr.replica.url, (r) => r.hget(segKey, 'rid')), await identity(rr.replica.url));
    const changes = await instanceChanges(
      nodes.map((n) => n.url),
      ['g', 'n'],
    );
    assert.ok(changes >= 2, `both tags' stale state was reported (${changes})`);
  });
});

describe('snowflake worker ids across a failover to a lagging replica', () => {
  const names = testNames();
  let rr: ReplicatedRedis;
  const nodes: LocalNode[] = [];
  const env = { LEASE_TTL_MS: '6000', LEASE_MARGIN_MS: '500', LOG_LEVEL: 'error' };

  before(async () => {
    rr = await ReplicatedRedis.start();
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names, rr.replica.url).catch(() => undefined);
    await rr.stop();
  });

  it('holds every id for one TTL, so a lease the replica missed is never shared', { timeout: 60000 }, async () => {
    // A takes worker id 0 before the replica is cut off, B takes id 1 after: the replica
    // knows A's lease but not B's, and its probe cursor points at id 1.
    const a = await startLocalNode(names, { ...env, REDIS_URL: rr.url, NODE_ID: 'sf-a' });
    nodes.push(a);
    await createTag(a.url, { tag: 'sf', mode: 'snowflake' });
    // A's first ID, once its lease is taken up (a busy machine may answer 503 until then).
    await waitFor('A serves', async () => (await fetch(`${a.url}/v1/ids/sf?count=1`)).status === 200, 20000);
    await rr.freezeReplica();
    const b = await startLocalNode(names, { ...env, REDIS_URL: rr.url, NODE_ID: 'sf-b' });
    nodes.push(b);
    await waitFor('B serves', async () => (await fetch(`${b.url}/v1/ids/sf?count=1`)).status === 200, 20000);
    assert.equal(b.rt.leases.held()[0]?.workerId, 1, 'B holds worker id 1');

    const clients: ClientSpec[] = [];
    for (let c = 0; c < 3; c++)
      clients.push({ name: `b-c${c}`, tag: 'sf', url: () => b.url, count: counter(11 + c, 50) });
    const load = new Load(clients);
    let c: LocalNode | undefined;
    let cLoad: Load | undefined;
    let failoverAt = 0;
    try {
      await sleep(300);
      // The failover: B is cut off from the old master (it goes on issuing under its lease
      // until its local deadline) and C, started meanwhile, reaches the promoted replica first.
      failoverAt = now();
      rr.proxy.block();
      c = await startLocalNode(names, { ...env, REDIS_URL: rr.replica.url, NODE_ID: 'sf-c' });
      nodes.push(c);
      rr.proxy.retarget(rr.replica.port);
      rr.proxy.unblock();
      const cNode = c;
      const cClients: ClientSpec[] = [];
      for (let i = 0; i < 3; i++)
        cClients.push({
          name: `c-c${i}`,
          tag: 'sf',
          url: () => cNode.url,
          count: counter(21 + i, 50),
          pauseOnError: 50,
        });
      cLoad = new Load(cClients);
      await waitFor('C serves', () => cLoad!.okSince(failoverAt, 'sf').length > 20, 20000);
      await sleep(500);
    } finally {
      await cLoad?.stop();
      await load.stop();
    }
    assert.equal(c!.rt.leases.held()[0]?.workerId, 1, 'C took worker id 1 on the replica, the id B still held');

    const recs = [...load.records, ...cLoad!.records];
    const ids = assertNoDuplicates(recs, 'snowflake');
    assert.ok(ids > 1000, `enough IDs checked (${ids})`);
    for (const node of [b, c!])
      assertRealTimeOrder(
        recs.filter((r) => r.url === node.url),
        `snowflake on ${node.url}`,
      );
    // B really issued under id 1 after the failover; C's IDs under id 1 all lie above B's (C
    // waited out the guard, past B's deadline), so the two never shared a millisecond.
    // (B may go on under another id once its renewal finds id 1 taken.)
    const workerOf = (id: bigint) => Number((id >> 12n) & 1023n);
    const under1 = (rs: Rec[]) =>
      answered(rs)
        .flatMap((r) => r.ids)
        .filter((id) => workerOf(id) === 1);
    const bIds = under1(load.records.filter((r) => r.sent > failoverAt));
    assert.ok(bIds.length > 0, 'B went on issuing under id 1 after the failover');
    const cIds = under1(cLoad!.records);
    assert.equal(cIds.length, answered(cLoad!.records).flatMap((r) => r.ids).length, 'C issued only under id 1');
    const cMin = cIds.reduce((m, x) => (x < m ? x : m));
    const bMax = bIds.reduce((m, x) => (x > m ? x : m));
    assert.ok(cMin > bMax, `C's lowest ID ${cMin} lies above B's highest under the same id, ${bMax}`);
    for (const r of cLoad!.records.filter((x) => x.ids === undefined)) {
      assert.ok(r.status === 503 && r.code, `C's refusals are clean 503s: ${JSON.stringify({ ...r, ids: undefined })}`);
    }
  });
});
