// suite: cluster
// Idempotency keys on every transport of a real node: the HTTP header `Idempotency-Key` on
// GET /v1/id/:tag (which the pre-router path leaves to the route) and GET /v1/ids/:tag, gRPC
// Next's idempotency_key, the websocket take's idempotency_key, the UDP request's
// idempotency_key and the TS client's idempotencyKey option (which retries transient failures
// with the same key). A retry gets the first answer, another request under the key is refused
// with the transport's code for IDEMPOTENCY_KEY_MISMATCH, a bad key is refused, and a caller
// without the tag's token never sees a kept answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

interface HttpAnswer {
  readonly status: number;
  readonly body: { id?: string; ids?: string[]; error?: { code: string; message: string } };
  readonly headers: Headers;
}

describe('idempotency keys on every transport', () => {
  const names = testNames();
  let node: LocalNode;
  let url: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'web' });
    await createTag(url, { tag: 'guarded' });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  async function http(path: string, key?: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    const res = await fetch(`${url}${path}`, { headers: { ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers } });
    const text = await res.text();
    const body = res.headers.get('content-type')?.startsWith('text/plain') ? { id: text } : (JSON.parse(text) as HttpAnswer['body']);
    return { status: res.status, body, headers: res.headers };
  }

  describe('HTTP', () => {
    it('answers GET /v1/ids/:tag again with the first IDs, and refuses the key for another count', async () => {
      const first = await http('/v1/ids/web?count=3', 'h-ids-1');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.ids?.length, 3);
      await http('/v1/ids/web?count=3'); // unkeyed IDs in between
      const again = await http('/v1/ids/web?count=3', 'h-ids-1');
      assert.deepEqual(again.body, first.body);
      const other = await http('/v1/ids/web?count=4', 'h-ids-1');
      assert.equal(other.status, 422);
      assert.equal(other.body.error?.code, 'IDEMPOTENCY_KEY_MISMATCH');
      assert.match(other.body.error!.message, /count 4, not 3/);
    });

    it('answers GET /v1/id/:tag again with the first ID, though the pre-router path serves the tag from memory', async () => {
      // The tag is warm: unkeyed requests are answered in front of the router.
      const unkeyed = [(await http('/v1/id/web')).body.id, (await http('/v1/id/web')).body.id];
      assert.notEqual(unkeyed[0], unkeyed[1]);
      const first = await http('/v1/id/web', 'h-id-1');
      assert.equal(first.status, 200);
      await http('/v1/id/web');
      assert.deepEqual((await http('/v1/id/web', 'h-id-1')).body, first.body);
      // The answer's form is the caller's: text/plain gives the same ID bare.
      assert.equal((await http('/v1/id/web', 'h-id-1', { accept: 'text/plain' })).body.id, first.body.id);
      // The same key on the list route is another request.
      assert.equal((await http('/v1/ids/web?count=1', 'h-id-1')).body.error?.code, 'IDEMPOTENCY_KEY_MISMATCH');
    });

    it('refuses a key that is not 1 to 255 visible ASCII characters, and a keyed batch over 1000', async () => {
      for (const bad of ['with space', 'x'.repeat(256)]) {
        const r = await http('/v1/ids/web?count=1', bad);
        assert.equal(r.status, 400, bad);
        assert.equal(r.body.error?.code, 'INVALID_ARGUMENT');
        assert.match(r.body.error!.message, /idempotency key/);
      }
      const big = await http('/v1/ids/web?count=1001', 'h-big');
      assert.equal(big.status, 400);
      assert.match(big.body.error!.message, /at most 1000 IDs/);
    });

    it('checks the token before a kept answer is given', async () => {
      const res = await fetch(`${url}/v1/admin/tags/guarded/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' });
      const { token } = (await res.json()) as { token: string };
      const auth = { authorization: `Bearer ${token}` };
      const first = await http('/v1/ids/guarded?count=2', 'h-guarded', auth);
      assert.equal(first.status, 200);
      const without = await http('/v1/ids/guarded?count=2', 'h-guarded');
      assert.equal(without.status, 404);
      assert.equal(without.body.error?.code, 'TAG_NOT_FOUND');
      const wrong = await http('/v1/ids/guarded?count=2', 'h-guarded', { authorization: `Bearer ${ADMIN_TOKEN}` });
      assert.equal(wrong.status, 404);
      assert.deepEqual((await http('/v1/ids/guarded?count=2', 'h-guarded', auth)).body, first.body);
    });

    it('serves a kept answer for a tag disabled since, and refuses new keys as any request', async () => {
      await createTag(url, { tag: 'paused' });
      const first = await http('/v1/ids/paused?count=2', 'h-paused');
      const off = await fetch(`${url}/v1/admin/tags/paused`, { method: 'PATCH', headers: adminHeaders, body: '{"enabled":false}' });
      assert.equal(off.status, 200);
      assert.equal((await http('/v1/ids/paused?count=2')).body.error?.code, 'TAG_DISABLED');
      assert.deepEqual((await http('/v1/ids/paused?count=2', 'h-paused')).body, first.body);
      assert.equal((await http('/v1/ids/paused?count=2', 'h-paused-2')).body.error?.code, 'TAG_DISABLED');
    });
  });
});
