// suite: single — one node's cap on running Take calls per client address, no Redis key layout involved
// A client address runs at most GRPC_MAX_TAKES_PER_PEER Take calls at once, over any number
// of channels: 100 calls of 10^8 IDs over 10 channels, never read, and all but the cap are
// refused RESOURCE_EXHAUSTED (idmint code LIMIT_EXCEEDED) with a retry hint, before anything is
// taken for them; once the running calls end, a new call runs again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { IdsClient, type Block } from '../../tools/grpc-client.js';
import { createTag, startLocalNode } from '../../tools/node.js';

const CHANNELS = 10;
const CALLS_PER_CHANNEL = 10;
const PER_PEER = 16;

describe('Take calls per client address', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, {
      GRPC_PORT: String(await freePort()),
      GRPC_MAX_TAKES_PER_PEER: String(PER_PEER),
    });
    await createTag(node.url, { tag: 'flood' });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it(`runs at most ${PER_PEER} at once, refusing the others with RESOURCE_EXHAUSTED and a retry hint`, {
    timeout: 120_000,
  }, async () => {
    const clients = Array.from({ length: CHANNELS }, () => new IdsClient(node.grpcPort!));
    const calls: ClientReadableStream<Block>[] = [];
    const refusals: ServiceError[] = [];
    const refused = new Promise<void>((resolve) => {
      for (const c of clients) {
        for (let i = 0; i < CALLS_PER_CHANNEL; i++) {
          // Never read: no 'data' listener.
          const call = c.stub.Take({ tag: 'flood', count: '100000000', block: 10_000 });
          call.on('error', (e: ServiceError) => {
            if (e.code === status.CANCELLED) return;
            refusals.push(e);
            if (refusals.length === CHANNELS * CALLS_PER_CHANNEL - PER_PEER) resolve();
          });
          calls.push(call);
        }
      }
    });
    try {
      await refused;
      for (const e of refusals) {
        assert.equal(e.code, status.RESOURCE_EXHAUSTED, e.details);
        assert.equal(String(e.metadata.get('idmint-code')[0]), 'LIMIT_EXCEEDED');
        assert.equal(String(e.metadata.get('retry-after')[0]), '1');
        assert.match(e.details, /at most 16 Take calls/);
      }
    } finally {
      for (const call of calls) call.cancel();
    }
    // The cancelled calls leave their places: a take runs again (retried as the hint says).
    const client = clients[0];
    const deadline = Date.now() + 30_000;
    for (;;) {
      const { blocks, error } = await client.take({ tag: 'flood', count: '100', block: 100 });
      if (error === undefined) {
        assert.equal(blocks.flatMap((b) => b.ids).length, 100);
        break;
      }
      assert.equal(error.code, status.RESOURCE_EXHAUSTED, error.details);
      assert.ok(Date.now() < deadline, 'no take ran again after the others were cancelled');
      await new Promise((resolve) => setTimeout(resolve, Number(error.metadata.get('retry-after')[0]) * 100));
    }
    for (const c of clients) c.close();
  });
});
