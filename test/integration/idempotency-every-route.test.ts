// suite: cluster
// No transport ignores an idempotency key: Leaf's routes and Tinyid's nextId keep and replay it,
// Tinyid's nextSegmentId (a block the client serves itself) refuses it naming the header, gRPC
// Take honours the `idempotency-key` metadata, and a keyed `ranges` take of a permuted tag is
// refused as an unkeyed one is. A tag that holds IDEMPOTENCY_MAX_KEYS keys answers a new key
// with a retry hint on every transport: Retry-After over HTTP, retry-after metadata over gRPC,
// retry_after in the websocket's error frame, the seconds in the UDP reply's message.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { IdmintClient } from '../../src/client/index.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

async function get(url: string, key?: string): Promise<{ status: number; text: string; retryAfter: string | null }> {
  const res = await fetch(url, { headers: key === undefined ? {} : { 'idempotency-key': key } });
  return { status: res.status, text: await res.text(), retryAfter: res.headers.get('retry-after') };
}

/** One take on a new socket: its JSON frames (binary blocks are not asked for here). */
async function wsTake(url: string, msg: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`);
  await new Promise((r, j) => {
    ws.once('open', r);
    ws.once('error', j);
  });
  const frames: Record<string, unknown>[] = [];
  const done = new Promise<void>((r) =>
    ws.on('message', (m: Buffer) => {
      const f = JSON.parse(m.toString()) as Record<string, unknown>;
      frames.push(f);
      if (f.op === 'done' || f.op === 'error') r();
    }),
  );
  ws.send(JSON.stringify({ op: 'take', req: 1, format: 'json', ...msg }));
  await done;
  ws.close();
  return frames;
}

describe('an idempotency key on every route', () => {
  const names = testNames();
  let node: LocalNode;
  let grpc: IdsClient;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()) });
    grpc = new IdsClient(node.grpcPort!);
    await createTag(node.url, { tag: 'leafy' });
    await createTag(node.url, { tag: 'flakes', mode: 'snowflake' });
    await createTag(node.url, { tag: 'tiny', order: 'node' });
    await createTag(node.url, { tag: 'mixed', permute: { digits: 6 } });
  });
  after(async () => {
    grpc?.close();
    await node?.close();
    await cleanup(names);
  });

  it('Leaf’s routes keep and replay the key', async () => {
    for (const path of ['/api/segment/get/leafy', '/api/snowflake/get/flakes']) {
      const first = await get(`${node.url}${path}`, `leaf-${path}`);
      assert.equal(first.status, 200, first.text);
      assert.notEqual((await get(`${node.url}${path}`)).text, first.text);
      assert.equal(
        (await get(`${node.url}${path}`, `leaf-${path}`)).text,
        first.text,
        `${path}: the replay is the first ID`,
      );
    }
  });

  it('Tinyid’s nextId keeps and replays the key; nextSegmentId refuses it naming the header', async () => {
    const url = `${node.url}/tinyid/id/nextId?bizType=tiny&batchSize=3`;
    const first = JSON.parse((await get(url, 'tiny-1')).text) as { data: number[]; code: number };
    assert.equal(first.code, 200);
    assert.equal(first.data.length, 3);
    await get(url);
    assert.deepEqual((JSON.parse((await get(url, 'tiny-1')).text) as { data: number[] }).data, first.data);
    const seg = JSON.parse((await get(`${node.url}/tinyid/id/nextSegmentId?bizType=tiny`, 'tiny-2')).text) as {
      code: number;
      message: string;
    };
    assert.notEqual(seg.code, 200);
    assert.match(seg.message, /Idempotency-Key header.*not to counter runs or held blocks/);
    assert.equal(
      (JSON.parse((await get(`${node.url}/tinyid/id/nextSegmentId?bizType=tiny`)).text) as { code: number }).code,
      200,
    );
  });

  it('gRPC Take honours the idempotency-key metadata', async () => {
    const md = () => IdsClient.md({ 'idempotency-key': 'take-1' });
    const first = await grpc.take({ tag: 'leafy', count: '4' }, md());
    assert.equal(first.error, undefined, String(first.error));
    const ids = first.blocks.flatMap((b) => b.ids);
    assert.equal(ids.length, 4);
    await grpc.take({ tag: 'leafy', count: '4' });
    assert.deepEqual(
      (await grpc.take({ tag: 'leafy', count: '4', block: 1 }, md())).blocks.flatMap((b) => b.ids),
      ids,
    );
    const other = await grpc.take({ tag: 'leafy', count: '5' }, md());
    assert.deepEqual(other.error?.metadata.get('idmint-code'), ['IDEMPOTENCY_KEY_MISMATCH']);
  });

  it('refuses a keyed ranges take of a permuted tag, as an unkeyed one', async () => {
    for (const key of [undefined, 'perm-1']) {
      const frames = await wsTake(node.url, {
        tag: 'mixed',
        count: 3,
        format: 'ranges',
        ...(key ? { idempotency_key: key } : {}),
      });
      assert.deepEqual([frames[0].op, frames[0].code], ['error', 'INVALID_ARGUMENT'], `key ${key}`);
      assert.match(String(frames[0].message), /permuted/);
    }
  });
});

describe('a full tag of idempotency keys answers a retry hint on every transport', () => {
  const names = testNames();
  let node: LocalNode;
  let grpc: IdsClient;
  let udp: UdpClient;

  before(async () => {
    node = await startLocalNode(names, {
      IDEMPOTENCY_MAX_KEYS: '1',
      UDP_PORT: String(await freePort()),
      GRPC_PORT: String(await freePort()),
    });
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    await createTag(node.url, { tag: 'fullrule', mode: 'rule', template: 'F{counter:6}', max_counter: 999999 });
    assert.equal((await get(`${node.url}/v1/ids/fullrule?count=1&app=shop`, 'the-one')).status, 200);
  });
  after(async () => {
    grpc?.close();
    udp?.close();
    await node?.close();
    await cleanup(names);
  });

  it('HTTP: 429 with Retry-After', async () => {
    const a = await get(`${node.url}/v1/ids/fullrule?count=1&app=shop`, 'more');
    assert.equal(a.status, 429);
    assert.ok(Number(a.retryAfter) >= 1, `Retry-After ${a.retryAfter}`);
  });

  it('gRPC: RESOURCE_EXHAUSTED with retry-after metadata', async () => {
    const e = await grpc.next({ tag: 'fullrule', count: 1, app: 'shop', idempotency_key: 'more' }).then(
      () => assert.fail('answered'),
      (err: { metadata: { get(k: string): unknown[] } }) => err,
    );
    assert.deepEqual(e.metadata.get('idmint-code'), ['IDEMPOTENCY_KEYS_FULL']);
    assert.ok(Number(e.metadata.get('retry-after')[0]) >= 1);
  });

  it('websocket: the error frame carries retry_after', async () => {
    const frames = await wsTake(node.url, { tag: 'fullrule', app: 'shop', count: 1, idempotency_key: 'more' });
    assert.equal(frames[0].code, 'IDEMPOTENCY_KEYS_FULL');
    assert.ok(Number(frames[0].retry_after) >= 1, JSON.stringify(frames[0]));
  });

  it('UDP: the reply’s message says in how many seconds to retry', async () => {
    // A refusal is never longer than its datagram (UDP.md, reply size): the request is padded
    // with a field the protocol does not echo, so the whole message fits.
    const request = {
      action: 'get',
      rule_name: 'fullrule',
      app_name: 'shop',
      idempotency_key: 'more',
      pad: 'x'.repeat(200),
    };
    const reply = JSON.parse(await udp.exchange(node.udpPort!, JSON.stringify(request))) as {
      code: number;
      message: string;
    };
    assert.equal(reply.code, -7);
    assert.match(reply.message, /retry in \d+ s/);
  });
});

describe('the TS client and a key another request holds', () => {
  const names = testNames();
  let node: LocalNode;

  before(async () => {
    // A short wait: the server answers IDEMPOTENCY_KEY_IN_FLIGHT before the claim below expires.
    node = await startLocalNode(names, { REFILL_WAIT_MS: '200' });
    await createTag(node.url, { tag: 'held' });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('retries IDEMPOTENCY_KEY_IN_FLIGHT with the key, and is answered once the claim is gone', async () => {
    const tag = await node.rt.ids.prepare({ tag: 'held', as: 'ids', count: 1 });
    // A claim as a request of a process that died after taking would leave it, for 1.2 s.
    const records = new IdempotencyRecords(node.rt.segments, node.rt.keys);
    const claimed = await records.claim(tag, {
      key: 'c-1',
      fingerprint: '[2,"ids",null,null,null]',
      owner: 'gone',
      claimMs: 1200,
      maxKeys: 100,
      maxBytes: 1 << 20,
      chargeBytes: 600,
    });
    assert.equal(claimed.kind, 'claimed');
    const busy = await get(`${node.url}/v1/ids/held?count=2`, 'c-1');
    assert.equal(busy.status, 409, busy.text);
    assert.match(busy.text, /IDEMPOTENCY_KEY_IN_FLIGHT/);
    const client = new IdmintClient({ url: node.url });
    const ids = await client.ids('held', 2, { idempotencyKey: 'c-1' });
    assert.equal(ids.length, 2);
    assert.deepEqual(await client.ids('held', 2, { idempotencyKey: 'c-1' }), ids);
    client.close();
  });
});
