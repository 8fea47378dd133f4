// suite: single — starts its own Sentinel group
// Redis under Sentinel: a master, a replica and three sentinels (scripts/redis-sentinel.sh on
// ports of their own) serve two idmint processes found through REDIS_SENTINELS, while clients
// hammer an `order: global` segment tag, an `order: node` one, a snowflake tag and a rule tag.
// Two faults in turn: (a) SENTINEL FAILOVER (the master is demoted to a replica, alive), then
// (b) the master SIGKILLed (the sentinels find it down after 1 s and promote the replica).
// Checked over every request: no ID answered twice, global order in real time, node order per
// process, snowflake worker ids never used by two processes in the same millisecond, failures
// only clean 503s, service back on every process and tag within a bound after the sentinels
// announce +switch-master, and /readyz, /metrics and the admin API name the new master. The
// same group is also a named server (REDIS_URLS, redis+sentinel://) holding a tag of its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { withRedisPort } from '../../tools/redis-server.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import {
  answered,
  assertClientOrder,
  assertGlobalAndNodeOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  clientsPerNode,
  Load,
  now,
  waitFor,
  type Rec,
} from '../helpers/fault-load.js';
import { masterAddr, sentinelScript } from '../helpers/sentinel-group.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const BASE = Number(process.env.FAILOVER_SENTINEL_BASE_PORT ?? 7451);
const script = sentinelScript(BASE);

/** Service back on every process and tag within this long of +switch-master (docs/OPERATIONS.md, "Redis Sentinel"). */
const BACK_WITHIN_MS = 10000;
const TAGS = ['g', 'n', 'sf', 'r'];
const LEASE_TTL_MS = 6000;

/** The first +switch-master a sentinel announces from now on: resolves with its time (performance.now()). */
async function nextSwitch(sentinelPort: number): Promise<{ at: Promise<number>; close: () => void }> {
  const s = new Redis(sentinelPort, '127.0.0.1', { maxRetriesPerRequest: null });
  s.on('error', () => undefined);
  await s.subscribe('+switch-master');
  const at = new Promise<number>((resolve) => s.once('message', () => resolve(now())));
  return { at, close: () => s.disconnect() };
}

/** Every sentinel agrees on the master, which has its replica linked and in sync (the group can fail over again). */
async function groupSettled(sentinels: number[]): Promise<boolean> {
  const addrs = await Promise.all(sentinels.map((p) => masterAddr(p)));
  if (new Set(addrs).size !== 1) return false;
  const port = Number(addrs[0].split(':')[1]);
  const info = await withRedisPort(port, (r) => r.info('replication'));
  return /role:master/.test(info) && /connected_slaves:1/.test(info) && /slave0:.*state=online/.test(info);
}

/**
 * A snowflake worker id never used by two processes in the same millisecond (default layout: 10 worker bits, 12
 * sequence bits).
 */
function assertWorkerIdsNeverShared(recs: readonly Rec[]): number {
  const uses = answered(recs)
    .flatMap((r) => r.ids.map((id) => ({ id, url: r.url })))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const last = new Map<number, { url: string; ms: bigint }>();
  let handovers = 0;
  for (const { id, url } of uses) {
    const worker = Number((id >> 12n) & 1023n);
    const ms = id >> 22n;
    const prev = last.get(worker);
    if (prev && prev.url !== url) {
      assert.ok(ms > prev.ms, `worker id ${worker} used by ${prev.url} and ${url} in the same millisecond ${ms}`);
      handovers++;
    }
    last.set(worker, { url, ms });
  }
  return handovers;
}

