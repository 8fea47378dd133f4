// suite: cluster
// The gRPC listener of a real node: GRPC_PORT (8082 by default, none with 0, never PORT's), and
// shutdown with calls in flight: a batch answered in full, a Take ended with UNAVAILABLE, new
// calls refused.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import { loadConfig } from '../../src/config.js';
import type { IdService, IdsRequest, IssueRequest } from '../../src/service/id-service.js';
import { cleanup, testNames } from '../../tools/env.js';
import { failure, IdsClient, type Block } from '../../tools/grpc-client.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { idsOf } from '../helpers/answers.js';
import { waitFor } from '../helpers/fault-load.js';
import { ascending, big, unique } from '../helpers/id-lists.js';

/** A batch of the 'slow' tag (segments of 100): about 20 refills one after another. */
const BATCH = 2000;

describe('gRPC listener settings and shutdown', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('listens on GRPC_PORT (default 8082) and not at all with 0', async () => {
    assert.equal(loadConfig({}).grpcPort, 8082);
    assert.throws(() => loadConfig({ PORT: '9000', GRPC_PORT: '9000' }), /GRPC_PORT must differ from PORT/);
    const off = await startLocalNode(names, { GRPC_PORT: '0' });
    try {
      assert.equal(off.grpcPort, undefined);
    } finally {
      await off.close();
    }
  });

  it('finishes calls in flight when closing, ends takes with UNAVAILABLE and refuses new calls', async () => {
    const port = await freePort();
    // A long refill wait: the batch below must not time out on a busy machine.
    const node = await startLocalNode(names, { GRPC_PORT: String(port), REFILL_WAIT_MS: '20000' });
    const client = new IdsClient(port);
    try {
      // Many small segments: a batch needs refill after refill, so it is still running below.
      await createTag(node.url, { tag: 'slow', step: 100, min_step: 100, max_step: 100 });
      await createTag(node.url, { tag: 'bulk', step: 100_000 });
      await client.next({ tag: 'slow' });
      // A take that is read slowly: it is still streaming when the node closes.
      const call = client.stub.Take({ tag: 'bulk', count: 50_000_000, block: 1000 });
      const got: Block[] = [];
      let ended: { code: number; idmint: string; retryAfter: string } | undefined;
      const streamEnded = new Promise<void>((resolve) => {
        call.on('data', (b: Block) => {
          got.push(b);
          call.pause();
          setTimeout(() => call.resume(), 5);
        });
        call.on('error', (e: { code: number; metadata: { get(k: string): unknown[] } }) => {
          ended = {
            code: e.code,
            idmint: String(e.metadata.get('idmint-code')[0]),
            retryAfter: String(e.metadata.get('retry-after')[0]),
          };
          resolve();
        });
        call.on('end', () => resolve());
      });
      await waitFor('three blocks of the take', () => got.length >= 3, 30_000, 10);
      // Closing begins once the server has the batch (a fixed pause was too short on a busy
      // machine: the call had not reached the server, and found the listener closed).
      const reached = new Promise<void>((resolve) => {
        const issue = node.rt.ids.issue.bind(node.rt.ids);
        const watch = (req: IssueRequest) => {
          if (req.tag === 'slow' && req.as === 'ids' && req.count === BATCH) resolve();
          return issue(req as IdsRequest);
        };
        node.rt.ids.issue = watch as IdService['issue'];
      });
      const batch = client.next({ tag: 'slow', count: BATCH });
      const batchDone = batch.then(
        () => performance.now(),
        () => performance.now(),
      );
      await reached;
      await sleep(30);
      const closeStarted = performance.now();
      const closed = node.close();
      const ids = big(await batch);
      assert.equal(ids.length, BATCH, 'the batch in flight is answered in full');
      assert.ok(unique(ids) && ascending(ids));
      assert.ok((await batchDone) > closeStarted, 'the batch was still in flight when closing began');
      await streamEnded;
      assert.deepEqual(ended, { code: status.UNAVAILABLE, idmint: 'UNAVAILABLE', retryAfter: '1' });
      const streamed = idsOf(got);
      assert.ok(
        streamed.length < 50_000_000 && unique(streamed) && ascending(streamed),
        'the blocks before the end stay valid',
      );
      const t0 = performance.now();
      await closed;
      assert.ok(performance.now() - t0 < 8000, 'closing does not wait for the grace period');
      const refused = await failure(client.next({ tag: 'slow' }));
      assert.equal(refused.code, status.UNAVAILABLE);
    } finally {
      client.close();
      await node.close();
    }
  });
});
