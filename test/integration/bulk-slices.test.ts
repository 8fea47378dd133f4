// suite: cluster
// A single-ID request is answered between the slices of a large block of a bulk take, on the
// websocket stream and on gRPC Take: a block of 500,000 (stream) or 200,000 (gRPC) IDs is
// encoded a slice at a time, each slice in a turn of the event loop of its own, so a request
// that comes while a block is being encoded waits one slice, not the block. Against real Redis
// and MySQL, the server in this process: when the server writes a take's first block, an HTTP
// request for a single ID is sent, and its answer must come before the server writes the take's
// second block (encoded at once, the second block would be written in the next turn, well
// before). The socket bound is far above the take, so no block waits for room. The take's IDs
// still come exact, ascending and unique. Beside single requests a binary block's slices are
// written as fragments of at least FRAGMENT_BYTES each, not one a slice.
import assert from 'node:assert/strict';
import { after, before, it, type TestContext } from 'node:test';
import WebSocket from 'ws';
import { ServerWritableStreamImpl } from '@grpc/grpc-js/build/src/server-call.js';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { FRAGMENT_BYTES } from '../../src/api/ws/fragmented-writes.js';

const names = testNames();
let node: Awaited<ReturnType<typeof startLocalNode>>;

before(async () => {
  node = await startLocalNode(names, {
    GRPC_PORT: String(await freePort()),
    STREAM_MAX_BLOCK: '500000',
    STREAM_MAX_BUFFER_BYTES: String(512 * 1024 * 1024),
  });
  await createTag(node.url, { tag: 'bulk', step: 2_000_000, min_step: 1000, max_step: 20_000_000 });
  await createTag(node.url, { tag: 'single' });
  // The single tag's first refill, and a keep-alive connection, before the takes.
  assert.equal((await fetch(`${node.url}/v1/id/single`)).status, 200);
});
after(async () => {
  await node.close();
  await cleanup(names);
});

/**
 * What the server does in order: 'block' as it writes each block of a take, 'answer' when the
 * single request sent at its first block is answered (the answer's ID kept in `single`).
 */
class Order {
  readonly events: string[] = [];
  single: string | undefined;

  /** Notes a block written; at the first, sends the single request. */
  block(): void {
    this.events.push('block');
    if (this.events.length > 1) return;
    void fetch(`${node.url}/v1/id/single`).then(async (res) => {
      assert.equal(res.status, 200);
      this.single = ((await res.json()) as { id: string }).id;
      this.events.push('answer');
    });
  }
}

/** Whether a websocket send's options end its message (ws's `fin`, true unless given false). */
const lastFragment = (options: unknown): boolean =>
  typeof options !== 'object' || options === null || (options as { fin?: boolean }).fin !== false;

/**
 * Calls `seen` with each binary message or fragment a websocket of this process sends (its
 * bytes and whether it ends its message) before sending it, until the test ends.
 */
function onBinarySend(t: TestContext, seen: (bytes: Buffer, last: boolean) => void): void {
  const send = WebSocket.prototype.send;
  t.after(() => {
    WebSocket.prototype.send = send;
  });
  WebSocket.prototype.send = function (this: WebSocket, ...a: Parameters<WebSocket['send']>) {
    if (typeof a[0] !== 'string') seen(a[0] as Buffer, lastFragment(a[1]));
    return send.apply(this, a);
  } as WebSocket['send'];
}

