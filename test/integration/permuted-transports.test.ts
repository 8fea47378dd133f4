// suite: single — one listener per transport on one node; no Redis key layout involved
// A permuted tag over every transport: single IDs and batches over HTTP, gRPC Next and Take,
// the websocket stream in binary and json, UDP; bulk takes deliver IDs (a permuted tag's
// counter runs are not its IDs, so "ranges" is refused), and every ID, whichever transport
// gave it, lies in the domain, is given once, and decodes (admin token, HTTP or gRPC) to a
// counter that increases in the order the IDs were issued.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import { freePort } from '../../tools/child.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { IdsClient, failure } from '../../tools/grpc-client.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { UdpClient } from '../../tools/udp-client.js';

const DIGITS = 8;
const DOMAIN = 10n ** BigInt(DIGITS);

describe('a permuted tag over every transport', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let grpc: IdsClient;
  let udp: UdpClient;
  let client: IdmintClient;
  /** IDs in the order they were issued, with the transport that gave them. */
  const issued: [string, bigint][] = [];
  const note = (transport: string, ids: readonly (string | bigint)[]) => {
    for (const id of ids) issued.push([transport, BigInt(id)]);
  };

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()), UDP_PORT: String(await freePort()) });
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    client = new IdmintClient({ url: node.url });
    await createTag(node.url, { tag: 'perm', permute: { digits: DIGITS }, step: 100, min_step: 50 });
  });
  after(async () => {
    client?.close();
    grpc?.close();
    udp?.close();
    await node?.close();
    await cleanup(names);
  });

  it('serves IDs of the domain on every transport, each once, decoding to counters in issue order', async () => {
    for (let round = 0; round < 3; round++) {
      const one = (await (await fetch(`${node.url}/v1/id/perm`)).json()) as { id: string };
      note('http one', [one.id]);
      note('http batch', await fetchIds(node.url, 'perm', 5));
      note('grpc next', await grpc.next({ tag: 'perm', count: 4 }));
      const take = await grpc.take({ tag: 'perm', count: 300, block: 100 });
      assert.equal(take.error, undefined, take.error?.message);
      for (const b of take.blocks) assert.deepEqual(b.ranges, [], 'IDs, not ranges');
      note(
        'grpc take',
        take.blocks.flatMap((b) => b.ids),
      );
      note('stream binary', await client.take('perm', 300, { format: 'binary', block: 100 }));
      note('stream json', await client.take('perm', 300, { format: 'json', block: 100 }));
      const u = await udp.request(node.udpPort!, { action: 'get', rule_name: 'perm', app_name: 'shop' });
      assert.equal(u.code, 0, JSON.stringify(u));
      note('udp', [String(u.data)]);
    }
    assert.equal(issued.length, 3 * (1 + 5 + 4 + 300 * 3 + 1));
    assert.equal(new Set(issued.map(([, id]) => id)).size, issued.length, 'no ID twice');
    for (const [t, id] of issued) assert.ok(id >= 1n && id < DOMAIN, `${t}: ${id} lies in [1, ${DOMAIN})`);
    let up = 0;
    for (let i = 1; i < issued.length; i++) if (issued[i][1] > issued[i - 1][1]) up++;
    assert.ok(
      up / (issued.length - 1) < 0.7,
      `consecutive IDs are not in numeric order (${up} of ${issued.length - 1} rise)`,
    );
    // Decoding gives the counters back, increasing in issue order (HTTP for all, gRPC for a sample).
    let prev = -1n;
    for (const [t, id] of issued) {
      const r = await fetch(`${node.url}/v1/decode/perm/${id}`, { headers: adminHeaders });
      const d = (await r.json()) as { counter: string };
      assert.equal(r.status, 200, JSON.stringify(d));
      assert.ok(BigInt(d.counter) > prev, `${t}: ${id} decodes to ${d.counter}, after ${prev}`);
      prev = BigInt(d.counter);
    }
    const [, last] = issued.at(-1)!;
    const g = await grpc.decode(
      { tag: 'perm', id: String(last) },
      IdsClient.md({ authorization: `Bearer ${ADMIN_TOKEN}` }),
    );
    assert.equal(g.segment?.seq, String(prev), 'gRPC Decode with the admin token gives the counter');
    assert.equal(
      (await failure(grpc.decode({ tag: 'perm', id: String(last) }))).idmint,
      'UNAUTHORIZED',
      'gRPC Decode without it is refused',
    );
  });

  it('refuses the ranges format, and gives no counter runs', async () => {
    const g = await grpc.take({ tag: 'perm', count: 10, ranges: true });
    assert.match(g.error?.message ?? '', /permuted/);
    await assert.rejects(
      client.take('perm', 10, { format: 'ranges' as 'binary' }),
      (e: unknown) => e instanceof IdmintClientError && /permuted/.test(e.message),
    );
  });
});
