// The node the websocket stream tests run against: small stream limits (buffer, sockets per
// client, takes in flight, block, count) and the tags they take from; and the witness take a
// test waits on instead of a fixed time, and the check that no ID was handed out twice.
import assert from 'node:assert/strict';
import type { TestNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from './fault-load.js';
import { Probe } from './stream-probe.js';

export const BUFFER_BYTES = 1024 * 1024;
export const MAX_SOCKETS = 8;
export const MAX_IN_FLIGHT = 4;
export const MAX_BLOCK = 65536;
export const MAX_COUNT = 50_000_000;

/**
 * A take of 1,000,000 IDs of the `witness` tag in blocks of 1,000 on a socket of its own, read
 * to its end: a thousand sends, each after a turn of the server's event loop, that must all have
 * happened before it returns. Where a test checks that the server did not do something, it
 * waits for this instead of a fixed time: on a slow machine it takes longer too.
 */
export async function witnessTake(node: StreamNode): Promise<void> {
  const sockets = () => node.app!.websocketServer.clients.size;
  const before = sockets();
  const w = await Probe.open(node.url);
  const r = await w.take({ req: 1, tag: 'witness', count: 1_000_000, block: 1000, format: 'ranges' });
  assert.equal(r.error, undefined);
  assert.equal(
    r.ranges.reduce((n, [a, b]) => n + Number(b - a) + 1, 0),
    1_000_000,
  );
  await w.close();
  // Its place freed, as the tests after it count them.
  await waitFor('the server to close the witness socket', () => sockets() === before, 10_000, 5);
}

/** Asserts that no ID occurs twice among all the lists (IDs below 2^53). */
export function assertDistinct(lists: readonly (readonly bigint[])[]): number {
  let n = 0;
  for (const l of lists) n += l.length;
  const all = new Float64Array(n);
  let i = 0;
  for (const l of lists) for (const v of l) all[i++] = Number(v);
  all.sort();
  for (let j = 1; j < n; j++) if (all[j] === all[j - 1]) assert.fail(`ID ${all[j]} was handed out twice`);
  return n;
}

export type StreamNode = Awaited<ReturnType<typeof startLocalNode>>;

/** A node with the stream limits above and the tags the tests take from. */
export async function startStreamNode(names: TestNames): Promise<StreamNode> {
  const node = await startLocalNode(names, {
    STREAM_MAX_BUFFER_BYTES: String(BUFFER_BYTES),
    STREAM_MAX_SOCKETS_PER_CLIENT: String(MAX_SOCKETS),
    STREAM_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
    STREAM_MAX_BLOCK: String(MAX_BLOCK),
    STREAM_MAX_COUNT: String(MAX_COUNT),
  });
  const url = node.url;
  const big = { step: 2_000_000, min_step: 1000, max_step: 20_000_000 };
  await createTag(url, { tag: 'bulk', ...big });
  await createTag(url, { tag: 'slow', ...big });
  await createTag(url, { tag: 'drop', ...big });
  await createTag(url, { tag: 'witness', ...big });
  await createTag(url, { tag: 'user', layout: 'sharded', shards: 8, app_id: 5, step: 100_000, max_step: 1_000_000 });
  await createTag(url, { tag: 'evt', mode: 'snowflake' });
  await createTag(url, {
    tag: 'day',
    mode: 'rule',
    template: '{yyyy}{MM}{dd}-{counter:6}',
    min_counter: 0,
    max_counter: 999999,
    reset_seconds: 86400,
    time_zone: 'UTC',
  });
  await createTag(url, { tag: 'tiny', step: 100, min_step: 100, max_id_limit: 500 });
  return node;
}