describe('Redis Sentinel failovers under load', () => {
  const names = testNames();
  const nodes: LocalNode[] = [];
  let sentinels: number[] = [];
  let load: Load | undefined;

  before(async () => {
    const seeds = script('start').split('\n').pop()!;
    assert.match(
      seeds,
      /^127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}$/,
      `the Sentinel script printed the sentinels: ${seeds}`,
    );
    sentinels = seeds.split(',').map((s) => Number(s.split(':')[1]));
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await startLocalNode(names, {
          // Only the master's credentials and database: the sentinels name its address.
          REDIS_URL: `redis://127.0.0.1:${BASE}`,
          REDIS_SENTINELS: seeds,
          REDIS_SENTINEL_MASTER: script('master'),
          REDIS_URLS: `s=redis+sentinel://${seeds}/${script('master')}`,
          REFILL_WAIT_MS: '2000',
          LEASE_TTL_MS: String(LEASE_TTL_MS),
          LEASE_MARGIN_MS: '500',
          NODE_ID: `sentinel-node-${i}`,
          LOG_LEVEL: 'error',
        }),
      );
    }
    const seg = { mode: 'segment', step: 200, min_step: 100, max_step: 1000, target_seconds: 1 };
    await createTag(nodes[0].url, { tag: 'g', ...seg });
    await createTag(nodes[0].url, { tag: 'n', order: 'node', node_block: 50, ...seg });
    await createTag(nodes[0].url, { tag: 'sf', mode: 'snowflake' });
    await createTag(nodes[0].url, { tag: 'r', mode: 'rule', template: '{yyyy}{counter:6}', max_counter: 999999 });
  });

  after(async () => {
    await load?.stop();
    for (const n of nodes) await n.close().catch(() => undefined);
    const master = sentinels.length ? await masterAddr(sentinels[1]).catch(() => '') : '';
    if (master) await cleanup(names, `redis://${master}`).catch(() => undefined);
    script('stop');
  });

  /** /readyz, /metrics and GET /v1/admin/redis of every process name `addr` as the default Redis's master. */
  const reportsMaster = (addr: string) =>
    waitFor(
      `every process to report master ${addr}`,
      async () => {
        for (const n of nodes) {
          const ready = (await (
            await fetch(`${n.url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
          ).json()) as {
            redis_master?: Record<string, string | null>;
          };
          if (ready.redis_master?.default !== addr) return false;
          const metrics = await (
            await fetch(`${n.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
          ).text();
          if (!metrics.includes(`idmint_redis_master_info{server="default",address="${addr}"} 1`)) return false;
          const admin = (await (await fetch(`${n.url}/v1/admin/redis`, { headers: adminHeaders })).json()) as {
            redis: { name: string; master: string | null }[];
          };
          if (admin.redis.find((r) => r.name === 'default')?.master !== addr) return false;
        }
        return true;
      },
      15000,
    );

  it('serves a tag on a named server found through the sentinels (redis+sentinel://)', async () => {
    await createTag(nodes[0].url, { tag: 'on-s', mode: 'segment', step: 100, redis: 's' });
    const master = await masterAddr(sentinels[0]);
    const seen: bigint[] = [];
    for (const n of nodes) {
      const res = await fetch(`${n.url}/v1/ids/on-s?count=3`);
      assert.equal(res.status, 200, await res.clone().text());
      seen.push(...((await res.json()) as { ids: string[] }).ids.map(BigInt));
      const ready = (await (
        await fetch(`${n.url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      ).json()) as {
        redis_servers: Record<string, string>;
        redis_master: Record<string, string | null>;
      };
      assert.equal(ready.redis_servers.s, 'ok');
      assert.equal(ready.redis_master.s, master, 'the named server is the master the sentinels name');
      const admin = (await (await fetch(`${n.url}/v1/admin/redis`, { headers: adminHeaders })).json()) as {
        redis: { name: string; address: string; master: string }[];
      };
      const s = admin.redis.find((r) => r.name === 's');
      assert.deepEqual(
        [s?.address, s?.master],
        [`sentinel master idmint via ${sentinels.map((p) => `127.0.0.1:${p}`).join(',')}`, master],
      );
    }
    assert.equal(new Set(seen).size, 6, 'six distinct IDs');
    // Its segment lives on the master the sentinels name.
    const port = Number(master.split(':')[1]);
    assert.equal(await withRedisPort(port, (r) => r.exists(nodes[0].rt.keys.segment('on-s', 1, 0))), 1);
  });

  it('never duplicates or goes backwards across a forced failover and a killed master, and resumes within the bound', {
    timeout: 150000,
  }, async () => {
    const urls = nodes.map((n) => n.url);
    const clients = [
      ...clientsPerNode(urls, ['g', 'n', 'sf'], 2, 31, { pauseOnError: 50 }),
      ...clientsPerNode(urls, ['r'], 2, 41, { pauseOnError: 50, query: '&app=a' }),
    ];
    load = new Load(clients);
    const served = (t: number, what: string) =>
      waitFor(
        `service ${what}`,
        () => nodes.every((n) => TAGS.every((tag) => load!.okSince(t, tag).some((r) => r.url === n.url))),
        45000,
      ).catch((err: Error) => {
        const failing = load!.records.filter((r) => r.sent >= t && r.ids === undefined).slice(-3);
        throw new Error(
          `${err.message}; last failures: ${JSON.stringify(failing.map((r) => ({ ...r, ids: undefined })))}`,
        );
      });
    const first = await masterAddr(sentinels[0]);
    await reportsMaster(first);
    const bounds: { fault: string; switchMs: number; backMs: number }[] = [];
    try {
      await served(now(), 'before the faults');
      await sleep(1000);
      for (const fault of ['SENTINEL FAILOVER', 'SIGKILL of the master']) {
        await waitFor(
          'the Sentinel group settled (master with its replica in sync)',
          () => groupSettled(sentinels),
          30000,
        );
        const old = await masterAddr(sentinels[0]);
        const sw = await nextSwitch(sentinels[2]);
        const faultAt = now();
        if (fault === 'SENTINEL FAILOVER') {
          assert.equal(await withRedisPort(sentinels[0], (s) => s.call('SENTINEL', 'FAILOVER', 'idmint')), 'OK');
        } else {
          const pid = await withRedisPort(Number(old.split(':')[1]), async (m) =>
            Number(/process_id:(\d+)/.exec(await m.info('server'))![1]),
          );
          process.kill(pid, 'SIGKILL');
        }
        const switchAt = await sw.at;
        sw.close();
        await served(switchAt, `after the ${fault}`);
        const back = now();
        bounds.push({ fault, switchMs: Math.round(switchAt - faultAt), backMs: Math.round(back - switchAt) });
        const promoted = await masterAddr(sentinels[0]);
        assert.notEqual(promoted, old, `${fault}: another server is master`);
        await reportsMaster(promoted);
        await sleep(1500);
      }
      // A busy machine serves fewer IDs in the same time: the checks below need enough of each.
      const idsOf = (tag: string) =>
        answered(load!.records.filter((r) => r.tag === tag)).reduce((n, r) => n + r.ids.length, 0);
      await waitFor(
        'enough IDs for the checks',
        () => idsOf('g') > 2000 && idsOf('n') > 2000 && idsOf('sf') > 1000 && idsOf('r') > 1000,
        60000,
      );
    } finally {
      await load.stop();
    }

    const recs = load.records;
    const of = (tag: string) => recs.filter((r) => r.tag === tag);
    // A snowflake tag refuses with LEASE_LOST once its lease's local deadline passed without a
    // renewal (docs/SNOWFLAKE.md): on a busy machine the killed master's failover can take that long.
    const n503 = assertOnlyCleanUnavailable(recs, {
      what: 'Sentinel failover',
      codeOk: (r) => r.tag === 'sf' && r.code === 'LEASE_LOST',
    });
    const ids = assertGlobalAndNodeOrder(recs, urls);
    assert.ok(ids.global > 2000 && ids.node > 2000, `enough IDs checked (${JSON.stringify(ids)})`);
    const sf = assertNoDuplicates(of('sf'), 'snowflake');
    for (const url of urls)
      assertRealTimeOrder(
        of('sf').filter((r) => r.url === url),
        `snowflake on ${url}`,
      );
    const handovers = assertWorkerIdsNeverShared(of('sf'));
    const rule = assertNoDuplicates(of('r'), 'rule');
    assertClientOrder(of('r'), 'rule');
    assertRealTimeOrder(of('r'), 'rule');
    assert.ok(sf > 1000 && rule > 1000, `enough snowflake and rule IDs checked (${sf}, ${rule})`);
    console.log(JSON.stringify({ ids: { ...ids, snowflake: sf, rule }, n503, handovers, bounds }));
    for (const b of bounds)
      assert.ok(
        b.backMs <= BACK_WITHIN_MS,
        `${b.fault}: service back ${b.backMs} ms after +switch-master, above ${BACK_WITHIN_MS} ms`,
      );
  });
});
