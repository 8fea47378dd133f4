// suite: cluster
// A count that is not a whole number of IDs is refused at the door on every route that takes
// one, and leaves the tag serving. "1e309" reads as Infinity: once, such a count reached the
// coalescer of an order-global tag, was answered ID_SPACE_EXHAUSTED, and left every later
// request of that tag (HTTP, Leaf, UDP, the stream) without an answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

/** A request answered within 10 s, or a failure naming the hang. */
async function answer(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url, { signal: AbortSignal.timeout(10_000) }).catch((err: Error) => {
    throw new Error(`no answer to ${url}: ${err.message}`);
  });
  return { status: r.status, body: await r.text() };
}

describe('counts that are not whole numbers', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { LOG_LEVEL: 'error' });
    await createTag(node.url, { tag: 'tiny', step: 10, min_step: 10, max_id_limit: 60 });
    await createTag(node.url, { tag: 'big' });
  });

  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('refuses count=1e309 (Infinity) with INVALID_ARGUMENT and keeps serving the tag', async () => {
    for (const tag of ['tiny', 'big']) {
      assert.equal((await answer(`${node.url}/v1/id/${tag}`)).status, 200);
      for (const count of ['1e309', '-1e309', '1.5e309']) {
        const r = await answer(`${node.url}/v1/ids/${tag}?count=${count}`);
        assert.equal(r.status, 400, `${tag} count=${count}: ${r.body}`);
        assert.match(r.body, /INVALID_ARGUMENT/);
      }
      const next = await answer(`${node.url}/v1/id/${tag}`);
      assert.equal(next.status, 200, `${tag} after the refusals: ${next.body}`);
      assert.equal(JSON.parse(next.body).id, '2', 'nothing was taken by the refused requests');
    }
  });
});
