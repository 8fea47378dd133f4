// suite: single — process shutdown under UDP load
// Graceful shutdown of the UDP listener under load: SIGTERM while clients keep asking for IDs
// of a rule in order global (each reply waits for its take from Redis, which a fault proxy
// slows at the signal, so replies are in flight when the listener closes) ends with exit code
// 0 and nothing thrown (a reply sent on the socket after it had closed crashed the process).
// Every reply a client gets is its ID or UNAVAILABLE (the refusal of a node shutting down, cut
// to the datagram's size, for datagrams that arrive while it closes), and no ID is handed out
// twice (a rule's counter is its app's: each client asks as an app of its own).
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { cleanup, REDIS_URL, testNames } from '../../tools/env.js';
import { freePort } from '../../tools/child.js';
import { createTag, spawnNode } from '../../tools/node.js';
import { UdpClient, type Json } from '../../tools/udp-client.js';
import { waitFor } from '../helpers/fault-load.js';
import { UDP_CODES } from '../../src/core/udp-protocol.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';

const CLIENTS = 16;
/** Replies each client has had before the signal goes out. */
const WARM_REPLIES = 200;
/** How long a client waits for a reply before taking the datagram as lost (the socket closed). */
const REPLY_WAIT_MS = 2000;
/** Redis's replies held this long from the signal on: the takes in flight outlast the listener. */
const REDIS_LATENCY_MS = 50;

describe('graceful shutdown under UDP load', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('exits with 0, answers the requests in flight and refuses the late ones as shutting down', async () => {
    const proxy = await FaultProxy.start(Number(new URL(REDIS_URL).port || 6379));
    const node = await spawnNode(names, { UDP_PORT: String(await freePort()), REDIS_URL: proxy.url });
    const port = node.udpPort!;
    await createTag(node.url, {
      tag: 'sdu',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{counter:9}',
      min_counter: 0,
      max_counter: 999_999_999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    const exited = new Promise<number | null>((r) => node.proc.once('exit', (code) => r(code)));
    const ids: string[] = [];
    const refusals: Json[] = [];
    const others: Json[] = [];
    let lost = 0;
    let gone = false;
    const replies = new Array<number>(CLIENTS).fill(0);
    const clients = await Promise.all(Array.from({ length: CLIENTS }, () => UdpClient.open()));
    const loops = clients.map(async (c, i) => {
      for (let seq = 0; !gone; seq++) {
        let reply: Json;
        try {
          const req = JSON.stringify({ action: 'get', rule_name: 'sdu', app_name: `c${i}`, seq });
          reply = JSON.parse(await c.exchange(port, req, REPLY_WAIT_MS)) as Json;
        } catch {
          // Sent after the socket closed: the node is gone for this client.
          lost++;
          return;
        }
        replies[i]++;
        if (reply.code === 0 && reply.seq === seq) ids.push(`${i}:${reply.data as string}`);
        else if (reply.code === UDP_CODES.UNAVAILABLE.code && reply.seq === seq) refusals.push(reply);
        else others.push(reply);
      }
    });
    try {
      await waitFor('replies before the signal', () => replies.every((n) => n >= WARM_REPLIES), 60_000, 10);
      proxy.set({ latencyMs: REDIS_LATENCY_MS }, 'down');
      node.proc.kill('SIGTERM');
      const code = await exited;
      gone = true;
      await Promise.all(loops);
      const crash = node.output.filter((l) => /ERR_SOCKET_DGRAM|Unhandled|^\s+at /.test(l));
      assert.deepEqual(crash, [], 'the process failed while closing');
      assert.equal(code, 0, `exit code ${code}; last lines:\n${node.output.slice(-10).join('\n')}`);
      assert.deepEqual(others.slice(0, 3), [], 'replies that are neither an ID nor a refusal as shutting down');
      assert.equal(new Set(ids).size, ids.length, 'an ID was handed out twice');
      console.log(
        `${ids.length} IDs, ${refusals.length} UNAVAILABLE refusals, ${lost} datagrams unanswered (sent after the socket closed)`,
      );
    } finally {
      gone = true;
      await Promise.all(loops);
      for (const c of clients) c.close();
      await node.kill();
      await proxy.close();
    }
  });
});
