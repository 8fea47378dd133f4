// suite: cluster
// A request waiting for a refill keeps the IDs it already holds when a change of its tag is
// announced that leaves the tag's counter where it is (an edit that keeps the epoch, or the
// echo of the tag's own creation reaching its process after the request read it). Before,
// every such announcement failed the waiting requests and ran them again: the IDs they held
// were a gap, and near the tag's limit the rerun was refused as ID_SPACE_EXHAUSTED although
// the tag had room. A change that does move the counter (a delete, a re-create under a new
// epoch, a disable) still sends the waiting requests back to read the definition again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Node } from '../../src/process/serve.js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';

describe('a change announced while a request waits for a refill', () => {
  const names = testNames();
  let proxy: ReplyHoldProxy;
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    proxy = await ReplyHoldProxy.start(Number(new URL(names.mysqlUrl).port || 3306));
    // b serves the requests and runs the refills, reaching MySQL through the proxy; a makes
    // the admin changes, straight to MySQL, and runs no refills of its own.
    b = await startLocalNode(names, {
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/idmint`),
      REFILL_WAIT_MS: '20000',
      TAG_CACHE_MS: '60000',
    });
    a = await spawnNode(names, { REFILL_CONCURRENCY: '0', TAG_CACHE_MS: '60000' });
  });
  after(async () => {
    proxy.release();
    await b.close();
    const code = await a.stop();
    await proxy.close();
    await cleanup(names);
    assert.equal(code, 0);
  });

  /**
   * Sends a request for `count` IDs of `tag`, which takes what the current segment has left and
   * then waits for a refill whose MySQL answers are held; makes `change` meanwhile and gives it
   * time to reach b and the waiting request; then lets MySQL answer.
   */
  async function waitThrough(
    tag: string,
    count: number,
    change: () => Promise<void>,
  ): Promise<bigint[] | { code: string }> {
    const held = proxy.heldChunks;
    proxy.hold();
    try {
      const answer = fetchIds(b.url, tag, count).catch((e: { code: string }) => ({ code: e.code }));
      for (const until = Date.now() + 5000; proxy.heldChunks === held; await sleep(5)) {
        assert.ok(Date.now() < until, 'the refill never reached MySQL');
      }
      await change();
      // Several of the waiting request's polls (at most 50 ms apart) see the announcement.
      await sleep(400);
      proxy.release();
      return await answer;
    } finally {
      proxy.release();
    }
  }

  const patch = (tag: string, body: Record<string, unknown>) => async () => {
    const res = await fetch(`${a.url}/v1/admin/tags/${tag}`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.text());
  };

  it('keeps the IDs it holds through an edit that keeps the epoch, up to the limit', { timeout: 60000 }, async () => {
    // Segments of 10, no early refill: the first request leaves 2..10 in the segment.
    await createTag(a.url, { tag: 'edge', step: 10, min_step: 10, max_step: 10, prefetch: 0.95, max_id_limit: 25 });
    assert.deepEqual(await fetchIds(b.url, 'edge', 1), [1n]);
    const got = await waitThrough('edge', 19, patch('edge', { description: 'edited while a request waits' }));
    assert.deepEqual(
      got,
      Array.from({ length: 19 }, (_, i) => BigInt(i + 2)),
      'the waiting request gets 2..20, its first nine IDs included',
    );
    assert.deepEqual(await fetchIds(b.url, 'edge', 5), [21n, 22n, 23n, 24n, 25n], 'no ID before the limit was lost');
    await assert.rejects(fetchIds(b.url, 'edge', 1), { code: 'ID_SPACE_EXHAUSTED' });
  });

  it('still reads the definition again when the change disables the tag', { timeout: 60000 }, async () => {
    await createTag(a.url, { tag: 'off', step: 10, min_step: 10, max_step: 10, prefetch: 0.95 });
    assert.deepEqual(await fetchIds(b.url, 'off', 1), [1n]);
    const got = await waitThrough('off', 19, patch('off', { enabled: false }));
    assert.deepEqual(got, { code: 'TAG_DISABLED' });
  });

  it('still continues under the new epoch when the tag is deleted and created again', { timeout: 60000 }, async () => {
    await createTag(a.url, { tag: 'again', step: 10, min_step: 10, max_step: 10, prefetch: 0.95 });
    assert.deepEqual(await fetchIds(b.url, 'again', 1), [1n]);
    const got = await waitThrough('again', 19, async () => {
      const res = await fetch(`${a.url}/v1/admin/tags/again`, {
        method: 'DELETE',
        headers: { authorization: adminHeaders.authorization },
      });
      assert.equal(res.status, 204, await res.text());
      await createTag(a.url, { tag: 'again', step: 10, min_step: 10, max_step: 10, prefetch: 0.95 });
    });
    if (!Array.isArray(got)) assert.fail(`answered ${got.code}`);
    assert.equal(got.length, 19);
    for (let i = 1; i < got.length; i++) assert.ok(got[i] > got[i - 1], 'ascending');
  });
});
