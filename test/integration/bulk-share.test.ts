// suite: cluster
// A bulk take beside single requests gets its share of the process, not all of it
// (src/api/bulk-turns.ts): while the process is asked for single IDs, the take's slices and
// writes are charged to 5 ms windows, and a window that spent its share of them puts the take's
// next turn off to its end. Against real Redis and MySQL, the server in this process: a
// websocket take of many blocks runs while single IDs are asked over HTTP one after another,
// until the turns have put a turn off; the take's blocks still come ascending and whole. And a
// take alone is never put off, whatever its tag's mode: the IDs a snowflake or rule take draws
// are not single requests.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import WebSocket from 'ws';
import { processTurns } from '../../src/api/bulk-turns.js';
import { singlesAskedSoFar } from '../../src/service/id-service.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

const names = testNames();
let node: Awaited<ReturnType<typeof startLocalNode>>;

before(async () => {
  node = await startLocalNode(names, { STREAM_MAX_BUFFER_BYTES: String(64 * 1024 * 1024) });
  await createTag(node.url, { tag: 'bulk', step: 2_000_000, min_step: 1000, max_step: 20_000_000 });
  await createTag(node.url, { tag: 'single' });
  await createTag(node.url, { tag: 'sf', mode: 'snowflake' });
  await createTag(node.url, { tag: 'rule', mode: 'rule', template: 'R{counter:9}', max_counter: 999_999_999 });
  assert.equal((await fetch(`${node.url}/v1/id/single`)).status, 200);
});
after(async () => {
  await node.close();
  await cleanup(names);
});

/** A stream socket of the node, once open. */
async function openStream(): Promise<WebSocket> {
  const ws = new WebSocket(`${node.url.replace(/^http/, 'ws')}/v1/stream`, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** Opens a stream socket, runs one take on it to its done, and answers how many IDs came. */
async function takeAlone(take: Record<string, unknown>): Promise<number> {
  const ws = await openStream();
  let ids = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data: Buffer) => {
        const m = JSON.parse(data.toString()) as { op: string; ids?: string[] };
        if (m.op === 'block') ids += m.ids?.length ?? 0;
        else if (m.op === 'done') resolve();
        else reject(new Error(`take answered ${data.toString()}`));
      });
      ws.once('close', () => reject(new Error('the socket closed before the take was done')));
      ws.send(JSON.stringify({ op: 'take', req: 1, format: 'json', ...take }));
    });
  } finally {
    ws.terminate();
  }
  return ids;
}

// Runs first: the before hook's single request is in no window of the turns yet.
it('never puts off a take of snowflake or rule IDs alone: what it draws is not counted as single requests', async () => {
  const deferredBefore = processTurns.deferred;
  const singlesBefore = singlesAskedSoFar();
  // One ID a frame: thousands of turns, far past a window's share of bulk work.
  assert.equal(await takeAlone({ tag: 'sf', count: 20_000, block: 1 }), 20_000);
  assert.equal(await takeAlone({ tag: 'rule', app: 'shop', count: 5_000, block: 1 }), 5_000);
  assert.equal(singlesAskedSoFar(), singlesBefore, 'the takes were counted as single requests');
  assert.equal(processTurns.deferred, deferredBefore, 'a take alone was put off');
});

it('puts a bulk take turn off while single IDs are asked, and the take stays whole and ascending', async () => {
  const deferredBefore = processTurns.deferred;
  const ws = await openStream();
  // Each binary frame's first and last ID: the blocks ascend, each block's IDs counted.
  let last = -1n;
  let received = 0;
  let done = false;
  const ended = new Promise<void>((resolve, reject) => {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        const count = data.readUInt32LE(4);
        const first = data.readBigUInt64LE(8);
        assert.ok(first > last, `a block starting at ${first} after ${last}`);
        last = data.readBigUInt64LE(8 + 8 * (count - 1));
        assert.ok(last >= first);
        received += count;
      } else if ((JSON.parse(data.toString()) as { op: string }).op === 'done') resolve();
      else reject(new Error(`take answered ${data.toString()}`));
    });
    ws.once('close', () => resolve());
  }).finally(() => {
    done = true;
  });
  ws.send(JSON.stringify({ op: 'take', req: 1, tag: 'bulk', count: 100_000_000, block: 100_000, format: 'binary' }));
  let singles = 0;
  // Until a turn was put off and a block came whole (the first may be the one put off).
  while (!done && (processTurns.deferred === deferredBefore || received === 0)) {
    const res = await fetch(`${node.url}/v1/id/single`);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    singles++;
  }
  assert.ok(processTurns.deferred > deferredBefore, `no turn put off in ${singles} single requests`);
  ws.close();
  await ended;
  assert.ok(received > 0 && received % 100_000 === 0, `whole blocks received: ${received}`);
});
