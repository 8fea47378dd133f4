// suite: single — counts in one node's /metrics; no Redis key layout involved
// Tinyid answers every token refusal alike (code 5, "token is error"), but counts it under the
// code the service gave: with REVEAL_PROTECTED_TAGS=1, a missing token for a tag with client
// tokens is UNAUTHORIZED in idmint_errors_total{transport="tinyid"} (it used to be relabelled
// TAG_NOT_FOUND), and a bizType that is no tag stays TAG_NOT_FOUND.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

describe('Tinyid counts a refusal under the code the service gave', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { REVEAL_PROTECTED_TAGS: '1' });
    await createTag(node.url, { tag: 'tid_guarded', step: 100 });
    const r = await fetch(`${node.url}/v1/admin/tags/tid_guarded/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"tinyid"}',
    });
    assert.equal(r.status, 201);
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  async function counted(code: string): Promise<number> {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    return Number(
      new RegExp(`^idmint_errors_total\\{transport="tinyid",code="${code}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
    );
  }

  it('answers code 5 to both, and counts UNAUTHORIZED and TAG_NOT_FOUND apart', async () => {
    const [unauthorized, notFound] = [await counted('UNAUTHORIZED'), await counted('TAG_NOT_FOUND')];
    for (const bizType of ['tid_guarded', 'tid_missing']) {
      const r = await fetch(`${node.url}/tinyid/id/nextId?bizType=${bizType}`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), '{"data":null,"code":5,"message":"token is error"}', bizType);
    }
    assert.equal(await counted('UNAUTHORIZED'), unauthorized + 1);
    assert.equal(await counted('TAG_NOT_FOUND'), notFound + 1);
  });
});
