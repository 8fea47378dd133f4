// suite: single — the /metrics route's access, no Redis key layout involved
// METRICS_TOKEN: /metrics names every tag (token-protected ones too) with its counts, so with a
// metrics token set it answers only a scrape that sends `Authorization: Bearer <token>` (the
// scheme in any case, as Prometheus's `authorization` setting sends it); without one it is open.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const METRICS_TOKEN = 'scrape-secret-1234';

describe('the metrics token', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { METRICS_TOKEN, LOG_LEVEL: 'error' });
    await createTag(node.url, { tag: 'secretive' });
    assert.equal(
      (await fetch(`${node.url}/v1/admin/tags/secretive/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' }))
        .status,
      201,
    );
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('answers 401 without the token, and the metrics with it', async () => {
    const none = await fetch(`${node.url}/metrics`);
    assert.equal(none.status, 401);
    const body = await none.text();
    assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    assert.ok(!body.includes('secretive'));
    assert.equal(
      (await fetch(`${node.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-000' } })).status,
      401,
    );
    assert.equal((await fetch(`${node.url}/metrics`, { headers: { authorization: METRICS_TOKEN } })).status, 401);
    for (const scheme of ['Bearer', 'bearer']) {
      const ok = await fetch(`${node.url}/metrics`, { headers: { authorization: `${scheme} ${METRICS_TOKEN}` } });
      assert.equal(ok.status, 200, scheme);
      assert.match(await ok.text(), /^# HELP idmint_/m);
    }
  });
});

describe('/metrics without a metrics token', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { LOG_LEVEL: 'error' });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('stays open', async () => {
    assert.equal((await fetch(`${node.url}/metrics`)).status, 200);
  });
});
