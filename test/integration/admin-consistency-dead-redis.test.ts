// suite: cluster
// A tag moved (forced) off a named Redis that died is served from the new server by the very
// next request, instead of its trying the dead one: once the move answered on the process that
// made it, and once the announcement was delivered on another, checked with bursts of
// concurrent requests over the dispenser itself, HTTP, UDP and the websocket stream.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Node } from '../../src/process/serve.js';
import { cleanup, skipOnCluster, testNames } from '../../tools/env.js';
import { createTag, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { freePort } from '../../tools/child.js';
import { admin, assertAll, Burst } from '../helpers/admin-burst.js';
import { afterChange } from '../helpers/admin-delivery.js';

describe('a tag moved off a named Redis that died is served from the new one by the very next request', {
  skip: skipOnCluster('it starts and kills its own redis-servers'),
}, () => {
  const names = testNames();
  let dead: RedisServer;
  let live: RedisServer;
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    dead = await RedisServer.start();
    live = await RedisServer.start();
    const env = { REDIS_URLS: `old=${dead.url},new=${live.url}`, TAG_CACHE_MS: '60000', REFILL_WAIT_MS: '2000' };
    b = await startLocalNode(names, {
      ...env,
      UDP_PORT: String(await freePort()),
      NODE_ID: 'consistency-mv-b',
      LOG_LEVEL: 'error',
    });
    a = await spawnNode(names, { ...env, NODE_ID: 'consistency-mv-a' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await cleanup(names);
    await dead.stop();
    await live.stop();
    assert.equal(code, 0);
  });

  for (const where of ['same', 'other'] as const) {
    it(where === 'same'
      ? 'on the process that answered the move'
      : 'on another process, once the announcement is delivered', { timeout: 60000 }, async () => {
      for (let round = 0; round < 2; round++) {
        const tag = `mv${where[0]}${round}`;
        await createTag(b.url, { tag, redis: 'old', step: 100, min_step: 100 });
        // The old server is back from the previous round once this process reaches it again.
        for (const until = Date.now() + 15000; ; ) {
          const res = await fetch(`${b.url}/v1/id/${tag}`);
          if (res.status === 200) break;
          assert.ok(Date.now() < until, `the restarted Redis is not served again: ${res.status} ${await res.text()}`);
          await sleep(100);
        }
        const burst = await Burst.open(b, { tag });
        let killed = false;
        try {
          assertAll(await burst.fire(), 'OK', `round ${round}, before the move`);
          assertAll(await burst.fire(), 'OK', `round ${round}, before the move (cached)`);
          await dead.kill();
          killed = true;
          const got = await afterChange(where, b, tag, burst, async () => {
            const res = await admin(where === 'same' ? b.url : a.url, 'POST', `/v1/admin/tags/${tag}/migrate`, {
              to: 'new',
              force: true,
            });
            assert.equal(res.moved, true);
          });
          assertAll(got, 'OK', `round ${round}, after the move`);
        } finally {
          burst.close();
          if (killed) await dead.start();
        }
      }
    });
  }
});
