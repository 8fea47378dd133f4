// suite: cluster
// The websocket stream gives the event loop a turn after every block it sends: a take whose
// socket always has room (a buffer bound far above the take) would otherwise send block after
// block in one turn, and hold every other request of the process (single IDs over HTTP and UDP)
// until the whole take had been encoded and written. Against real Redis and MySQL, the server in
// this process: the turns of the event loop during a take are counted.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import WebSocket from 'ws';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

const names = testNames();
let node: Awaited<ReturnType<typeof startLocalNode>>;

before(async () => {
  node = await startLocalNode(names, { STREAM_MAX_BUFFER_BYTES: String(512 * 1024 * 1024) });
  await createTag(node.url, { tag: 'bulk', step: 2_000_000, min_step: 1000, max_step: 20_000_000 });
});
after(async () => {
  await node.close();
  await cleanup(names);
});

it('sends each block of a take in a turn of the event loop of its own, though its socket always has room', async (t) => {
  // The turn of the event loop in which the server sends each binary frame (this process's
  // client sends only text). A chunk of the take holds 100 blocks (COALESCE_MAX's 100,000 IDs).
  let turns = 0;
  let counting = true;
  const turn = () => {
    turns++;
    if (counting) setImmediate(turn);
  };
  setImmediate(turn);
  const sentIn: number[] = [];
  const send = WebSocket.prototype.send;
  t.after(() => {
    WebSocket.prototype.send = send;
    counting = false;
  });
  WebSocket.prototype.send = function (this: WebSocket, ...a: Parameters<WebSocket['send']>) {
    if (typeof a[0] !== 'string') sentIn.push(turns);
    return send.apply(this, a);
  } as WebSocket['send'];

  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream`, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const blocks = 300;
  let ids = 0;
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) ids += data.readUInt32LE(4);
      else if ((JSON.parse(data.toString()) as { op: string }).op === 'done') resolve();
      else reject(new Error(`take answered ${data.toString()}`));
    });
    ws.send(JSON.stringify({ op: 'take', req: 1, tag: 'bulk', count: blocks * 1000, block: 1000, format: 'binary' }));
  });
  ws.close();
  assert.equal(ids, blocks * 1000);
  assert.equal(sentIn.length, blocks);
  const shared = sentIn.filter((turn, i) => i > 0 && turn === sentIn[i - 1]).length;
  assert.equal(
    shared,
    0,
    `${shared} of ${blocks} blocks were sent in the same turn of the event loop as the block before`,
  );
});
