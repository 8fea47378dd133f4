// suite: single — counts in one node's /metrics; no Redis key layout involved
// Refusals answered outside idmint's own handlers are counted in idmint_errors_total with
// their transport all the same, their answers unchanged: a plain GET of the websocket stream
// (no upgrade) and a websocket protocol error (a message over 16 KiB, closed with 1009) under
// `stream`; a gRPC request over the server's message limit, refused by grpc-js itself, under
// `grpc`; an error Bull Board's own error handler answers under `http`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import WebSocket from 'ws';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { failure, IdsClient } from '../../tools/grpc-client.js';
import { startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

describe('refusals answered outside idmint’s handlers are counted', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()) });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  /** idmint_errors_total{transport, code} as /metrics shows it (0 before the first). */
  async function counted(transport: string, code: string): Promise<number> {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    const m = new RegExp(`^idmint_errors_total\\{transport="${transport}",code="${code}"\\} (\\d+)$`, 'm').exec(text);
    return Number(m?.[1] ?? 0);
  }

  /** Waits until the count has grown by `by` from `from`, and checks it grew no further. */
  async function grown(transport: string, code: string, from: number, by = 1): Promise<void> {
    const now = await waitFor(
      `idmint_errors_total{transport="${transport}",code="${code}"} to reach ${from + by}`,
      async () => {
        const n = await counted(transport, code);
        return n >= from + by ? n : undefined;
      },
      10_000,
    );
    assert.equal(now, from + by);
  }

  it('counts a plain GET /v1/stream (no upgrade) as the stream’s, its answer unchanged', async () => {
    const [stream, http] = [await counted('stream', 'INVALID_ARGUMENT'), await counted('http', 'INVALID_ARGUMENT')];
    const r = await fetch(`${node.url}/v1/stream`);
    assert.equal(r.status, 400);
    assert.deepEqual(await r.json(), {
      error: {
        code: 'INVALID_ARGUMENT',
        message: 'GET /v1/stream is the websocket stream: open it with "Upgrade: websocket" (see docs/STREAM.md)',
      },
    });
    await grown('stream', 'INVALID_ARGUMENT', stream);
    assert.equal(await counted('http', 'INVALID_ARGUMENT'), http, 'not counted as idmint’s HTTP API');
  });

  it('counts a websocket protocol error (a message over 16 KiB) under stream', async () => {
    const before = await counted('stream', 'INVALID_ARGUMENT');
    const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream`);
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => {});
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send('x'.repeat(17 * 1024));
    assert.equal(await closed, 1009);
    await grown('stream', 'INVALID_ARGUMENT', before);
  });

  it('counts a gRPC request over the message limit, refused by grpc-js, under grpc', async () => {
    const before = await counted('grpc', 'INVALID_ARGUMENT');
    const client = new IdsClient(node.grpcPort!);
    try {
      const f = await failure(client.next({ tag: 'x'.repeat(70 * 1024), count: 1 }));
      assert.equal(f.code, status.RESOURCE_EXHAUSTED);
      assert.match(f.details, /larger than max/);
      assert.equal(f.idmint, '', 'grpc-js’s own answer, as before');
    } finally {
      client.close();
    }
    await grown('grpc', 'INVALID_ARGUMENT', before);
  });

  it('counts an error Bull Board answers itself under http, its answer unchanged', async () => {
    const before = await counted('http', 'INVALID_ARGUMENT');
    const r = await fetch(`${node.url}/admin/queues/api/queues/refill/add`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"name":',
    });
    assert.equal(r.status, 400);
    const body = (await r.json()) as { error: { key: string } };
    assert.deepEqual(body.error, { key: 'ERRORS.INTERNAL_SERVER_ERROR' }, 'Bull Board’s own error body');
    await grown('http', 'INVALID_ARGUMENT', before);
  });
});
