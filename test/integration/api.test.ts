// suite: cluster
// The HTTP API of segment tags against real Redis and MySQL: IDs, batches, text, decode,
// Leaf's route, admin CRUD, and clean 4xx answers for bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames, ADMIN_TOKEN } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';

describe('HTTP API (segment tags)', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'order', mode: 'segment', step: 50, min_step: 10 });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('serves increasing IDs as decimal strings', async () => {
    const a = (await (await fetch(`${url}/v1/id/order`)).json()) as { id: string };
    const b = (await (await fetch(`${url}/v1/id/order`)).json()) as { id: string };
    assert.match(a.id, /^\d+$/);
    assert.ok(BigInt(b.id) > BigInt(a.id));
  });

  it('serves batches across segment boundaries, all distinct and ascending', async () => {
    const ids = await fetchIds(url, 'order', 500);
    assert.equal(ids.length, 500);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1]);
  });

  it('answers text/plain with the bare number, and on the Leaf route', async () => {
    const r = await fetch(`${url}/v1/id/order`, { headers: { accept: 'text/plain' } });
    assert.equal(r.headers.get('content-type')?.startsWith('text/plain'), true);
    assert.match(await r.text(), /^\d+$/);
    const leaf = await fetch(`${url}/api/segment/get/order`);
    assert.match(await leaf.text(), /^\d+$/);
  });

  it('rejects bad input with a 4xx and a code', async () => {
    const cases: [string, number, string][] = [
      ['/v1/id/nope', 404, 'TAG_NOT_FOUND'],
      ['/v1/ids/order?count=0', 400, 'INVALID_ARGUMENT'],
      ['/v1/ids/order?count=10001', 400, 'INVALID_ARGUMENT'],
      ['/v1/ids/order?count=abc', 400, 'INVALID_ARGUMENT'],
      ['/v1/ids/order', 400, 'INVALID_ARGUMENT'],
      [`/v1/id/${'x'.repeat(65)}`, 400, 'INVALID_ARGUMENT'],
      ['/v1/id/bad%20name', 400, 'INVALID_ARGUMENT'],
      ['/v1/decode/order/12x', 400, 'INVALID_ARGUMENT'],
      ['/v1/nothing', 404, 'NOT_FOUND'],
    ];
    for (const [path, status, code] of cases) {
      const r = await fetch(url + path);
      const body = (await r.json()) as { error: { code: string } };
      assert.equal(r.status, status, path);
      assert.equal(body.error.code, code, path);
    }
  });

  it('guards the admin API with the token', async () => {
    const none = await fetch(`${url}/v1/admin/tags`);
    assert.equal(none.status, 401);
    const wrong = await fetch(`${url}/v1/admin/tags`, { headers: { authorization: 'Bearer nope-nope' } });
    assert.equal(wrong.status, 401);
    assert.equal(((await wrong.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    const ok = await fetch(`${url}/v1/admin/tags`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(ok.status, 200);
  });

  it('validates tag definitions', async () => {
    const post = (body: string) => fetch(`${url}/v1/admin/tags`, { method: 'POST', headers: adminHeaders, body });
    for (const body of [
      '{bad',
      '[]',
      '{"tag":"a b"}',
      '{"tag":"x","mode":"nope"}',
      '{"tag":"x","step":0}',
      '{"tag":"x","min_step":10,"max_step":5}',
      '{"tag":"x","colour":"red"}',
    ]) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'INVALID_ARGUMENT', body);
    }
    const dup = await post('{"tag":"order"}');
    assert.equal(dup.status, 409);
    assert.equal(((await dup.json()) as { error: { code: string } }).error.code, 'TAG_EXISTS');
  });

  it('shows live state, updates and disables a tag', async () => {
    const show = (await (await fetch(`${url}/v1/admin/tags/order`, { headers: adminHeaders })).json()) as {
      state: { shards: { redis: string }[] };
    };
    assert.equal(show.state.shards[0].redis, 'ready');
    const patch = await fetch(`${url}/v1/admin/tags/order`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"enabled":false}',
    });
    assert.equal(patch.status, 200);
    const r = await fetch(`${url}/v1/id/order`);
    assert.equal(r.status, 409);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'TAG_DISABLED');
    const immut = await fetch(`${url}/v1/admin/tags/order`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"layout":"sharded"}',
    });
    assert.equal(immut.status, 400);
    await fetch(`${url}/v1/admin/tags/order`, { method: 'PATCH', headers: adminHeaders, body: '{"enabled":true}' });
    assert.equal((await fetch(`${url}/v1/id/order`)).status, 200);
  });

  it('never reissues an ID after a tag is deleted and re-created, even with another layout', async () => {
    await createTag(url, { tag: 'recycled', step: 100, min_step: 10 });
    const before = await fetchIds(url, 'recycled', 250);
    const del = await fetch(`${url}/v1/admin/tags/recycled`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(del.status, 204);
    assert.equal((await fetch(`${url}/v1/id/recycled`)).status, 404);
    await createTag(url, { tag: 'recycled', layout: 'sharded', shards: 4, app_id: 1, step: 100, min_step: 10 });
    const maxBefore = before[before.length - 1];
    for (const key of ['a', 'b', 'c', 'd', 'e']) {
      const [id] = await fetchIds(url, 'recycled', 1, `&key=${key}`);
      assert.ok(id > maxBefore, `${id} must lie above ${maxBefore}`);
    }
  });

  it('packs and decodes the sharded layout', async () => {
    await createTag(url, { tag: 'user', layout: 'sharded', app_id: 3, shards: 64 });
    const [id] = await fetchIds(url, 'user', 1, '&key=alice');
    const d = (await (await fetch(`${url}/v1/decode/user/${id}`)).json()) as {
      app_id: number;
      shard: number;
      seq: string;
    };
    assert.equal(d.app_id, 3);
    assert.ok(d.shard >= 0 && d.shard < 64);
    const again = (await (
      await fetch(`${url}/v1/decode/user/${(await fetchIds(url, 'user', 1, '&key=alice'))[0]}`)
    ).json()) as { shard: number; seq: string };
    assert.equal(again.shard, d.shard, 'a key always maps to the same shard');
    assert.equal(BigInt(again.seq), BigInt(d.seq) + 1n);
    const noKey = await fetch(`${url}/v1/id/user`);
    assert.equal(noKey.status, 400);
  });

  it('answers ID_SPACE_EXHAUSTED at max_id_limit, never above it', async () => {
    await createTag(url, { tag: 'small', step: 10, min_step: 10, max_id_limit: 25 });
    const ids = await fetchIds(url, 'small', 25);
    assert.deepEqual(
      ids,
      Array.from({ length: 25 }, (_, i) => BigInt(i + 1)),
    );
    const r = await fetch(`${url}/v1/id/small`);
    assert.equal(r.status, 409);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'ID_SPACE_EXHAUSTED');
    const raise = await fetch(`${url}/v1/admin/tags/small`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"max_id_limit":30}',
    });
    assert.equal(raise.status, 200);
    const more = await fetchIds(url, 'small', 5);
    assert.deepEqual(more, [26n, 27n, 28n, 29n, 30n]);
    const lower = await fetch(`${url}/v1/admin/tags/small`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"max_id_limit":20}',
    });
    assert.equal(lower.status, 400);
  });
});
