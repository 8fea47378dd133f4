// suite: cluster
// The websocket stream (GET /v1/stream) against real Redis and MySQL: exact and unique takes
// in every format, several takes per socket and several sockets, disjoint from HTTP IDs served
// at the same time, and sharded, snowflake and rule tags in the formats that carry them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { fetchIds } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { idsOf } from '../helpers/answers.js';
import { assertDistinct, MAX_BLOCK, startStreamNode, type StreamNode } from '../helpers/stream-node.js';
import { Probe } from '../helpers/stream-probe.js';

describe('websocket stream', () => {
  const names = testNames();
  let node: StreamNode;
  let url: string;

  before(async () => {
    node = await startStreamNode(names);
    url = node.url;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('serves 1,000,000 IDs in each format on one socket, exact, unique and disjoint from HTTP IDs served meanwhile', async () => {
    const p = await Probe.open(url);
    const N = 1_000_000;
    let streaming = true;
    const http: bigint[][] = [];
    const httpLoop = (async () => {
      while (streaming) http.push(await fetchIds(url, 'bulk', 1000));
    })();
    const [bin, json, ranges] = await Promise.all([
      p.take({ req: 1, tag: 'bulk', count: N, block: 50_000, format: 'binary' }),
      p.take({ req: 2, tag: 'bulk', count: N, block: 20_000, format: 'json' }),
      p.take({ req: 3, tag: 'bulk', count: N, block: MAX_BLOCK, format: 'ranges' }),
    ]);
    streaming = false;
    await httpLoop;
    for (const [r, name, block] of [
      [bin, 'binary', 50_000],
      [json, 'json', 20_000],
      [ranges, 'ranges', MAX_BLOCK],
    ] as const) {
      assert.equal(r.error, undefined, `${name}: ${JSON.stringify(r.error)}`);
      assert.ok(r.largestBlock <= block, `${name}: a block of ${r.largestBlock} IDs exceeds ${block}`);
    }
    assert.equal(bin.blocks, 20);
    const lists = [idsOf(bin), idsOf(json), idsOf(ranges)];
    for (const [i, l] of lists.entries()) {
      assert.equal(l.length, N, `take ${i + 1} count`);
      assertIncreasing(l, `take ${i + 1}`);
    }
    assert.ok(ranges.ranges.length < 100, `ranges come as runs (${ranges.ranges.length})`);
    assert.ok(http.length > 0, 'HTTP requests ran during the takes');
    assert.equal(assertDistinct([...lists, ...http]), 3 * N + 1000 * http.length);
    await p.close();
  });

  it('runs several takes in flight on several sockets, all unique', async () => {
    const probes = await Promise.all([1, 2, 3, 4].map(() => Probe.open(url)));
    const formats = ['binary', 'json', 'ranges'] as const;
    const results = await Promise.all(
      probes.flatMap((p, i) =>
        [0, 1, 2].map((j) =>
          p.take({
            req: 10 + j,
            tag: 'bulk',
            count: 200_000 + i * 1000 + j,
            block: 25_000,
            format: formats[(i + j) % 3],
          }),
        ),
      ),
    );
    const lists = results.map((r) => {
      assert.equal(r.error, undefined);
      return idsOf(r);
    });
    lists.forEach((l, k) => assert.equal(l.length, 200_000 + Math.floor(k / 3) * 1000 + (k % 3)));
    assertDistinct(lists);
    await Promise.all(probes.map((p) => p.close()));
  });

  it('serves sharded, snowflake and rule tags in the formats that carry them', async () => {
    const p = await Probe.open(url);
    const [bin, json] = await Promise.all([
      p.take({ req: 1, tag: 'user', key: 'alice', count: 30_000, block: 7000, format: 'binary' }),
      p.take({ req: 2, tag: 'user', key: 'alice', count: 30_000, block: 7000, format: 'json' }),
    ]);
    const [viaHttp] = await fetchIds(url, 'user', 1, '&key=alice');
    const sharded = [idsOf(bin), idsOf(json)];
    for (const l of sharded) {
      assert.equal(l.length, 30_000);
      assertIncreasing(l, 'sharded');
      // shards 8 → 3 shard bits over 8 app bits: every ID of one key shares the low 11 bits.
      for (const id of l) assert.equal(id & 0x7ffn, viaHttp & 0x7ffn);
    }
    assertDistinct([...sharded, [viaHttp]]);
    const refused = await p.take({ req: 3, tag: 'user', key: 'alice', count: 10, format: 'ranges' });
    assert.equal(refused.error?.code, 'INVALID_ARGUMENT');
    assert.match(refused.error!.message, /sharded/);

    const sf = await Promise.all(
      (['binary', 'json', 'ranges'] as const).map((format, i) =>
        p.take({ req: 10 + i, tag: 'evt', count: 100_000, block: 30_000, format }),
      ),
    );
    const sfLists = sf.map((r) => {
      assert.equal(r.error, undefined);
      const l = idsOf(r);
      assert.equal(l.length, 100_000);
      assertIncreasing(l, 'snowflake');
      return l;
    });
    const all = new Set(sfLists.flat());
    assert.equal(all.size, 300_000, 'snowflake IDs are unique');
    // Runs break at tick boundaries only: far fewer runs than IDs.
    assert.ok(sf[2].ranges.length < 100_000 / 100, `snowflake runs: ${sf[2].ranges.length}`);

    const rule = await p.take({ req: 20, tag: 'day', app: 'shop', count: 5000, block: 2000, format: 'json' });
    assert.equal(rule.error, undefined);
    assert.equal(new Set(rule.strings).size, 5000);
    assert.match(rule.strings[0], /^\d{8}-\d{6}$/);
    for (const format of ['binary', 'ranges']) {
      const r = await p.take({ req: 21, tag: 'day', app: 'shop', count: 10, format });
      assert.equal(r.error?.code, 'INVALID_ARGUMENT');
      assert.match(r.error!.message, /"json" only/);
    }
    await p.close();
  });
});
