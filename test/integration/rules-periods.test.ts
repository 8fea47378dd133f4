// suite: cluster
// Rule tags (the id_server model) against real Redis and MySQL, in periods with a movable
// clock: the counter restarts at min_counter when the local period changes (and only then),
// survives Redis losing its data and a restart of the process, refuses past max_counter
// (HTTP 409, UDP -6) and serves again in the next period.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startNode, type Node } from '../../src/process/serve.js';
import { ManualClock } from '../../src/core/clock.js';
import { ON_CLUSTER, cleanup, skipOnCluster, testConfig, testNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { freePort } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';
import { assertIncreasing } from '../../tools/order.js';
import { httpId, httpIds, mustHttpId, patchTag, udpId } from '../helpers/rule-requests.js';

describe('rule periods with a movable clock', () => {
  const names = testNames();
  const clock = new ManualClock(Date.UTC(2027, 2, 9, 15, 59, 58)); // 2027-03-09 23:59:58 in Shanghai
  // A private redis-server, which the data-loss test flushes and restarts; on a cluster run
  // the tags live on the cluster and that test is skipped.
  let redis: RedisServer | undefined;
  let node: Node;
  let url: string;
  let udpPort: number;
  let udp: UdpClient;

  const start = async () => {
    udpPort = await freePort();
    node = await startNode(
      testConfig(names, {
        UDP_PORT: String(udpPort),
        ...(redis ? { REDIS_URL: redis.url } : {}),
        REFILL_WAIT_MS: '5000',
        NODE_OFFSET: '3',
      }),
      { clock },
    );
    url = node.url!;
    assert.equal(node.udpPort, udpPort);
  };

  before(async () => {
    if (!ON_CLUSTER) redis = await RedisServer.start();
    await start();
    udp = await UdpClient.open();
  });

  after(async () => {
    udp?.close();
    await node?.close().catch(() => undefined);
    await cleanup(names, redis?.url).catch(() => undefined);
    await redis?.kill();
  });

  /** Retries through the short outage after Redis lost its data or restarted. */
  const idAfterOutage = async (tag: string): Promise<string> => {
    const until = Date.now() + 15000;
    for (;;) {
      const r = await httpId(url, tag, 'test');
      if (r.status === 200) return r.id!;
      assert.equal(r.status, 503, `while Redis recovers: ${r.status} ${r.code}`);
      assert.ok(Date.now() < until, 'no service 15 s after Redis came back');
      await sleep(100);
    }
  };

  it('restarts the counter at min_counter when the local day changes, not at UTC midnight', async () => {
    await createTag(url, {
      tag: 'day',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'Asia/Shanghai',
      step: 10,
      min_step: 10,
      max_step: 10,
    });
    const ids: string[] = [];
    ids.push(await mustHttpId(url, 'day', 'test'), await udpId(udp, udpPort, 'day', 'test'));
    assert.deepEqual(ids, ['703090000', '703090001']);
    clock.advance(3000); // 2027-03-10 00:00:01 in Shanghai
    ids.push(
      await udpId(udp, udpPort, 'day', 'test'),
      await mustHttpId(url, 'day', 'test'),
      ...(await httpIds(url, 'day', 'test', 12)),
    );
    assert.deepEqual(
      ids.slice(2),
      Array.from({ length: 14 }, (_, i) => `70310${String(i).padStart(4, '0')}`),
    );
    // UTC midnight falls at 08:00 in Shanghai: the counter goes on through it.
    clock.set(Date.UTC(2027, 2, 10, 23, 59, 59, 500)); // 2027-03-11 07:59:59.5
    assert.equal(await mustHttpId(url, 'day', 'test'), '703110000');
    clock.set(Date.UTC(2027, 2, 11, 0, 0, 0, 500));
    assert.equal(await udpId(udp, udpPort, 'day', 'test'), '703110001');
    // Back in an earlier day (a clock stepping back): that day's counter continues, nothing repeats.
    clock.set(Date.UTC(2027, 2, 9, 16, 30, 0));
    assert.equal(await mustHttpId(url, 'day', 'test'), '703100014');
    // Another app starts its own run.
    assert.equal(await udpId(udp, udpPort, 'day', 'other'), '703100000');
  });

  it('restarts an hourly counter at min_counter every local hour', async () => {
    clock.set(Date.UTC(2027, 5, 1, 10, 59, 59, 900));
    await createTag(url, {
      tag: 'hourly',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}-{counter:5}',
      min_counter: 10,
      max_counter: 99999,
      reset_seconds: 3600,
      time_zone: 'UTC',
    });
    assert.deepEqual(await httpIds(url, 'hourly', 'test', 3), [
      '2027060110-00010',
      '2027060110-00011',
      '2027060110-00012',
    ]);
    for (let h = 11; h <= 13; h++) {
      clock.set(Date.UTC(2027, 5, 1, h, 0, 0, 1));
      assert.equal(await udpId(udp, udpPort, 'hourly', 'test'), `20270601${h}-00010`);
      assert.equal(await mustHttpId(url, 'hourly', 'test'), `20270601${h}-00011`);
      clock.advance(3599_000);
      assert.equal(await mustHttpId(url, 'hourly', 'test'), `20270601${h}-00012`);
    }
  });

  it('keeps counting above the issued counters when Redis loses its data or restarts, and across a process restart', {
    timeout: 45000,
    skip: skipOnCluster('it flushes and restarts a private single redis-server'),
  }, async () => {
    const server = redis!;
    clock.set(Date.UTC(2027, 6, 4, 12, 0, 0));
    const rules = ['flg', 'fln'];
    await createTag(url, {
      tag: 'flg',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}-{counter:6}',
      min_counter: 0,
      max_counter: 999999,
      reset_seconds: 86400,
      time_zone: 'UTC',
      step: 7,
      min_step: 7,
      max_step: 7,
    });
    await createTag(url, {
      tag: 'fln',
      mode: 'rule',
      order: 'node',
      node_block: 5,
      template: '{yyyy}{MM}{dd}-{counter:6}',
      min_counter: 0,
      max_counter: 999999,
      reset_seconds: 86400,
      time_zone: 'UTC',
      step: 7,
      min_step: 7,
      max_step: 7,
    });
    const issued = new Map<string, string[]>(rules.map((r) => [r, []]));
    const takeSome = async (n: number) => {
      for (const r of rules) {
        const ids = issued.get(r)!;
        ids.push(await idAfterOutage(r));
        for (let i = 1; i < n; i++)
          ids.push(i % 2 ? await udpId(udp, udpPort, r, 'test') : await mustHttpId(url, r, 'test'));
        ids.push(...(await httpIds(url, r, 'test', n)));
      }
    };
    const check = (what: string) => {
      for (const r of rules) {
        const ids = issued.get(r)!;
        for (const id of ids) assert.ok(id.startsWith('20270704-'), id);
        assertIncreasing(ids, `${r} ${what}`);
      }
    };
    await takeSome(20);
    check('before the faults');
    const before = issued.get('flg')!.length;
    assert.equal(issued.get('flg')![before - 1], `20270704-${String(before - 1).padStart(6, '0')}`);

    // Every key gone, mid-period.
    const r = new Redis(server.url, { maxRetriesPerRequest: 2 });
    try {
      assert.ok((await r.dbsize()) > 0, 'the private Redis holds keys before the flush');
      await r.flushall();
    } finally {
      r.disconnect();
    }
    await takeSome(20);
    check('after FLUSHALL');

    // A real restart of the Redis server, empty.
    await server.restartEmpty(200);
    await takeSome(20);
    check('after a Redis restart');

    // A restart of the idmint process (node order: its in-memory block is left behind).
    await node.close();
    await start();
    await takeSome(10);
    check('after a process restart');
    for (const rule of rules) assert.equal(issued.get(rule)!.length, 3 * 40 + 20);
  });

  it('refuses past max_counter (HTTP 409, UDP -6) until the next period', async () => {
    clock.set(Date.UTC(2027, 7, 1, 8, 30, 0));
    await createTag(url, {
      tag: 'tiny',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{counter:2}',
      min_counter: 5,
      max_counter: 12,
      reset_seconds: 3600,
      time_zone: 'UTC',
      step: 3,
      min_step: 3,
      max_step: 3,
    });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++)
      ids.push(i % 2 ? await udpId(udp, udpPort, 'tiny', 'test', 'create') : await mustHttpId(url, 'tiny', 'test'));
    assert.deepEqual(
      ids,
      [5, 6, 7, 8, 9, 10, 11, 12].map((c) => `2027080108${String(c).padStart(2, '0')}`),
    );

    const h = await httpId(url, 'tiny', 'test');
    assert.deepEqual([h.status, h.code, h.id], [409, 'ID_SPACE_EXHAUSTED', undefined]);
    const batch = await fetch(`${url}/v1/ids/tiny?count=1&app=test`);
    assert.equal(batch.status, 409);
    for (const action of ['get', 'create']) {
      const req = { action, rule_name: 'tiny', app_name: 'test', seq: 41, data: 'x' };
      const u = await udp.request(udpPort, req);
      assert.equal(u.code, -6, JSON.stringify(u));
      assert.equal(u.seq, 41);
      // The short form, as the whole message would make the refusal longer than the request.
      assert.equal(JSON.stringify(u), '{"code":-6,"message":"ID_SPACE_EXHAUSTED","seq":41}');
      assert.ok(JSON.stringify(u).length <= JSON.stringify(req).length);
      assert.equal('data' in u, false, 'an error reply carries no data');
      assert.equal(typeof u.message, 'string');
    }
    const mon = await udp.request(udpPort, { action: 'monitor', rule_name: 'tiny', app_name: 'test' });
    assert.deepEqual(mon.data, { counter: 12, node_offset: 3 });
    // Other app names are not affected.
    assert.equal(await mustHttpId(url, 'tiny', 'other'), '202708010805');

    clock.set(Date.UTC(2027, 7, 1, 9, 0, 0));
    assert.equal(await udpId(udp, udpPort, 'tiny', 'test'), '202708010905');
    assert.equal(await mustHttpId(url, 'tiny', 'test'), '202708010906');
  });

  // At an exhausted limit no waiter may be left holding part of its IDs: order node takes
  // what is left instead of a whole block, and a batch larger than what is left is refused
  // without burning the remainder.
  it('order node: hands out every counter up to max_counter before refusing', async () => {
    clock.set(Date.UTC(2027, 7, 2, 8, 30, 0));
    await createTag(url, {
      tag: 'tinyn',
      mode: 'rule',
      order: 'node',
      node_block: 4,
      template: '{yyyy}{MM}{dd}{HH}{counter:2}',
      min_counter: 0,
      max_counter: 9,
      reset_seconds: 3600,
      time_zone: 'UTC',
      step: 3,
      min_step: 3,
      max_step: 3,
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await httpId(url, 'tinyn', 'test');
      if (r.status !== 200) {
        assert.deepEqual([r.status, r.code], [409, 'ID_SPACE_EXHAUSTED']);
        break;
      }
      ids.push(r.id!);
    }
    assert.deepEqual(
      ids,
      Array.from({ length: 10 }, (_, c) => `20270802080${c}`),
    );
  });

  it('a batch larger than what is left is refused without spending the counters left', async () => {
    clock.set(Date.UTC(2027, 7, 2, 8, 30, 0));
    await createTag(url, {
      tag: 'tinyb',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{counter:2}',
      min_counter: 0,
      max_counter: 9,
      reset_seconds: 3600,
      time_zone: 'UTC',
      step: 3,
      min_step: 3,
      max_step: 3,
    });
    assert.deepEqual(
      await httpIds(url, 'tinyb', 'test', 8),
      Array.from({ length: 8 }, (_, c) => `20270802080${c}`),
    );
    const tooMany = await fetch(`${url}/v1/ids/tinyb?count=3&app=test`);
    assert.equal(tooMany.status, 409);
    // Two counters are left in this period: single requests still get them.
    assert.equal((await httpId(url, 'tinyb', 'test')).id, '202708020808');
    assert.equal(await udpId(udp, udpPort, 'tinyb', 'test'), '202708020809');
  });

  // Raising max_counter must clear the exhausted mark of every scope of the rule
  // ("<key>:<app>/<period>"), not only the unscoped segment key.
  it('serves again at once when max_counter is raised in an exhausted period', async () => {
    clock.set(Date.UTC(2027, 7, 3, 8, 30, 0));
    await createTag(url, {
      tag: 'grow',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{counter:2}',
      min_counter: 0,
      max_counter: 4,
      reset_seconds: 3600,
      time_zone: 'UTC',
      step: 2,
      min_step: 2,
      max_step: 2,
    });
    assert.deepEqual(
      await httpIds(url, 'grow', 'test', 5),
      [0, 1, 2, 3, 4].map((c) => `20270803080${c}`),
    );
    assert.equal((await httpId(url, 'grow', 'test')).status, 409);
    const p = await patchTag(url, 'grow', { max_counter: 9 });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.equal(p.body.max_counter, 9);
    const r = await httpId(url, 'grow', 'test');
    assert.deepEqual([r.status, r.code, r.id], [200, undefined, '2027080308' + '05']);
  });
});
