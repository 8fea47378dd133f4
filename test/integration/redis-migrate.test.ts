// suite: single — moves tags between two private redis-servers
// Moving tags between named Redis servers (REDIS_URLS) under load: two private redis-servers
// "a" and "b" next to the default one (queues, leases); tags of every segment kind move
// back and forth while clients of two processes hammer them. Promises checked over every
// request: no ID answered twice, global-order IDs never below one already answered, node
// order per process, rule counters never restart; the pause stays short; the old server's
// state is retired. Also: the API's refusals, and a move off a server that died.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { assertGlobalAndNodeOrder, clientsPerNode, Load, now, waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

async function move(
  url: string,
  tag: string,
  body: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${url}/v1/admin/tags/${tag}/migrate`, {
    method: 'POST',
    headers: { ...adminHeaders, authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const keysOf = (url: string, pattern: string) => withRedis(url, (r) => r.keys(pattern));

describe('moving tags between Redis servers', () => {
  const names = testNames();
  let a: RedisServer;
  let b: RedisServer;
  const nodes: LocalNode[] = [];

  before(async () => {
    a = await RedisServer.start();
    b = await RedisServer.start();
    for (let i = 0; i < 2; i++) {
      nodes.push(
        await startLocalNode(names, {
          REDIS_URLS: `a=${a.url},b=${b.url}`,
          REFILL_WAIT_MS: '2000',
          NODE_ID: `mv-node-${i}`,
          LOG_LEVEL: 'error',
        }),
      );
    }
    const seg = { mode: 'segment', step: 200, min_step: 100, max_step: 1000, target_seconds: 1 };
    await createTag(nodes[0].url, { tag: 'g', redis: 'a', ...seg });
    await createTag(nodes[0].url, { tag: 'n', redis: 'a', order: 'node', node_block: 50, ...seg });
    await createTag(nodes[0].url, {
      tag: 'r',
      redis: 'a',
      mode: 'rule',
      template: 'R{counter:7}',
      min_counter: 1,
      max_counter: 9_999_999,
      reset_seconds: 0,
    });
    await createTag(nodes[0].url, { tag: 'sf', mode: 'snowflake' });
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names).catch(() => undefined);
    await a.stop();
    await b.stop();
  });

  it('lists the servers with their tags, without credentials', async () => {
    const res = await fetch(`${nodes[0].url}/v1/admin/redis`, { headers: adminHeaders });
    assert.equal(res.status, 200);
    const body = (await res.json()) as {
      redis: { name: string; default: boolean; address: string; status: string; tags: number }[];
    };
    assert.deepEqual(
      body.redis.map((r) => [r.name, r.default, r.tags]),
      [
        ['default', true, 1],
        ['a', false, 3],
        ['b', false, 0],
      ],
    );
    assert.equal(body.redis[1].address, `127.0.0.1:${a.port}`);
    assert.ok(body.redis.every((r) => r.status === 'ready'));
    assert.equal((await fetch(`${nodes[0].url}/v1/admin/redis`)).status, 401);
  });

  it('refuses what it cannot do, with clear errors', async () => {
    const url = nodes[0].url;
    let r = await move(url, 'g', { to: 'nowhere' });
    assert.equal(r.status, 400);
    assert.match(
      String((r.json.error as { message: string }).message),
      /no Redis server is named "nowhere".*"default", "a", "b"/,
    );
    r = await move(url, 'sf', { to: 'b' });
    assert.equal(r.status, 400);
    assert.match(String((r.json.error as { message: string }).message), /snowflake/);
    r = await move(url, 'missing', { to: 'b' });
    assert.equal(r.status, 404);
    r = await move(url, 'g', {});
    assert.equal(r.status, 400);
    r = await move(url, 'g', { to: 'b' }, 'wrong-token-123');
    assert.equal(r.status, 401);
    r = await move(url, 'g', { to: 'a' });
    assert.equal(r.status, 200);
    assert.equal(r.json.moved, false, 'already there: nothing moved');
    const bad = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ tag: 'x', mode: 'segment', redis: 'zz' }),
    });
    assert.equal(bad.status, 400);
  });

  it('moves busy tags back and forth with no duplicate, no step back and a short pause', {
    timeout: 60000,
  }, async () => {
    const load = new Load(
      clientsPerNode(
        nodes.map((n) => n.url),
        ['g', 'n'],
        3,
        3,
      ),
    );
    const ruleIds: string[] = [];
    let ruleRunning = true;
    const ruleLoop = (async () => {
      for (let i = 0; ruleRunning; i++) {
        const res = await fetch(`${nodes[i % 2].url}/v1/ids/r?app=web&count=5`);
        const body = (await res.json()) as { ids?: string[] };
        if (res.status === 200 && body.ids) ruleIds.push(...body.ids);
        else await sleep(20);
      }
    })();
    const served = (t: number) =>
      waitFor('service after a move', () => ['g', 'n'].every((tag) => load.okSince(t, tag).length >= 10), 15000);
    const moves: { tag: string; to: string; pausedMs: number; at: number }[] = [];
    try {
      await served(now());
      for (const [tag, to] of [
        ['g', 'b'],
        ['n', 'b'],
        ['r', 'b'],
        ['g', 'a'],
        ['n', 'default'],
        ['r', 'a'],
      ]) {
        await sleep(700);
        const at = now();
        const r = await move(nodes[moves.length % 2].url, tag, { to });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.json.moved, true);
        assert.equal(r.json.to, to);
        moves.push({ tag, to, pausedMs: Number(r.json.paused_ms), at });
        await served(now());
      }
      await sleep(500);
    } finally {
      ruleRunning = false;
      await ruleLoop;
      await load.stop();
    }

    const recs = load.records;
    const ids = assertGlobalAndNodeOrder(
      recs,
      nodes.map((n) => n.url),
    );
    assert.ok(ids.global > 2000 && ids.node > 2000, `enough IDs checked (${JSON.stringify(ids)})`);
    // The moves did not show: requests in flight followed the tag.
    const failed = recs.filter((r) => r.ids === undefined);
    assert.deepEqual(
      failed.map((r) => `${r.status} ${r.code}`),
      [],
      'no request failed during the moves',
    );
    for (const m of moves) assert.ok(m.pausedMs < 1000, `${m.tag} -> ${m.to} paused ${m.pausedMs} ms`);

    // Rule counters continued across three moves: unique, and the counter never restarted.
    assert.equal(new Set(ruleIds).size, ruleIds.length, 'rule IDs unique');
    assert.ok(ruleIds.length > 100, `enough rule IDs (${ruleIds.length})`);
    const counters = ruleIds.map((s) => Number(s.slice(1)));
    assert.ok(
      counters.some((c) => c > 200),
      'the counter went on past the first segments',
    );

    // Where the state lives now: g on a (epoch 3), n on default, r on a; b holds only markers.
    const prefix = names.prefix;
    assert.deepEqual(
      (await keysOf(b.url, `${prefix}:*:seg:*`)).sort(),
      [],
      'b keeps no segment state after everything left it',
    );
    assert.deepEqual((await keysOf(b.url, `${prefix}:*:moved`)).sort(), [
      `${prefix}:{g}:moved`,
      `${prefix}:{n}:moved`,
      `${prefix}:{r}:moved`,
    ]);
    assert.ok((await keysOf(a.url, `${prefix}:{g}:seg:3:*`)).length === 1, 'g lives on a under epoch 3');
    assert.deepEqual(await keysOf(a.url, `${prefix}:{g}:seg:1:*`), [], 'the state g left on a was dropped');
  });

  it('refuses to move off a server that is down unless forced, then serves from the new one', {
    timeout: 30000,
  }, async () => {
    const url = nodes[0].url;
    await createTag(url, { tag: 'd', redis: 'a', mode: 'segment', step: 100 });
    const before = await fetchIds(url, 'd', 5);
    await a.kill();
    try {
      let r = await move(url, 'd', { to: 'b' });
      assert.equal(r.status, 503);
      assert.match(String((r.json.error as { message: string }).message), /"a" is unreachable.*force/);
      r = await move(url, 'd', { to: 'b', force: true });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      const afterIds = await fetchIds(nodes[1].url, 'd', 5);
      assert.ok(afterIds[0] > before[before.length - 1], `${afterIds[0]} lies above ${before[before.length - 1]}`);
    } finally {
      await a.start();
    }
  });
});
