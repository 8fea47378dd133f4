// suite: cluster
// Idempotency keys on a real node's other transports: gRPC Next's idempotency_key (or metadata),
// the websocket take's idempotency_key and the UDP request's idempotency_key. A retry gets the
// first answer, another request under the key is refused with the transport's code for
// IDEMPOTENCY_KEY_MISMATCH, a bad key is refused, and a request without a key is a new one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status, type ServiceError } from '@grpc/grpc-js';
import WebSocket from 'ws';
import { cleanup, testNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { adminHeaders, createTag } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';
import { type IdempotencyNode, startIdempotencyNode } from '../helpers/idempotency-node.js';

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
});
