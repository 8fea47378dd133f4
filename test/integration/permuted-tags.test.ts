// suite: single — moves a tag to a second named Redis (the run's Redis under another name) and reads MySQL's options column
// Permuted tags against real Redis and MySQL: a tag created through the admin API in one
// idmint process hands out permuted IDs over HTTP (single IDs, through the fast path, and
// batches); a second process, after the first stopped, continues: every ID distinct and in
// the domain, and decode gives back the counters in issue order. The key never appears in an
// admin answer nor in the log; PATCH cannot change the setting; re-creation keeps the key
// (counters continue) and refuses another setting; a move to another Redis keeps it;
// nextSegmentId refuses a permuted tag. Also the tag setting key_retention_seconds: stored, shown
// and patched.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { cleanup, REDIS_URL, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';

const names = testNames();
const VIEWER = 'viewer-token-of-the-test';
const ENV = { LOG_LEVEL: 'debug', REDIS_URLS: `b=${REDIS_URL}`, VIEWER_TOKEN: VIEWER };
const DIGITS = 10;
const DOMAIN = 10n ** BigInt(DIGITS);

async function getId(url: string, tag: string): Promise<bigint> {
  const r = await fetch(`${url}/v1/id/${tag}`);
  const body = (await r.json()) as { id?: string };
  assert.equal(r.status, 200, JSON.stringify(body));
  return BigInt(body.id!);
}

async function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const headers = body === undefined ? { authorization: adminHeaders.authorization } : adminHeaders;
  const r = await fetch(`${url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function decode(
  url: string,
  tag: string,
  id: bigint,
  headers: Record<string, string> = adminHeaders,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${url}/v1/decode/${tag}/${id}`, { headers });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** The key MySQL holds for a tag (the options column), to look for it where it must not be. */
async function storedKey(tag: string): Promise<string> {
  const c = await mysql.createConnection(names.mysqlUrl);
  try {
    const [rows] = await c.query<mysql.RowDataPacket[]>('SELECT options FROM idmint_tags WHERE tag = ?', [tag]);
    const o = JSON.parse(String(rows[0].options)) as { permute?: { key: string } };
    assert.ok(o.permute, `tag "${tag}" has a permutation stored`);
    return o.permute.key;
  } finally {
    await c.end();
  }
}

/** Takes n IDs one at a time and in batches of 7, in issue order. */
async function takeIds(url: string, tag: string, n: number): Promise<bigint[]> {
  const out: bigint[] = [];
  while (out.length < n) {
    out.push(await getId(url, tag));
    out.push(...(await fetchIds(url, tag, 7)));
  }
  return out;
}

