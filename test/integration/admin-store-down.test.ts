// suite: single — MySQL cut off through a proxy
// An admin call that cannot reach MySQL (its connection cut, a new one left unanswered, or a
// transaction held past its bound) answers 503 UNAVAILABLE, which says "retry", within its
// bound; never 500 INTERNAL, which says idmint is broken. Once MySQL is back the same call
// succeeds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';

describe('admin calls while MySQL is away', () => {
  const names = testNames();
  let proxy: TcpProxy;
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    proxy = await TcpProxy.start(Number(new URL(names.mysqlUrl).port || 3306));
    node = await startLocalNode(names, {
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/idmint`),
    });
    await createTag(node.url, { tag: 'adm' });
  });
  after(async () => {
    proxy.unblock();
    await node?.close();
    await proxy?.close();
    await cleanup(names);
  });

  it('answer 503 UNAVAILABLE, not 500, and succeed once MySQL is back', { timeout: 90_000 }, async () => {
    const patch = () =>
      fetch(`${node.url}/v1/admin/tags/adm`, {
        method: 'PATCH',
        headers: adminHeaders,
        body: JSON.stringify({ description: 'changed' }),
        signal: AbortSignal.timeout(60_000),
      });
    proxy.block();
    try {
      for (const call of [
        patch,
        () =>
          fetch(`${node.url}/v1/admin/tags`, {
            method: 'POST',
            headers: adminHeaders,
            body: JSON.stringify({ tag: 'adm2' }),
          }),
      ]) {
        const r = await call();
        const body = (await r.json()) as { error?: { code: string } };
        assert.equal(r.status, 503, JSON.stringify(body));
        assert.equal(body.error?.code, 'UNAVAILABLE');
      }
    } finally {
      proxy.unblock();
    }
    const r = await patch();
    assert.equal(r.status, 200, await r.text());
  });
});
