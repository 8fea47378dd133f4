// suite: single — one node's running streams and its own revocation, no Redis key layout involved
// Revoking a client token ends the streams it opened: a websocket take and a gRPC Take of a
// protected tag, read as fast as they come, end with TAG_NOT_FOUND (gRPC NOT_FOUND) before
// their next block once DELETE .../tokens/:id has answered 204. What arrives after that answer
// is at most the block the transport held and the one block being written: the take is checked
// again before each block, not only before each chunk it takes from the store (a chunk is
// COALESCE_MAX IDs, here ten thousand blocks).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status, type ClientReadableStream } from '@grpc/grpc-js';
import WebSocket from 'ws';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { IdsClient, type Block } from '../../tools/grpc-client.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const BLOCK = 1000;
/**
 * Blocks that may arrive after the revocation's answer: one written before it and still in transit, one being written.
 */
const AFTER = 2;

describe('revoking a token ends the streams it opened', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names, {
      GRPC_PORT: String(await freePort()),
      STREAM_MAX_BLOCK: String(BLOCK),
      STREAM_MAX_BUFFER_BYTES: String(64 * 1024),
      COALESCE_MAX: String(10_000 * BLOCK),
    });
    url = node.url;
    await createTag(url, { tag: 'guarded', step: 1_000_000, min_step: 1_000_000 });
    // A token kept throughout: the tag stays protected when the stream's token is revoked (a
    // tag whose last token goes is open to everyone again).
    assert.equal(
      (await fetch(`${url}/v1/admin/tags/guarded/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' }))
        .status,
      201,
    );
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  const newToken = async () => {
    const r = await fetch(`${url}/v1/admin/tags/guarded/tokens`, { method: 'POST', headers: adminHeaders, body: '{}' });
    assert.equal(r.status, 201);
    return (await r.json()) as { id: number; token: string };
  };
  const revoke = async (id: number) => {
    const r = await fetch(`${url}/v1/admin/tags/guarded/tokens/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(r.status, 204);
  };

  it('ends a websocket take with TAG_NOT_FOUND before its next block', async () => {
    const { id, token } = await newToken();
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let blocks = 0;
    let atAnswer = -1;
    let revoking: Promise<void> | undefined;
    const ended = new Promise<{ code: string }>((resolve) => {
      ws.on('message', (data, isBinary) => {
        if (isBinary) {
          blocks++;
          // A few blocks in, the token is revoked while the take runs on.
          if (blocks === 5) revoking = revoke(id).then(() => void (atAnswer = blocks));
          return;
        }
        const m = JSON.parse(String(data)) as { op: string; code: string };
        if (m.op === 'error' || m.op === 'done') resolve(m);
      });
    });
    ws.send(JSON.stringify({ op: 'take', req: 1, tag: 'guarded', count: 50_000_000, block: BLOCK, format: 'binary' }));
    const end = await ended;
    await revoking;
    ws.close();
    assert.equal(end.code, 'TAG_NOT_FOUND', JSON.stringify(end));
    assert.ok(atAnswer >= 5);
    assert.ok(blocks - atAnswer <= AFTER, `${blocks - atAnswer} blocks after the revocation's answer`);
  });

  it('ends a gRPC Take with NOT_FOUND before its next block', async () => {
    const { id, token } = await newToken();
    const client = new IdsClient(node.grpcPort!);
    try {
      const call: ClientReadableStream<Block> = client.stub.Take(
        { tag: 'guarded', count: '50000000', block: BLOCK },
        IdsClient.md({ authorization: `Bearer ${token}` }),
      );
      let blocks = 0;
      let atAnswer = -1;
      let revoking: Promise<void> | undefined;
      const code = await new Promise<number>((resolve) => {
        call.on('data', () => {
          blocks++;
          if (blocks === 5) revoking = revoke(id).then(() => void (atAnswer = blocks));
        });
        call.on('error', (e: { code: number }) => resolve(e.code));
        call.on('end', () => resolve(status.OK));
      });
      await revoking;
      assert.equal(code, status.NOT_FOUND);
      assert.ok(atAnswer >= 5);
      assert.ok(blocks - atAnswer <= AFTER, `${blocks - atAnswer} blocks after the revocation's answer`);
    } finally {
      client.close();
    }
  });
});