/** Connects a websocket to the node's stream. */
async function openStream(): Promise<WebSocket> {
  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream`, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** Takes `count` IDs of the bulk tag in binary blocks of `block` on `ws`; answers them. */
async function takeBinary(ws: WebSocket, count: number, block: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) for (let i = 0; i < data.readUInt32LE(4); i++) ids.push(data.readBigUInt64LE(8 + 8 * i));
      else if ((JSON.parse(data.toString()) as { op: string }).op === 'done') resolve();
      else reject(new Error(`take answered ${data.toString()}`));
    });
    ws.send(JSON.stringify({ op: 'take', req: 1, tag: 'bulk', count, block, format: 'binary' }));
  });
  return ids;
}

it('answers a single request between the slices of a block of 500,000 IDs on the websocket stream', async (t) => {
  const order = new Order();
  // A block's frame is written in fragments (fragmented-writes.ts): the block is written with its last.
  onBinarySend(t, (_bytes, last) => {
    if (last) order.block();
  });

  const ws = await openStream();
  const ids = await takeBinary(ws, 1_000_000, 500_000);
  ws.close();
  assert.deepEqual(order.events, ['block', 'answer', 'block']);
  assert.ok(order.single !== undefined && /^[0-9]+$/.test(order.single));
  assert.equal(ids.length, 1_000_000);
  assertIncreasing(ids, 'stream take');
});

it("answers a single request between the fragments of one block's write on the websocket stream", async (t) => {
  // The single request goes out as the first fragment of the take's one block (400 KB) is
  // written; its answer must come before the block's last fragment is (written at once, the
  // block's first write would be its last, and the answer would come after).
  const events: string[] = [];
  let single: Promise<void> | undefined;
  onBinarySend(t, (_bytes, last) => {
    if (single === undefined) {
      events.push('first write');
      single = fetch(`${node.url}/v1/id/single`).then(async (res) => {
        assert.equal(res.status, 200);
        assert.match(((await res.json()) as { id: string }).id, /^[0-9]+$/);
        events.push('answer');
      });
    }
    if (last) events.push('last write');
  });

  const ws = await openStream();
  // A single request answered before the take: the process is serving single requests, so the
  // block is cut into fragments (a take alone writes its blocks whole).
  assert.equal((await fetch(`${node.url}/v1/id/single`)).status, 200);
  const ids = await takeBinary(ws, 50_000, 50_000);
  ws.close();
  await single;
  assert.deepEqual(events, ['first write', 'answer', 'last write']);
  assert.equal(ids.length, 50_000);
  assertIncreasing(ids, 'stream take');
});

it('writes a binary block beside single requests in fragments of at least FRAGMENT_BYTES, not one a slice', async (t) => {
  // A write costs the process mostly its call, not its bytes: a block's encoded slices go out
  // four at a time (FRAGMENT_BYTES), so a block of 50,000 IDs (400 KB) is 13 writes, not 49.
  // A single request sent at each write keeps the process serving single requests, so the
  // block is cut all through.
  const sizes: number[] = [];
  const singles: Promise<void>[] = [];
  onBinarySend(t, (bytes) => {
    sizes.push(bytes.length);
    singles.push(fetch(`${node.url}/v1/id/single`).then((res) => assert.equal(res.status, 200)));
  });

  const ws = await openStream();
  assert.equal((await fetch(`${node.url}/v1/id/single`)).status, 200);
  const ids = await takeBinary(ws, 50_000, 50_000);
  ws.close();
  await Promise.all(singles);
  const bytes = 8 + 8 * 50_000;
  assert.equal(
    sizes.reduce((a, b) => a + b, 0),
    bytes,
  );
  assert.ok(sizes.length > 1, `the block was written whole: ${sizes.join(', ')}`);
  assert.ok(
    sizes.slice(0, -1).every((size) => size >= FRAGMENT_BYTES),
    `a fragment under ${FRAGMENT_BYTES} bytes before the last: ${sizes.join(', ')}`,
  );
  assert.ok(sizes.length <= Math.ceil(bytes / FRAGMENT_BYTES), `${sizes.length} writes: ${sizes.join(', ')}`);
  assert.equal(ids.length, 50_000);
  assertIncreasing(ids, 'stream take');
});

it('answers a single request between the slices of a block of 200,000 IDs on gRPC Take', async (t) => {
  const order = new Order();
  const proto = ServerWritableStreamImpl.prototype as { write: (...a: unknown[]) => boolean };
  const write = proto.write;
  t.after(() => {
    proto.write = write;
  });
  proto.write = function (this: unknown, ...a: unknown[]) {
    order.block();
    return write.apply(this, a);
  };

  const client = new IdsClient(node.grpcPort!);
  t.after(() => client.close());
  const { blocks, error } = await client.take({ tag: 'bulk', count: '400000', block: 200_000 });
  assert.equal(error, undefined);
  assert.deepEqual(order.events, ['block', 'answer', 'block']);
  const ids = blocks.flatMap((b) => b.ids.map(BigInt));
  assert.equal(ids.length, 400_000);
  assertIncreasing(ids, 'gRPC take');
});
