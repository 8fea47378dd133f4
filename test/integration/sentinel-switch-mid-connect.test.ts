// suite: single — starts its own Sentinel group
// Why a node's Redis connection could end for good after a Sentinel failover, made to happen on
// demand. ioredis's failover detector drops a connection when a sentinel announces
// +switch-master; when that announcement arrives while the connection is between reconnects,
// asking the sentinels for the master, the ask is abandoned with "Connection is closed." and
// the connection is left in `end`, ioredis's final state. A busy machine makes that window
// wide (every ask waits on a sentinel slow to answer); here it is held open for certain:
// - the node knows the group through one sentinel, reached through a proxy that keeps back the
//   replies of every connection opened after a point (the detector's subscriptions, opened
//   before, still hear the announcements); the other two sentinels are paused (SIGSTOP);
// - the node's connections to the master are killed, so each reconnects and asks the sentinels,
//   and waits;
// - SENTINEL FAILOVER on the sentinel behind the proxy: +switch-master reaches the detectors.
// Then: the connections end, /readyz says which one is being opened again and answers 503, and
// once the sentinels answer again the node serves on the new master, the reopening counted.
// Closed, the node leaves no subscription on the sentinels, nor does a connection closed with
// QUIT alone (as BullMQ closes its blocking connections), which ioredis would leave subscribed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createSentinelRedis, whenReady } from '../../src/store/redis/connection.js';
import { ConnectionSupervisor } from '../../src/store/redis/supervisor.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';
import { withRedisPort } from '../../tools/redis-server.js';
import { waitFor } from '../helpers/fault-load.js';
import { masterAddr, sentinelScript } from '../helpers/sentinel-group.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const BASE = Number(process.env.SWITCH_SENTINEL_BASE_PORT ?? 7471);
const script = sentinelScript(BASE);

const pidOf = (port: number) =>
  withRedisPort(port, async (r) => Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1]));

/** Clients of the server on port that subscribed to something (sentinels: the failover detectors). */
const subscribers = (port: number) =>
  withRedisPort(
    port,
    async (r) =>
      String(await r.client('LIST'))
        .split('\n')
        .filter((l) => / sub=[1-9]/.test(l)).length,
  );

/**
 * Kills every client connection of the server on port but the sentinels' (named sentinel-...), its replica's and this
 * one.
 */
const killClients = (port: number) =>
  withRedisPort(port, async (r) => {
    const self = String(await r.client('ID'));
    const ids = String(await r.call('CLIENT', 'LIST', 'TYPE', 'normal'))
      .split('\n')
      .filter((l) => l.startsWith('id=') && !/ name=sentinel-/.test(l) && !l.startsWith(`id=${self} `))
      .map((l) => /^id=(\d+)/.exec(l)?.[1])
      .filter((id): id is string => id !== undefined);
    for (const id of ids) await r.client('KILL', 'ID', id).catch(() => undefined);
    return ids.length;
  });

