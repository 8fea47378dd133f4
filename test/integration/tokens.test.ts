// suite: cluster
// Per-tag client tokens: once a tag has one, its IDs are served over HTTP, the websocket
// stream and UDP only to requests carrying a live token; revoking one takes effect at once.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';

describe('client tokens', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;
  let udpPort: number;

  before(async () => {
    udpPort = await freePort();
    node = await startLocalNode(names, { UDP_PORT: String(udpPort) });
    url = node.url;
    await createTag(url, { tag: 'guarded' });
    await createTag(url, { tag: 'open' });
    await createTag(url, { tag: 'rg', mode: 'rule', template: '{yyyy}{counter:6}', max_counter: 999999 });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  const get = (tag: string, headers: Record<string, string> = {}) => fetch(`${url}/v1/id/${tag}`, { headers });
  const code = async (r: Response) => ((await r.json()) as { error?: { code: string } }).error?.code;

  async function udp(body: Record<string, unknown>): Promise<{ code: number; data?: string }> {
    const sock = createSocket('udp4');
    try {
      return await new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no UDP reply')), 3000);
        sock.once('message', (m) => {
          clearTimeout(t);
          resolve(JSON.parse(m.toString()));
        });
        sock.send(JSON.stringify(body), udpPort, '127.0.0.1');
      });
    } finally {
      sock.close();
    }
  }

  /** A take of 5 IDs on a new socket: the token in the take message, or in the upgrade's headers. */
  async function streamTake(
    tag: string,
    token?: string,
    headers: Record<string, string> = {},
  ): Promise<{ op: string; code?: string; ids?: string[] }[]> {
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`, { headers });
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    const got: { op: string; code?: string; ids?: string[] }[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on('message', (m) => {
        const msg = JSON.parse(m.toString());
        got.push(msg);
        if (msg.op === 'done' || msg.op === 'error') resolve();
      }),
    );
    ws.send(JSON.stringify({ op: 'take', req: 1, tag, count: 5, format: 'json', ...(token ? { token } : {}) }));
    await done;
    ws.close();
    return got;
  }

  it('guards every protocol once a tag has a token, and only that tag', async () => {
    assert.equal((await get('guarded')).status, 200, 'a tag without tokens is open');
    const created = await fetch(`${url}/v1/admin/tags/guarded/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"billing"}',
    });
    assert.equal(created.status, 201);
    const { id, token } = (await created.json()) as { id: number; token: string };
    assert.match(token, /^idm_[A-Za-z0-9_-]{20,}$/);

    // Without a valid token the tag answers as a missing one (the exposure policy).
    const none = await get('guarded');
    assert.equal(none.status, 404);
    assert.equal(await code(none), 'TAG_NOT_FOUND');
    assert.equal((await get('guarded', { authorization: 'Bearer idm_wrong' })).status, 404);
    assert.equal((await get('guarded', { authorization: `Bearer ${token}` })).status, 200);
    assert.equal((await get('guarded', { 'x-idmint-token': token })).status, 200);
    assert.equal((await fetch(`${url}/v1/ids/guarded?count=3`, { headers: { 'x-idmint-token': token } })).status, 200);
    assert.equal((await get('open')).status, 200, 'other tags stay open');

    const refused = await streamTake('guarded');
    assert.deepEqual(
      refused.map((m) => [m.op, m.code]),
      [['error', 'TAG_NOT_FOUND']],
    );
    const allowed = await streamTake('guarded', token);
    assert.equal(allowed.filter((m) => m.op === 'block').flatMap((m) => m.ids ?? []).length, 5);
    // The upgrade request's token headers, as on every HTTP route (the TS client sends its
    // headers there): the token of every take that names none.
    for (const headers of [{ 'x-idmint-token': token }, { authorization: `bearer ${token}` }] as Record<
      string,
      string
    >[]) {
      const viaHeader = await streamTake('guarded', undefined, headers);
      assert.equal(
        viaHeader.filter((m) => m.op === 'block').flatMap((m) => m.ids ?? []).length,
        5,
        JSON.stringify(viaHeader),
      );
    }
    const wrongHeader = await streamTake('guarded', undefined, { 'x-idmint-token': 'idm_wrong' });
    assert.deepEqual(
      wrongHeader.map((m) => [m.op, m.code]),
      [['error', 'TAG_NOT_FOUND']],
    );

    assert.equal((await udp({ action: 'get', rule_name: 'guarded', app_name: 'a' })).code, -1);
    const viaUdp = await udp({ action: 'get', rule_name: 'guarded', app_name: 'a', token });
    assert.equal(viaUdp.code, 0);
    assert.match(String(viaUdp.data), /^\d+$/);

    const list = (await (await fetch(`${url}/v1/admin/tags/guarded/tokens`, { headers: adminHeaders })).json()) as {
      tokens: { id: number; name: string }[];
    };
    assert.deepEqual(
      list.tokens.map((t) => [t.id, t.name]),
      [[id, 'billing']],
    );
    assert.ok(!JSON.stringify(list).includes(token), 'a token is shown only when created');

    const revoked = await fetch(`${url}/v1/admin/tags/guarded/tokens/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(revoked.status, 204);
    assert.equal(
      (await get('guarded', { authorization: `Bearer ${token}` })).status,
      200,
      'with no live token left the tag is open again',
    );
    assert.equal(
      (
        await fetch(`${url}/v1/admin/tags/guarded/tokens/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).status,
      404,
    );
  });

  it('keeps a tag guarded while one of its tokens lives, and guards rules over UDP', async () => {
    const mk = async (tag: string) =>
      (await (
        await fetch(`${url}/v1/admin/tags/${tag}/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' })
      ).json()) as {
        id: number;
        token: string;
      };
    const a = await mk('guarded');
    const b = await mk('guarded');
    await fetch(`${url}/v1/admin/tags/guarded/tokens/${a.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(
      (await get('guarded', { authorization: `Bearer ${a.token}` })).status,
      404,
      'a revoked token is refused at once',
    );
    assert.equal((await get('guarded', { authorization: `Bearer ${b.token}` })).status, 200);

    const r = await mk('rg');
    assert.equal((await udp({ action: 'get', rule_name: 'rg', app_name: 'shop' })).code, -1);
    assert.equal((await udp({ action: 'monitor', rule_name: 'rg', app_name: 'shop' })).code, -1);
    assert.equal((await udp({ action: 'get', rule_name: 'rg', app_name: 'shop', token: r.token })).code, 0);
    assert.equal((await fetch(`${url}/v1/id/rg?app=shop`, { headers: { 'x-idmint-token': r.token } })).status, 200);
    assert.equal(
      (await fetch(`${url}/v1/admin/tags/nope/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' })).status,
      404,
    );
    assert.equal(
      (
        await fetch(`${url}/v1/admin/tags/rg/tokens`, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
      401,
    );
  });
});