describe('permuted tags', () => {
  let first: ChildNode | undefined;
  let second: ChildNode | undefined;
  const output: string[] = [];
  const issued: Record<string, bigint[]> = { orders: [], nodeorders: [] };
  const views: string[] = [];

  before(async () => {
    first = await spawnNode(names, ENV);
    const created = await createTag(first.url, { tag: 'orders', permute: { digits: DIGITS }, step: 50, min_step: 10 });
    views.push(JSON.stringify(created));
    views.push(
      JSON.stringify(
        await createTag(first.url, {
          tag: 'nodeorders',
          order: 'node',
          node_block: 20,
          step: 60,
          min_step: 10,
          permute: { bits: 36 },
        }),
      ),
    );
    for (const tag of Object.keys(issued)) issued[tag].push(...(await takeIds(first.url, tag, 150)));
    await first.stop();
    output.push(...first.output);
    first = undefined;
    second = await spawnNode(names, ENV);
    for (const tag of Object.keys(issued)) issued[tag].push(...(await takeIds(second.url, tag, 150)));
  });

  after(async () => {
    await first?.stop();
    await second?.stop();
    await cleanup(names);
  });

  it('issues distinct IDs of the domain across processes, out of numeric order', () => {
    for (const [tag, ids] of Object.entries(issued)) {
      const max = tag === 'orders' ? DOMAIN : 1n << 36n;
      assert.equal(new Set(ids).size, ids.length, `${tag}: no ID twice`);
      for (const id of ids) assert.ok(id >= 1n && id < max, `${tag}: ${id} lies in [1, ${max})`);
      let up = 0;
      for (let i = 1; i < ids.length; i++) if (ids[i] > ids[i - 1]) up++;
      const share = up / (ids.length - 1);
      assert.ok(share > 0.3 && share < 0.7, `${tag}: share of increasing consecutive IDs ${share}`);
    }
  });

  it('decodes every ID to its counter, increasing in issue order', async () => {
    for (const [tag, ids] of Object.entries(issued)) {
      let prev = 0n;
      for (const id of ids) {
        const d = await decode(second!.url, tag, id);
        assert.equal(d.status, 200, JSON.stringify(d.body));
        const counter = BigInt(d.body.counter as string);
        assert.ok(counter > prev, `${tag}: counter ${counter} of ${id} after ${prev}`);
        assert.equal(d.body.seq, d.body.counter);
        prev = counter;
      }
    }
  });

  it('decodes a permuted ID only with the admin or viewer token, protected tag or not', async () => {
    const url = second!.url;
    const id = issued.orders[0];
    const viewer = await decode(url, 'orders', id, { authorization: `Bearer ${VIEWER}` });
    assert.equal(viewer.status, 200, JSON.stringify(viewer.body));
    for (const headers of [{}, { authorization: 'Bearer not-a-token-of-anyone' }] as Record<string, string>[]) {
      const r = await decode(url, 'orders', id, headers);
      assert.equal(r.status, 401, JSON.stringify(r.body));
      assert.equal((r.body.error as { code: string }).code, 'UNAUTHORIZED');
      assert.match((r.body.error as { message: string }).message, /permuted: decoding one tells its counter/);
    }
    // A protected permuted tag: its client token opens it for IDs, not for decoding.
    await createTag(url, { tag: 'guarded', permute: { digits: 8 } });
    const tok = await admin(url, 'POST', '/v1/admin/tags/guarded/tokens', { name: 'shop' });
    const token = tok.json.token as string;
    const got = await fetch(`${url}/v1/id/guarded`, { headers: { 'x-idmint-token': token } });
    assert.equal(got.status, 200);
    const gid = BigInt(((await got.json()) as { id: string }).id);
    const byClient = await decode(url, 'guarded', gid, { 'x-idmint-token': token });
    assert.equal(byClient.status, 401, JSON.stringify(byClient.body));
    const byNobody = await decode(url, 'guarded', gid, {});
    assert.equal(byNobody.status, 404, 'a protected tag stays hidden from a caller without its token');
    for (const headers of [adminHeaders, { authorization: `Bearer ${VIEWER}` }]) {
      const d = await decode(url, 'guarded', gid, headers);
      assert.equal(d.status, 200, JSON.stringify(d.body));
      assert.equal(d.body.counter, '1');
    }
  });

  it('refuses to decode an ID outside the domain or above the counter limit', async () => {
    const out = await decode(second!.url, 'orders', DOMAIN);
    assert.equal(out.status, 400);
    assert.equal((out.body.error as { code: string }).code, 'INVALID_ARGUMENT');
    assert.match(
      (out.body.error as { message: string }).message,
      /not an ID of tag "orders" \(its permuted IDs lie from 1 to 9999999999\)/,
    );
    await createTag(second!.url, { tag: 'small', permute: { digits: 6 }, max_id_limit: 10 });
    const ids = (await fetchIds(second!.url, 'small', 10)).map(String);
    for (let v = 1n; v < 1_000_000n; v++) {
      if (ids.includes(String(v))) continue;
      const d = await decode(second!.url, 'small', v);
      assert.equal(d.status, 400, JSON.stringify(d.body));
      assert.match((d.body.error as { message: string }).message, /above the tag's max_id_limit 10/);
      break;
    }
    const limit = await fetch(`${second!.url}/v1/id/small`);
    assert.equal(limit.status, 409);
    assert.equal(((await limit.json()) as { error: { code: string } }).error.code, 'ID_SPACE_EXHAUSTED');
  });

  it('shows the setting and the order it promises, never the key, in any admin answer', async () => {
    const key = await storedKey('orders');
    assert.match(key, /^[0-9a-f]{32}$/);
    const nodeKey = await storedKey('nodeorders');
    assert.notEqual(key, nodeKey, 'each tag its own key');
    const one = await admin(second!.url, 'GET', '/v1/admin/tags/orders');
    const list = await admin(second!.url, 'GET', '/v1/admin/tags');
    const patched = await admin(second!.url, 'PATCH', '/v1/admin/tags/orders', { description: 'web shop orders' });
    assert.equal(patched.status, 200);
    assert.deepEqual(one.json.permute, { digits: DIGITS });
    assert.match(String(one.json.id_order), /numeric values follow no order/);
    for (const text of [...views, one.text, list.text, patched.text]) {
      assert.ok(!text.includes(key) && !text.includes(nodeKey), `a key in an admin answer: ${text.slice(0, 200)}`);
      assert.ok(!/"key"/.test(text), `a key field in an admin answer: ${text.slice(0, 200)}`);
    }
    assert.equal(await storedKey('orders'), key, 'an edit keeps the key');
    // The live state shows counters, as allocated_max does.
    const shard = (one.json.state as { shards: { current: { next_id: string } | null }[] }).shards[0];
    assert.ok(BigInt(shard.current!.next_id) < 1000n, JSON.stringify(shard));
  });

  it('keeps the key out of the log', async () => {
    const keys = [await storedKey('orders'), await storedKey('nodeorders')];
    const lines = [...output, ...second!.output];
    assert.ok(
      lines.some((l) => l.includes('tag created')),
      'the log was captured',
    );
    for (const l of lines) for (const k of keys) assert.ok(!l.includes(k), `the key in the log: ${l}`);
  });

  it('refuses to change the setting by PATCH', async () => {
    for (const permute of [{ digits: 12 }, { digits: DIGITS }, null]) {
      const r = await admin(second!.url, 'PATCH', '/v1/admin/tags/orders', { permute });
      assert.equal(r.status, 400, r.text);
      assert.match(r.text, /permute cannot be changed after creation/);
    }
    const plain = await createTag(second!.url, { tag: 'plainorders' });
    assert.equal(plain.permute, undefined);
    const r = await admin(second!.url, 'PATCH', '/v1/admin/tags/plainorders', { permute: { digits: 8 } });
    assert.equal(r.status, 400, r.text);
    const limit = await admin(second!.url, 'PATCH', '/v1/admin/tags/orders', { max_id_limit: String(DOMAIN) });
    assert.equal(limit.status, 400);
    assert.match(limit.text, /does not fit permute/);
  });

  it('refuses settings that do not fit the tag at creation', async () => {
    for (const [body, msg] of [
      [{ tag: 'x', layout: 'sharded', permute: { digits: 12 } }, /layout "plain" only/],
      [{ tag: 'x', stride: 2, permute: { digits: 12 } }, /without interleaving only/],
      [{ tag: 'x', mode: 'snowflake', permute: { digits: 12 } }, /permute applies to segment tags only/],
      [{ tag: 'x', permute: { digits: 19 } }, /permute.digits must be an integer from 6 to 18/],
      [{ tag: 'x', permute: { digits: 8 }, max_id_limit: '100000000' }, /does not fit permute/],
    ] as const) {
      const r = await admin(second!.url, 'POST', '/v1/admin/tags', body);
      assert.equal(r.status, 400, r.text);
      assert.match((r.json.error as { message: string }).message, msg);
    }
  });

  it('re-creation keeps the key and continues the counter; another setting is refused', async () => {
    const url = second!.url;
    await createTag(url, { tag: 'again', permute: { digits: 8 } });
    const key = await storedKey('again');
    const before = await fetchIds(url, 'again', 40);
    assert.equal((await admin(url, 'DELETE', '/v1/admin/tags/again')).status, 204);
    for (const permute of [{ digits: 9 }, undefined]) {
      const r = await admin(url, 'POST', '/v1/admin/tags', { tag: 'again', ...(permute ? { permute } : {}) });
      assert.equal(r.status, 400, r.text);
      assert.match(
        (r.json.error as { message: string }).message,
        /was used before as a segment tag with permute \{"digits":8\}/,
      );
    }
    await createTag(url, { tag: 'again', permute: { digits: 8 } });
    assert.equal(await storedKey('again'), key);
    const afterIds = await fetchIds(url, 'again', 40);
    const all = new Set([...before, ...afterIds]);
    assert.equal(all.size, 80, 'no ID of the earlier life comes back');
    const first = await decode(url, 'again', afterIds[0]);
    const last = await decode(url, 'again', before[39]);
    assert.ok(BigInt(first.body.counter as string) > BigInt(last.body.counter as string));
    // An unpermuted tag cannot come back permuted either.
    await createTag(url, { tag: 'wasplain' });
    await admin(url, 'DELETE', '/v1/admin/tags/wasplain');
    const r = await admin(url, 'POST', '/v1/admin/tags', { tag: 'wasplain', permute: { digits: 8 } });
    assert.equal(r.status, 400, r.text);
    assert.match((r.json.error as { message: string }).message, /was used before as a segment tag without permute/);
  });

  it('a move to another Redis keeps the key: IDs continue, distinct', async () => {
    const url = second!.url;
    const key = await storedKey('orders');
    const moved = await admin(url, 'POST', '/v1/admin/tags/orders/migrate', { to: 'b' });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.json.moved, true);
    assert.equal(await storedKey('orders'), key);
    const more = await takeIds(url, 'orders', 40);
    const all = new Set([...issued.orders, ...more]);
    assert.equal(all.size, issued.orders.length + more.length);
    const counters = [];
    for (const id of [issued.orders.at(-1)!, ...more])
      counters.push(BigInt((await decode(url, 'orders', id)).body.counter as string));
    for (let i = 1; i < counters.length; i++) assert.ok(counters[i] > counters[i - 1]);
  });

  it('nextSegmentId refuses a permuted tag (a client would count unpermuted IDs)', async () => {
    const tok = await admin(second!.url, 'POST', '/v1/admin/tags/nodeorders/tokens', { name: 'tinyid' });
    assert.equal(tok.status, 201, tok.text);
    const r = await fetch(
      `${second!.url}/tinyid/id/nextSegmentId?bizType=nodeorders&token=${tok.json.token as string}`,
    );
    const text = await r.text();
    assert.match(text, /permuted IDs/);
  });

  it('key_retention_seconds: a day by default, shown, changed by PATCH within its bounds', async () => {
    const url = second!.url;
    const t = await admin(url, 'GET', '/v1/admin/tags/plainorders');
    assert.equal(t.json.key_retention_seconds, 86_400);
    const set = await createTag(url, { tag: 'retained', key_retention_seconds: 600 });
    assert.equal(set.key_retention_seconds, 600);
    const p = await admin(url, 'PATCH', '/v1/admin/tags/retained', { key_retention_seconds: 2_592_000 });
    assert.equal(p.status, 200, p.text);
    assert.equal((await admin(url, 'GET', '/v1/admin/tags/retained')).json.key_retention_seconds, 2_592_000);
    for (const v of [59, 2_592_001]) {
      const r = await admin(url, 'PATCH', '/v1/admin/tags/retained', { key_retention_seconds: v });
      assert.equal(r.status, 400);
      assert.match(r.text, /key_retention_seconds must be an integer from 60 to 2592000/);
    }
    const sf = await createTag(url, { tag: 'sf', mode: 'snowflake' });
    assert.equal(sf.key_retention_seconds, 86_400);
  });
});
