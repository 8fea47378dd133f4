// suite: cluster
// Idempotency keys over HTTP on a real node: the header `Idempotency-Key` on GET /v1/id/:tag
// (which the pre-router path leaves to the route) and GET /v1/ids/:tag. A retry gets the first
// answer, another request under the key is refused with 422 IDEMPOTENCY_KEY_MISMATCH, a bad key
// is refused, a caller without the tag's token never sees a kept answer; the tag's retention, the
// answers of every mode, the OpenAPI document, the admin view and a tag disabled since.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag } from '../../tools/node.js';
import { type IdempotencyNode, startIdempotencyNode } from '../helpers/idempotency-node.js';

interface HttpAnswer {
  readonly status: number;
  readonly body: { id?: string; ids?: string[]; error?: { code: string; message: string } };
  readonly headers: Headers;
}

describe('idempotency keys on every transport', () => {
  const names = testNames();
  let node: IdempotencyNode;
  let url: string;

  before(async () => {
    node = await startIdempotencyNode(names);
    url = node.url;
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  async function http(path: string, key?: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
    const res = await fetch(`${url}${path}`, {
      headers: { ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers },
    });
    const text = await res.text();
    const body = res.headers.get('content-type')?.startsWith('text/plain')
      ? { id: text }
      : (JSON.parse(text) as HttpAnswer['body']);
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

    it("keeps a key for the tag's key_retention_seconds, as changed by PATCH", async () => {
      await createTag(node.url, { tag: 'kept', key_retention_seconds: 120 });
      const ttlOf = async (key: string) => {
        const tag = await node.rt.ids.reads.access('kept', undefined);
        return node.rt.redis.pttl(node.rt.keys.idempotencyRecord('kept', tag.epoch, key));
      };
      assert.equal((await http('/v1/ids/kept?count=2', 'ret-1')).status, 200);
      const ttl = await ttlOf('ret-1');
      assert.ok(ttl > 100_000 && ttl <= 120_000, `kept for the tag's 120 s (PTTL ${ttl})`);
      const patched = await fetch(`${node.url}/v1/admin/tags/kept`, {
        method: 'PATCH',
        headers: adminHeaders,
        body: JSON.stringify({ key_retention_seconds: 3600 }),
      });
      assert.equal(patched.status, 200, await patched.text());
      // The next request reads the changed definition (the admin answer came after the change).
      assert.equal((await http('/v1/ids/kept?count=2', 'ret-2')).status, 200);
      const longer = await ttlOf('ret-2');
      assert.ok(longer > 3_500_000 && longer <= 3_600_000, `kept for the changed 3600 s (PTTL ${longer})`);
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
      const res = await fetch(`${url}/v1/admin/tags/guarded/tokens`, {
        method: 'POST',
        headers: adminHeaders,
        body: '{}',
      });
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

    it('keeps the answers of every mode: order node, sharded, snowflake, rule', async () => {
      await createTag(url, { tag: 'near', order: 'node' });
      await createTag(url, { tag: 'split', layout: 'sharded', shards: 4 });
      await createTag(url, { tag: 'flake', mode: 'snowflake' });
      for (const path of [
        '/v1/ids/near?count=3',
        '/v1/ids/split?count=3&key=user-9',
        '/v1/ids/flake?count=3',
        '/v1/ids/o2o?count=3&app=shop&salt=s1',
      ]) {
        const first = await http(path, 'm-1');
        assert.equal(first.status, 200, `${path}: ${JSON.stringify(first.body)}`);
        assert.equal(first.body.ids?.length, 3);
        await http(path); // IDs in between
        assert.deepEqual((await http(path, 'm-1')).body, first.body, path);
      }
      // The shard key and the salt are part of the request.
      assert.equal(
        (await http('/v1/ids/split?count=3&key=user-8', 'm-1')).body.error?.code,
        'IDEMPOTENCY_KEY_MISMATCH',
      );
      assert.equal(
        (await http('/v1/ids/o2o?count=3&app=shop&salt=s2', 'm-1')).body.error?.code,
        'IDEMPOTENCY_KEY_MISMATCH',
      );
    });

    it('describes the header in the OpenAPI document', async () => {
      const doc = (await (await fetch(`${url}/docs/json`)).json()) as {
        paths: Record<string, { get: { parameters: { in: string; name: string }[] } }>;
      };
      for (const path of ['/v1/id/{tag}', '/v1/ids/{tag}'])
        assert.ok(
          doc.paths[path].get.parameters.some((p) => p.in === 'header' && p.name === 'idempotency-key'),
          path,
        );
    });

    it('shows the live keys of a tag on its admin view', async () => {
      await createTag(url, { tag: 'viewed' });
      const held = async () => {
        const r = await fetch(`${url}/v1/admin/tags/viewed`, { headers: adminHeaders });
        return ((await r.json()) as { state: { idempotency_keys: number } }).state.idempotency_keys;
      };
      assert.equal(await held(), 0);
      await http('/v1/ids/viewed?count=1', 'v-1');
      await http('/v1/ids/viewed?count=1', 'v-2');
      await http('/v1/ids/viewed?count=1', 'v-1');
      assert.equal(await held(), 2);
    });

    it('serves a kept answer for a tag disabled since, and refuses new keys as any request', async () => {
      await createTag(url, { tag: 'paused' });
      const first = await http('/v1/ids/paused?count=2', 'h-paused');
      const off = await fetch(`${url}/v1/admin/tags/paused`, {
        method: 'PATCH',
        headers: adminHeaders,
        body: '{"enabled":false}',
      });
      assert.equal(off.status, 200);
      assert.equal((await http('/v1/ids/paused?count=2')).body.error?.code, 'TAG_DISABLED');
      assert.deepEqual((await http('/v1/ids/paused?count=2', 'h-paused')).body, first.body);
      assert.equal((await http('/v1/ids/paused?count=2', 'h-paused-2')).body.error?.code, 'TAG_DISABLED');
    });
  });
});
