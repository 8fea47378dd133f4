// suite: cluster
// Readiness with named Redis servers (REDIS_URLS): a tag moved to server "b", then "b" is
// killed. /readyz stays 200 (the default Redis and MySQL decide readiness) but reports every
// server with its state and `degraded`; idmint_redis_up says which server is down; requests for
// the tag on "b" fail fast with UNAVAILABLE naming the server, while tags elsewhere serve. When
// "b" comes back (empty), all of it recovers, and the tag's IDs continue above the old ones.
// `redis_master` names the address each server's connection talks to (none for "b" while down).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { readyz as readyzWith } from '../helpers/answers.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

interface Ready {
  status: string;
  degraded: boolean;
  checks: Record<string, string>;
  redis_servers: Record<string, string>;
  redis_master: Record<string, string | null>;
}

/** /readyz as the admin sees it (every server named). */
const readyz = (url: string) => readyzWith<Ready>(url, ADMIN_TOKEN);

/** idmint_redis_up per server. */
async function redisUp(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^idmint_redis_up\{server="([^"]+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

describe('readiness reports every Redis server', () => {
  const names = testNames();
  let a: RedisServer;
  let b: RedisServer;
  let node: LocalNode;
  let before_: bigint[] = [];

  before(async () => {
    a = await RedisServer.start();
    b = await RedisServer.start();
    node = await startLocalNode(names, {
      REDIS_URLS: `a=${a.url},b=${b.url}`,
      REFILL_WAIT_MS: '3000',
      LOG_LEVEL: 'error',
    });
    await createTag(node.url, { tag: 'onb', redis: 'a', mode: 'segment', step: 100 });
    await createTag(node.url, { tag: 'ona', redis: 'a', mode: 'segment', step: 100 });
    await createTag(node.url, { tag: 'ondefault', mode: 'segment', step: 100 });
    const res = await fetch(`${node.url}/v1/admin/tags/onb/migrate`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ to: 'b' }),
    });
    assert.equal(res.status, 200, await res.text());
    before_ = await fetchIds(node.url, 'onb', 5);
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    await cleanup(names).catch(() => undefined);
    await a?.stop();
    await b?.stop();
  });

  it('lists every server as ok while all answer', async () => {
    const r = await readyz(node.url);
    assert.equal(r.code, 200, JSON.stringify(r.body));
    const { redis_master: master, ...rest } = r.body;
    assert.deepEqual(rest, {
      status: 'ready',
      degraded: false,
      checks: { redis: 'ok', mysql: 'ok', lease: 'ok' },
      redis_servers: { default: 'ok', a: 'ok', b: 'ok' },
    });
    // The default is REDIS_URL's server or the cluster's masters (host:port, comma-separated).
    assert.match(master.default ?? '', /^[\d.]+:\d+(,[\d.]+:\d+)*$/);
    assert.equal(master.a, `127.0.0.1:${a.port}`);
    assert.equal(master.b, `127.0.0.1:${b.port}`);
    assert.deepEqual(await redisUp(node.url), { default: 1, a: 1, b: 1 });
  });

  it('stays ready but degraded while a named server is down, and says which', async () => {
    await b.kill();
    const r = await waitFor(
      'b reported down',
      async () => {
        const x = await readyz(node.url);
        return x.body.redis_servers.b !== 'ok' && x;
      },
      5000,
    );
    assert.equal(r.code, 200, JSON.stringify(r.body));
    assert.equal(r.body.status, 'ready');
    assert.equal(r.body.degraded, true);
    assert.deepEqual(r.body.checks, { redis: 'ok', mysql: 'ok', lease: 'ok' });
    assert.equal(r.body.redis_servers.default, 'ok');
    assert.equal(r.body.redis_servers.a, 'ok');
    assert.match(r.body.redis_servers.b, /not connected|no answer/);
    assert.equal(r.body.redis_master.b, null, 'no master address while b is down');
    assert.deepEqual(await redisUp(node.url), { default: 1, a: 1, b: 0 });

    // The tag on b fails fast, naming the server; the others serve.
    const t0 = Date.now();
    const res = await fetch(`${node.url}/v1/ids/onb?count=1`);
    const elapsed = Date.now() - t0;
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(res.status, 503);
    assert.equal(body.error.code, 'UNAVAILABLE');
    assert.match(body.error.message, /server "b" of tag "onb"/);
    assert.ok(elapsed < 1000, `the refusal took ${elapsed} ms`);
    assert.equal((await fetchIds(node.url, 'ona', 3)).length, 3);
    assert.equal((await fetchIds(node.url, 'ondefault', 3)).length, 3);
  });

  it('recovers when the server comes back', async () => {
    await b.start();
    const r = await waitFor(
      'b reported ok',
      async () => {
        const x = await readyz(node.url);
        return x.body.redis_servers.b === 'ok' && x;
      },
      10000,
    );
    assert.equal(r.code, 200);
    assert.equal(r.body.degraded, false);
    assert.deepEqual(await redisUp(node.url), { default: 1, a: 1, b: 1 });
    // b came back empty: the tag starts again from MySQL's mark, above what it served before.
    const after_ = await fetchIds(node.url, 'onb', 5);
    assert.ok(after_[0] > before_[before_.length - 1], `${after_[0]} after ${before_[before_.length - 1]}`);
  });
});