describe('a +switch-master heard while a connection asks the sentinels for the master', () => {
  const names = testNames();
  let node: LocalNode | undefined;
  let proxy: ReplyHoldProxy;
  let sentinels: number[] = [];
  const paused: number[] = [];

  before(async () => {
    const seeds = script('start').split('\n').pop()!;
    sentinels = seeds.split(',').map((s) => Number(s.split(':')[1]));
    proxy = await ReplyHoldProxy.start(sentinels[0]);
    node = await startLocalNode(names, {
      REDIS_URL: `redis://127.0.0.1:${BASE}`,
      REDIS_SENTINELS: `127.0.0.1:${proxy.port}`,
      REDIS_SENTINEL_MASTER: script('master'),
      LOG_LEVEL: 'error',
    });
    await createTag(node.url, { tag: 'g', mode: 'segment', step: 100 });
  });

  after(async () => {
    for (const pid of paused) process.kill(pid, 'SIGCONT');
    await proxy?.close();
    await node?.close().catch(() => undefined);
    const master = sentinels.length ? await masterAddr(sentinels[0]).catch(() => '') : '';
    if (master) await cleanup(names, `redis://${master}`).catch(() => undefined);
    script('stop');
  });

  it('ends the connection; the node says so, opens it again once the sentinels answer, and serves on the new master', {
    timeout: 120000,
  }, async () => {
    const n = node!;
    const take = () => fetch(`${n.url}/v1/ids/g?count=1`).then((r) => r.status);
    assert.equal(await take(), 200);
    // The detectors of the node's four connections (request path, queues, workers, tag
    // announcements) subscribed through the proxy (each subscribes once connected).
    await waitFor('the failover detectors subscribed', async () => (await subscribers(sentinels[0])) >= 4, 10000);
    const ended: string[] = [];
    n.rt.redis.on('end', () => ended.push('command'));
    const switched = new Redis(sentinels[0], '127.0.0.1');
    switched.on('error', () => undefined);
    await switched.subscribe('+switch-master');
    const heard = new Promise<void>((resolve) => switched.once('message', () => resolve()));
    const old = await masterAddr(sentinels[0]);
    try {
      // The sentinels stop answering new clients: two paused, one behind the holding proxy.
      for (const p of sentinels.slice(1)) {
        const pid = await pidOf(p);
        process.kill(pid, 'SIGSTOP');
        paused.push(pid);
      }
      proxy.holdNew();
      assert.ok((await killClients(BASE)) >= 4, "the node's connections to the master were killed");
      await waitFor('a connection asking the sentinels for the master', () => proxy.heldChunks > 0, 10000);
      await withRedisPort(sentinels[0], (s) => s.call('SENTINEL', 'FAILOVER', 'idmint'));
      await heard;
      // The ask times out on the held sentinel and the connection ends: without anything to open
      // it again, it stays so.
      await waitFor('the command connection to end', () => ended.length > 0, 15000);
      const notReady = await waitFor(
        '/readyz to name the connection being opened again',
        async () => {
          const res = await fetch(`${n.url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
          const body = (await res.json()) as { redis_servers: Record<string, string> };
          return (
            res.status === 503 && /connection ended .*reopening, attempt \d+/.test(body.redis_servers.default) && body
          );
        },
        15000,
      );
      assert.match(notReady.redis_servers.default, /command connection ended/);
    } finally {
      for (const pid of paused.splice(0)) process.kill(pid, 'SIGCONT');
      proxy.release();
      switched.disconnect();
    }
    const now = await masterAddr(sentinels[0]);
    assert.notEqual(now, old, 'the sentinels promoted the replica');
    await waitFor(
      'the node ready on the new master',
      async () => {
        const res = await fetch(`${n.url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        const body = (await res.json()) as {
          redis_master: Record<string, string | null>;
          redis_servers: Record<string, string>;
        };
        return res.status === 200 && body.redis_master.default === now && body.redis_servers.default === 'ok';
      },
      30000,
    );
    await waitFor('a take answered', async () => (await take()) === 200, 15000);
    const metrics = await (await fetch(`${n.url}/metrics`)).text();
    const restarts = /^idmint_connection_restarts_total\{server="default",role="command"\} (\d+)$/m.exec(metrics);
    assert.ok(restarts && Number(restarts[1]) >= 1, 'the reopening is counted');
  });

  // ioredis's QUIT leaves a connection's failover detector subscribed to the sentinels: a
  // closed node would keep those connections open (and its process alive).
  it('leaves no subscription on the sentinels once the node is closed', async () => {
    await node!.close();
    node = undefined;
    await waitFor(
      'no subscriber left on any sentinel',
      async () => (await Promise.all(sentinels.map(subscribers))).every((n) => n === 0),
      10000,
    );
  });

  // As BullMQ closes its blocking connections: QUIT, and nothing else.
  it('leaves no subscription on the sentinels when a watched connection is closed with QUIT', async () => {
    const supervisor = new ConnectionSupervisor(pino({ level: 'silent' }));
    const c = supervisor.watch(
      createSentinelRedis(
        { sentinels: [{ host: '127.0.0.1', port: sentinels[1] }], master: 'idmint', db: 0 },
        '',
        'worker',
      ),
      'default',
      'worker',
    );
    c.on('error', () => undefined);
    await whenReady(c);
    await waitFor('the failover detector subscribed', async () => (await subscribers(sentinels[1])) > 0, 10000);
    await c.quit();
    await waitFor(
      'no subscriber left on any sentinel',
      async () => (await Promise.all(sentinels.map(subscribers))).every((n) => n === 0),
      10000,
    );
  });
});
