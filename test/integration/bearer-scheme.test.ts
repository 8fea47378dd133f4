// suite: cluster
// `Authorization: Bearer <token>` with the scheme in any case (RFC 9110 makes auth schemes
// case-insensitive), for every credential: a tag's client token on the HTTP routes (the
// router's and the pre-router path's request), over gRPC metadata, and the admin token.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { fastIdPath } from '../../src/api/http/fast-path.js';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { failure, IdsClient } from '../../tools/grpc-client.js';

const SCHEMES = ['Bearer', 'bearer', 'BEARER', 'bEaReR'];

describe('the Bearer scheme in any case', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let grpc: IdsClient;
  let token: string;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()), LOG_LEVEL: 'error' });
    grpc = new IdsClient(node.grpcPort!);
    await createTag(node.url, { tag: 'locked', order: 'node' });
    const created = await fetch(`${node.url}/v1/admin/tags/locked/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{}',
    });
    assert.equal(created.status, 201);
    token = ((await created.json()) as { token: string }).token;
  });
  after(async () => {
    grpc?.close();
    await node?.close();
    await cleanup(names);
  });

  it('opens a tag over HTTP: GET /v1/id/:tag (the pre-router path steps aside) and GET /v1/ids/:tag', async () => {
    // The tag's block is at hand, so a request without a token would be the pre-router path's.
    assert.equal((await fetch(`${node.url}/v1/id/locked`, { headers: { 'x-idmint-token': token } })).status, 200);
    const fast = fastIdPath({
      ids: node.rt.ids,
      metrics: node.rt.metrics,
      log: node.rt.log,
      requestId: () => 'req-test',
      open: () => true,
    });
    for (const scheme of SCHEMES) {
      const headers = { authorization: `${scheme} ${token}` };
      const req = { method: 'GET', url: '/v1/id/locked', headers } as unknown as IncomingMessage;
      assert.equal(fast(req, {} as ServerResponse), false, 'a request with a token is the router’s');
      const one = await fetch(`${node.url}/v1/id/locked`, { headers });
      assert.equal(one.status, 200, `${scheme}: ${await one.clone().text()}`);
      assert.match(((await one.json()) as { id: string }).id, /^\d+$/);
      const many = await fetch(`${node.url}/v1/ids/locked?count=3`, { headers });
      assert.equal(many.status, 200, scheme);
      const seg = await fetch(`${node.url}/api/segment/get/locked`, { headers });
      assert.equal(seg.status, 200, `${scheme} (Leaf route)`);
    }
    assert.notEqual(
      (await fetch(`${node.url}/v1/id/locked`, { headers: { authorization: `bearer ${token}x` } })).status,
      200,
    );
    assert.notEqual(
      (await fetch(`${node.url}/v1/id/locked`, { headers: { authorization: `Basic ${token}` } })).status,
      200,
    );
  });

  it('opens a tag over gRPC metadata', async () => {
    for (const scheme of SCHEMES) {
      const md = IdsClient.md({ authorization: `${scheme} ${token}` });
      const ids = await grpc.next({ tag: 'locked', count: 2 }, md);
      assert.equal(ids.length, 2, scheme);
      const { blocks, error } = await grpc.take(
        { tag: 'locked', count: '5' },
        IdsClient.md({ authorization: `${scheme} ${token}` }),
      );
      assert.equal(error, undefined, `${scheme}: ${error?.message}`);
      assert.equal(blocks.flatMap((b) => b.ids).length, 5);
    }
    const wrong = await failure(grpc.next({ tag: 'locked' }, IdsClient.md({ authorization: `bearer ${token}x` })));
    assert.notEqual(wrong.code, 0);
  });

  it('admits the admin token in any case, as before', async () => {
    for (const scheme of SCHEMES) {
      const r = await fetch(`${node.url}/v1/admin/tags`, { headers: { authorization: `${scheme} ${ADMIN_TOKEN}` } });
      assert.equal(r.status, 200, scheme);
    }
  });
});
