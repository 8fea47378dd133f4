// suite: cluster
// Requests after an admin change do not join a read of the tag's definition that began before
// it: with MySQL's answers to that read held back by a proxy, a burst fired when the second
// change is delivered sees the second change, never the definition the earlier read returns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Node } from '../../src/process/serve.js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { createTag, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';
import { admin, assertAll, Burst, issued, REPEAT } from '../helpers/admin-burst.js';
import { announcementsDelivered, onDelivery } from '../helpers/admin-delivery.js';

describe('requests after a change do not join a read that began before it', () => {
  const names = testNames();
  let proxy: ReplyHoldProxy;
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    proxy = await ReplyHoldProxy.start(Number(new URL(names.mysqlUrl).port || 3306));
    // This process reaches MySQL through the proxy; the other process directly.
    const viaProxy = mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/idmint`);
    // It runs no refill worker: a refill transaction held by the proxy would hold the tag's row
    // lock and keep the other process's admin calls waiting past their bound.
    b = await startLocalNode(names, {
      MYSQL_URL: viaProxy,
      UDP_PORT: String(await freePort()),
      TAG_CACHE_MS: '60000',
      NODE_ID: 'consistency-hold-b',
      REFILL_CONCURRENCY: '0',
    });
    a = await spawnNode(names, { NODE_ID: 'consistency-hold-a', TAG_CACHE_MS: '60000' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await proxy.close();
    await cleanup(names);
    assert.equal(code, 0);
  });

  it('a change announced while the definition is being read for an earlier one', { timeout: 60000 }, async () => {
    for (let round = 0; round < REPEAT; round++) {
      const tag = `hold${round}`;
      await createTag(a.url, { tag, order: 'node' });
      const burst = await Burst.open(b, { tag });
      try {
        assertAll(await burst.fire(), 'OK', `round ${round}, before the changes (reading it)`);
        assertAll(await burst.fire(), 'OK', `round ${round}, before the changes (cached)`);
        // Idle pool connections, so that reads go out at once (a new connection's handshake
        // would be held back too).
        await Promise.all(Array.from({ length: 8 }, () => b.rt.pool.query('SELECT 1')));
        // The tag's creation is announced here before the changes.
        await announcementsDelivered(b);

        proxy.hold();
        const heldBefore = proxy.heldChunks;
        // A first change: a request at its delivery starts a read, which MySQL runs at once
        // (it sees the tag still enabled); its answer is held back.
        const early = onDelivery(b, tag, () =>
          issued(b, tag).then(
            () => 'OK',
            (e: { code?: string }) => String(e.code),
          ),
        );
        await admin(a.url, 'PATCH', `/v1/admin/tags/${tag}`, { description: `first change, round ${round}` });
        for (const until = Date.now() + 5000; proxy.heldChunks < heldBefore + 2; ) {
          assert.ok(Date.now() < until, 'the read of the first change never reached MySQL');
          await sleep(5);
        }
        // The second change, announced while that read's answer is still on its way.
        const late = onDelivery(b, tag, () => burst.fire());
        await admin(a.url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false });
        const fired = await Promise.race([late, new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000))]);
        assert.ok(fired, 'the second announcement was not delivered within 5 s');
        // Let the requests after it start their own reads (if they do), then let every answer through.
        await sleep(100);
        proxy.release();
        assertAll(await fired.value, 'TAG_DISABLED', `round ${round}, after the second change`);
        assert.ok(
          ['OK', 'TAG_DISABLED'].includes(await (await early).value),
          'the request before the second change sees either definition',
        );
        assertAll(await burst.fire(), 'TAG_DISABLED', `round ${round}, later`);
      } finally {
        proxy.release();
        burst.close();
      }
    }
  });
});
