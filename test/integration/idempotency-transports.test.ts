// suite: cluster
// Idempotency keys on every transport of a real node: the HTTP header `Idempotency-Key` on
// GET /v1/id/:tag (which the pre-router path leaves to the route) and GET /v1/ids/:tag, gRPC
// Next's idempotency_key, the websocket take's idempotency_key, the UDP request's
// idempotency_key and the TS client's idempotencyKey option (which retries transient failures
// with the same key). A retry gets the first answer, another request under the key is refused
// with the transport's code for IDEMPOTENCY_KEY_MISMATCH, a bad key is refused, and a caller
// without the tag's token never sees a kept answer.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import WebSocket from 'ws';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';

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
    node = await startLocalNode(names, { UDP_PORT: String(await freePort()), GRPC_PORT: String(await freePort()) });
    url = node.url;
    await createTag(url, { tag: 'web' });
    await createTag(url, { tag: 'guarded' });
    await createTag(url, { tag: 'o2o', mode: 'rule', template: '{yyyy}{counter:6}', max_counter: 999999 });
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
  describe('gRPC Next', () => {
    let client: IdsClient;
    before(() => {
      client = new IdsClient(node.grpcPort!);
    });
    after(() => client?.stub.close());

    const failure = async (p: Promise<unknown>): Promise<ServiceError> => {
      try {
        await p;
      } catch (err) {
        return err as ServiceError;
      }
      assert.fail('expected the call to fail');
    };

    it('answers a call again with the first IDs (field or metadata), and fails another request under the key', async () => {
      const first = await client.next({ tag: 'web', count: 3, idempotency_key: 'g-1' });
      assert.equal(first.length, 3);
      await client.next({ tag: 'web', count: 3 });
      assert.deepEqual(await client.next({ tag: 'web', count: 3, idempotency_key: 'g-1' }), first);
      assert.deepEqual(await client.next({ tag: 'web', count: 3 }, IdsClient.md({ 'idempotency-key': 'g-1' })), first);
      const e = await failure(client.next({ tag: 'web', count: 2, idempotency_key: 'g-1' }));
      assert.equal(e.code, status.FAILED_PRECONDITION);
      assert.deepEqual(e.metadata.get('idmint-code'), ['IDEMPOTENCY_KEY_MISMATCH']);
      const bad = await failure(client.next({ tag: 'web', count: 1, idempotency_key: 'no spaces' }));
      assert.equal(bad.code, status.INVALID_ARGUMENT);
      // Without the field (a client of the older schema) every call is a new request.
      const a = await client.next({ tag: 'web', count: 1 });
      assert.notDeepEqual(await client.next({ tag: 'web', count: 1 }), a);
    });
  });

  describe('websocket take', () => {
    /** One take on a new socket: the JSON messages it was answered with, binary blocks as ID lists. */
    async function take(
      msg: Record<string, unknown>,
    ): Promise<{ op: string; code?: string; ids?: string[]; ranges?: string[][] }[]> {
      const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`);
      await new Promise((r, j) => {
        ws.once('open', r);
        ws.once('error', j);
      });
      const got: { op: string; code?: string; ids?: string[]; ranges?: string[][] }[] = [];
      const done = new Promise<void>((resolve) =>
        ws.on('message', (m: Buffer, binary: boolean) => {
          if (binary) {
            const n = m.readUInt32LE(4);
            got.push({ op: 'block', ids: Array.from({ length: n }, (_, i) => String(m.readBigUInt64LE(8 + 8 * i))) });
            return;
          }
          const x = JSON.parse(m.toString()) as { op: string };
          got.push(x);
          if (x.op !== 'block') resolve();
        }),
      );
      ws.send(JSON.stringify({ op: 'take', req: 1, ...msg }));
      await done;
      ws.close();
      return got;
    }
    const idsOf = (msgs: { ids?: string[] }[]) => msgs.flatMap((m) => m.ids ?? []);

    it('answers a take again with the first IDs, in any format and block size, and refuses another count', async () => {
      const first = await take({ tag: 'web', count: 5, block: 2, format: 'json', idempotency_key: 's-1' });
      assert.deepEqual(
        first.map((m) => m.op),
        ['block', 'block', 'block', 'done'],
      );
      const ids = idsOf(first);
      assert.equal(ids.length, 5);
      await take({ tag: 'web', count: 5 });
      assert.deepEqual(idsOf(await take({ tag: 'web', count: 5, format: 'binary', idempotency_key: 's-1' })), ids);
      const ranges = await take({ tag: 'web', count: 5, format: 'ranges', idempotency_key: 's-1' });
      assert.deepEqual(ranges[0].ranges, [[ids[0], ids[4]]]);
      const other = await take({ tag: 'web', count: 6, idempotency_key: 's-1' });
      assert.deepEqual([other[0].op, other[0].code], ['error', 'IDEMPOTENCY_KEY_MISMATCH']);
      const big = await take({ tag: 'web', count: 1001, idempotency_key: 's-2' });
      assert.deepEqual([big[0].op, big[0].code], ['error', 'INVALID_ARGUMENT']);
    });

    it('answers a kept take of a tag disabled since, and refuses new keys there', async () => {
      await createTag(url, { tag: 'wspause' });
      const first = idsOf(await take({ tag: 'wspause', count: 3, format: 'binary', idempotency_key: 's-off' }));
      assert.equal(first.length, 3);
      const off = await fetch(`${url}/v1/admin/tags/wspause`, {
        method: 'PATCH',
        headers: adminHeaders,
        body: '{"enabled":false}',
      });
      assert.equal(off.status, 200);
      assert.deepEqual(
        idsOf(await take({ tag: 'wspause', count: 3, format: 'binary', idempotency_key: 's-off' })),
        first,
      );
      const fresh = await take({ tag: 'wspause', count: 3, idempotency_key: 's-off-2' });
      assert.deepEqual([fresh[0].op, fresh[0].code], ['error', 'TAG_DISABLED']);
      const rule = await take({ tag: 'o2o', app: 'shop', count: 2, format: 'binary', idempotency_key: 's-rule' });
      assert.deepEqual([rule[0].op, rule[0].code], ['error', 'INVALID_ARGUMENT']);
    });
  });

  describe('UDP', () => {
    let c: UdpClient;
    before(async () => {
      c = await UdpClient.open();
    });
    after(() => c?.close());

    const ask = async (body: Record<string, unknown>) =>
      JSON.parse(await c.exchange(node.udpPort!, JSON.stringify(body))) as {
        code: number;
        data?: string;
        message: string;
      };

    it('answers a datagram again with the first ID, and refuses the key with another app', async () => {
      const req = { action: 'get', rule_name: 'o2o', app_name: 'shop', idempotency_key: 'u-1' };
      const first = await ask(req);
      assert.equal(first.code, 0, first.message);
      await ask({ action: 'get', rule_name: 'o2o', app_name: 'shop' });
      assert.equal((await ask(req)).data, first.data);
      const other = await ask({ ...req, app_name: 'web' });
      assert.equal(other.code, -10, other.message);
      assert.equal((await ask({ ...req, idempotency_key: 'two words' })).code, -3);
      assert.equal((await ask({ ...req, idempotency_key: 7 })).code, -3);
      // A client that sends no key (id_server's) gets a new ID each time.
      const plain = { action: 'get', rule_name: 'o2o', app_name: 'shop' };
      assert.notEqual((await ask(plain)).data, (await ask(plain)).data);
    });
  });
  describe('TS client', () => {
    /**
     * A front of the node that handles each request as `plan` says for its attempt number:
     * 'pass' forwards it, 'lose' forwards it and then drops the connection instead of
     * answering (the IDs were issued and kept, the answer lost), 'busy' answers 503 UNAVAILABLE.
     */
    async function front(
      plan: (attempt: number) => 'pass' | 'lose' | 'busy',
    ): Promise<{ url: string; seen: unknown[]; keys: (string | undefined)[]; close(): void }> {
      const seen: unknown[] = [];
      const keys: (string | undefined)[] = [];
      const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
        const step = plan(keys.length);
        keys.push(req.headers['idempotency-key'] as string | undefined);
        if (step === 'busy') {
          res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
          res.end('{"error":{"code":"UNAVAILABLE","message":"busy"}}');
          return;
        }
        const headers: Record<string, string> = {};
        if (req.headers['idempotency-key'] !== undefined)
          headers['idempotency-key'] = req.headers['idempotency-key'] as string;
        void fetch(`${url}${req.url}`, { headers }).then(async (r) => {
          const text = await r.text();
          seen.push(JSON.parse(text));
          if (step === 'lose') req.socket.destroy();
          else {
            res.writeHead(r.status, { 'content-type': 'application/json' });
            res.end(text);
          }
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        seen,
        keys,
        close: () => server.close(),
      };
    }

    it('sends the key, and gets the same IDs again', async () => {
      const client = new IdmintClient({ url });
      try {
        const first = await client.ids('web', 3, { idempotencyKey: 'c-1' });
        assert.deepEqual(await client.ids('web', 3, { idempotencyKey: 'c-1' }), first);
        const one = await client.id('web', { idempotencyKey: 'c-2' });
        assert.equal(await client.id('web', { idempotencyKey: 'c-2' }), one);
        const taken = await client.take('web', 4, { idempotencyKey: 'c-3' });
        assert.deepEqual(await client.take('web', 4, { idempotencyKey: 'c-3', format: 'json' }), taken);
        await assert.rejects(
          client.ids('web', 2, { idempotencyKey: 'c-1' }),
          (e: IdmintClientError) => e.code === 'IDEMPOTENCY_KEY_MISMATCH',
        );
      } finally {
        client.close();
      }
    });

    it('retries a call whose answer was lost with the same key, and gets the IDs of that answer', async () => {
      const f = await front((attempt) => (attempt === 0 ? 'lose' : 'pass'));
      try {
        const ids = await new IdmintClient({ url: f.url }).ids('web', 3, { idempotencyKey: 'c-lost' });
        assert.deepEqual(f.keys, ['c-lost', 'c-lost']);
        assert.deepEqual(
          (f.seen[0] as { ids: string[] }).ids.map(BigInt),
          ids,
          'the answer that was lost is the one given',
        );
      } finally {
        f.close();
      }
    });

    it('retries UNAVAILABLE, at most `retries` times, and never a call without a key', async () => {
      const busy = await front((attempt) => (attempt < 2 ? 'busy' : 'pass'));
      try {
        assert.equal((await new IdmintClient({ url: busy.url }).ids('web', 2, { idempotencyKey: 'c-busy' })).length, 2);
        assert.equal(busy.keys.length, 3);
      } finally {
        busy.close();
      }
      const down = await front(() => 'lose');
      try {
        await assert.rejects(
          new IdmintClient({ url: down.url, retries: 2 }).id('web', { idempotencyKey: 'c-down' }),
          (e: IdmintClientError) => e.code === 'DISCONNECTED',
        );
        assert.equal(down.keys.length, 3, 'the first try and 2 retries');
        await assert.rejects(
          new IdmintClient({ url: down.url }).id('web'),
          (e: IdmintClientError) => e.code === 'DISCONNECTED',
        );
        assert.equal(down.keys.length, 4, 'a call without a key is not retried');
      } finally {
        down.close();
      }
    });
  });
});
