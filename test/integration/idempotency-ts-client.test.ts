// suite: cluster
// Idempotency keys in the TS client on a real node: the idempotencyKey option sends the key and
// gets the same IDs again, and the client retries a lost answer or UNAVAILABLE with the same key,
// at most `retries` times, and never a call without a key.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import { cleanup, testNames } from '../../tools/env.js';
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
