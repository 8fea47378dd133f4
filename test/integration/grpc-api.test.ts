// suite: cluster
// The gRPC API (idmint.v1.Ids, proto/idmint/v1/ids.proto) against real Redis and MySQL, through
// a client generated from the shipped proto: IDs of every mode, the Take stream's blocks and
// ranges, Decode, each error as its status code with the idmint code, client tokens and the
// calls counted in /metrics.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { cleanup, testNames } from '../../tools/env.js';
import { failure, IdsClient } from '../../tools/grpc-client.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { idsOf } from '../helpers/answers.js';
import { waitFor } from '../helpers/fault-load.js';
import { ascending, big, unique } from '../helpers/id-lists.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

describe('gRPC API', () => {
  const names = testNames();
  let node: LocalNode;
  let client: IdsClient;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()) });
    assert.ok(node.grpcPort);
    client = new IdsClient(node.grpcPort);
    await createTag(node.url, { tag: 'g', step: 1000, min_step: 100 });
    await createTag(node.url, { tag: 'n', order: 'node', step: 1000, min_step: 100 });
    await createTag(node.url, { tag: 'sh', layout: 'sharded', shards: 4, app_id: 5, step: 1000, min_step: 100 });
    await createTag(node.url, { tag: 'sf', mode: 'snowflake' });
    await createTag(node.url, { tag: 'odd', order: 'node', stride: 2, offset: 1, step: 1000, min_step: 100 });
    await createTag(node.url, { tag: 'r', mode: 'rule', template: '{app}-{salt}-{counter:6}', max_counter: 999999 });
  });
  after(async () => {
    client?.close();
    await node?.close();
    await cleanup(names);
  });

  it('serves unique IDs of every mode, single and batched, alongside HTTP', async () => {
    // order global: every answer is larger than every answer before it, over HTTP or gRPC.
    const seen: bigint[] = [];
    for (let i = 0; i < 20; i++) {
      seen.push(...big(await client.next({ tag: 'g' })));
      seen.push(...(await fetchIds(node.url, 'g', 3)));
      seen.push(...big(await client.next({ tag: 'g', count: 7 })));
    }
    assert.equal(seen.length, 20 * 11);
    assert.ok(ascending(seen), 'order global increases across gRPC and HTTP');
    const concurrent = (await Promise.all(Array.from({ length: 200 }, () => client.next({ tag: 'g' })))).flat();
    assert.ok(unique(concurrent) && big(concurrent).every((v) => v > seen[seen.length - 1]));

    // order node, snowflake: unique and increasing within this process, count 0 meaning 1.
    for (const tag of ['n', 'sf']) {
      const ids: bigint[] = [];
      for (let i = 0; i < 50; i++) {
        const one = await client.next({ tag, count: 0 });
        assert.equal(one.length, 1);
        ids.push(...big(one), ...big(await client.next({ tag, count: 10 })));
      }
      ids.push(...big((await Promise.all(Array.from({ length: 200 }, () => client.next({ tag })))).flat()));
      assert.equal(ids.length, 50 * 11 + 200);
      assert.ok(unique(ids), `${tag}: unique`);
      assert.ok(ascending(ids.slice(0, 550)), `${tag}: increasing in this process`);
    }

    // sharded with a key: the key picks the shard, every ID decodes to this tag.
    const sharded = [
      ...(await client.next({ tag: 'sh', key: 'alice', count: 100 })),
      ...(await client.next({ tag: 'sh', key: 'bob' })),
    ];
    assert.ok(unique(sharded));
    const da = await client.decode({ tag: 'sh', id: sharded[0] });
    const db = await client.decode({ tag: 'sh', id: sharded[99] });
    assert.equal(da.segment!.app_id, 5);
    assert.equal(db.segment!.shard, da.segment!.shard, 'one key, one shard');
    assert.equal(BigInt(db.segment!.seq), BigInt(da.segment!.seq) + 99n);

    // rule with app and salt.
    const r = await client.next({ tag: 'r', app: 'shop', salt: 'x1', count: 5 });
    assert.deepEqual(
      r.map((id) => id.slice(0, 8)),
      Array(5).fill('shop-x1-'),
    );
    assert.ok(unique(r));
    const r2 = await client.next({ tag: 'r', app: 'shop' });
    assert.match(r2[0], /^shop--\d{6}$/);
  });

  it('streams a take in blocks of at most `block` IDs, as IDs or as ranges', async () => {
    const before = (await fetchIds(node.url, 'g', 1))[0];
    const plain = await client.take({ tag: 'g', count: 25_000, block: 10_000 });
    assert.equal(plain.error, undefined);
    assert.deepEqual(
      plain.blocks.map((b) => b.ids.length),
      [10_000, 10_000, 5_000],
    );
    const ids = idsOf(plain.blocks);
    assert.ok(ascending(ids) && ids[0] > before);
    const afterIt = (await fetchIds(node.url, 'g', 1))[0];
    assert.ok(afterIt > ids[ids.length - 1], 'order global holds across the stream');

    const ranged = await client.take({ tag: 'g', count: 250_000, block: 100_000, ranges: true });
    assert.equal(ranged.error, undefined);
    assert.ok(ranged.blocks.every((b) => b.ids.length === 0 && b.ranges.length >= 1));
    const rIds = idsOf(ranged.blocks);
    assert.equal(rIds.length, 250_000);
    assert.ok(ascending(rIds) && rIds[0] > afterIt);
    for (const b of ranged.blocks) {
      assert.ok(b.ranges.reduce((n, r) => n + Number(BigInt(r.last) - BigInt(r.first) + 1n), 0) <= 100_000);
    }

    const sf = await client.take({ tag: 'sf', count: 5_000, block: 1_000, ranges: true });
    assert.equal(sf.error, undefined);
    const sfIds = idsOf(sf.blocks);
    assert.equal(sfIds.length, 5_000);
    assert.ok(ascending(sfIds));

    const shard = await client.take({ tag: 'sh', key: 'carol', count: 3_000 });
    assert.equal(shard.error, undefined);
    assert.equal(idsOf(shard.blocks).length, 3_000);
    assert.ok(ascending(idsOf(shard.blocks)));
    const rule = await client.take({ tag: 'r', app: 'bulk', count: 1_500, block: 500 });
    assert.deepEqual(
      rule.blocks.map((b) => b.ids.length),
      [500, 500, 500],
    );
    assert.ok(unique(rule.blocks.flatMap((b) => b.ids)));

    // Ranges of sharded, interleaved and rule tags cannot be sent: refused before anything is taken.
    for (const req of [
      { tag: 'sh', key: 'a', count: 10, ranges: true },
      { tag: 'odd', count: 10, ranges: true },
      { tag: 'r', app: 'a', count: 10, ranges: true },
    ]) {
      const refused = await client.take(req);
      assert.equal(refused.blocks.length, 0);
      assert.equal(refused.error?.code, status.INVALID_ARGUMENT);
      assert.equal(refused.error?.metadata.get('idmint-code')[0], 'INVALID_ARGUMENT');
    }
    const noCount = await client.take({ tag: 'g' });
    assert.equal(noCount.error?.code, status.INVALID_ARGUMENT);
  });

  it('takes no faster than the client reads, and stops taking once the call is cancelled', async () => {
    await createTag(node.url, { tag: 'bp', step: 100_000 });
    await createTag(node.url, { tag: 'witness', step: 100_000 });
    // A Take of 1,000,000 IDs in blocks of 1,000 read to its end: a thousand writes of the
    // server that must all have happened before it returns. Where this test checks that the
    // server did not take on, it waits for this instead of a fixed time (a slow machine is slow at both).
    // On a connection of its own: nothing of the paused call's flow control in its way.
    const witnessTake = async () => {
      const other = new IdsClient(node.grpcPort!);
      try {
        const w = await other.take({ tag: 'witness', count: 1_000_000, block: 1000 });
        assert.equal(w.error, undefined);
        assert.equal(idsOf(w.blocks).length, 1_000_000);
      } finally {
        other.close();
      }
    };
    const start = (await fetchIds(node.url, 'bp', 1))[0];
    const call = client.stub.Take({ tag: 'bp', count: 5_000_000, block: 10_000 });
    let blocks = 0;
    call.on('data', () => {
      blocks++;
      call.pause(); // and never resumed: the client stops reading
    });
    const ended = new Promise<number>((resolve) => {
      call.on('error', (e: { code: number }) => resolve(e.code));
      call.on('end', () => resolve(status.OK));
    });
    await waitFor('the first block', () => blocks > 0, 10_000, 5);
    await witnessTake(); // time for a server that did not wait for the client to run ahead
    const a = (await fetchIds(node.url, 'bp', 1))[0];
    // Bounded by STREAM_MAX_BUFFER_BYTES (4 MiB: about 190,000 IDs), one chunk of 100,000 taken
    // ahead, and what HTTP/2's windows hold; 5,000,000 if the server wrote without waiting.
    assert.ok(a - start < 1_000_000n, `the take went on to ${a - start} IDs while the client read ${blocks} blocks`);
    const cancelled = /^idmint_grpc_request_duration_seconds_count\{method="Take",code="CANCELLED"\} (\d+)/m;
    const cancelledTakes = async () =>
      Number(cancelled.exec(await (await fetch(`${node.url}/metrics`)).text())?.[1] ?? 0);
    const cancelledBefore = await cancelledTakes();
    call.cancel();
    assert.equal(await ended, status.CANCELLED);
    // The server's take has seen the cancellation and stopped.
    await waitFor(
      'the server to end the cancelled take',
      async () => (await cancelledTakes()) > cancelledBefore,
      10_000,
    );
    const b = (await fetchIds(node.url, 'bp', 1))[0];
    await witnessTake(); // time for a take that went on to show
    const c = (await fetchIds(node.url, 'bp', 1))[0];
    assert.equal(c, b + 1n, 'nothing is taken for a cancelled call');
  });

  it('decodes as GET /v1/decode/:tag/:id does', async () => {
    for (const [tag, query] of [
      ['sh', '&key=dave'],
      ['sf', ''],
      ['g', ''],
    ] as const) {
      const [id] = await fetchIds(node.url, tag, 1, query);
      const http = (await (await fetch(`${node.url}/v1/decode/${tag}/${id}`)).json()) as Record<string, unknown>;
      const d = await client.decode({ tag, id: String(id) });
      assert.equal(d.mode, http.mode);
      assert.equal(d.id, http.id);
      if (d.mode === 'snowflake') {
        const sf = d.snowflake;
        assert.ok(sf, 'a snowflake ID has snowflake parts');
        assert.deepEqual(
          { ...sf, time: Number(sf.time) },
          { timestamp: http.timestamp, time: http.time, worker_id: http.worker_id, sequence: http.sequence },
        );
        assert.equal(d.parts, 'snowflake');
        assert.equal(d.segment, undefined);
      } else {
        assert.equal(d.parts, 'segment');
        assert.deepEqual(d.segment, {
          seq: http.seq,
          shard: http.shard,
          app_id: http.app_id,
          stride: http.stride,
          offset: http.offset,
          counter: http.counter,
        });
      }
    }
    const rule = await failure(client.decode({ tag: 'r', id: '1' }));
    assert.equal(rule.code, status.INVALID_ARGUMENT);
    for (const id of ['', 'abc', '9223372036854775808']) {
      assert.equal((await failure(client.decode({ tag: 'g', id }))).code, status.INVALID_ARGUMENT, `id "${id}"`);
    }
    assert.equal((await failure(client.decode({ tag: 'nope', id: '1' }))).code, status.NOT_FOUND);
  });

  it('answers every error with its status code, the idmint code in metadata and message', async () => {
    const expect = async (p: Promise<unknown>, code: status, idmint: string) => {
      const f = await failure(p);
      assert.equal(f.code, code, `${idmint}: ${f.details}`);
      assert.equal(f.idmint, idmint);
      assert.ok(f.details.startsWith(`${idmint}: `), f.details);
      return f;
    };
    await expect(client.next({ tag: 'nope' }), status.NOT_FOUND, 'TAG_NOT_FOUND');
    await expect(
      client.take({ tag: 'nope', count: 5 }).then((r) => Promise.reject(r.error)),
      status.NOT_FOUND,
      'TAG_NOT_FOUND',
    );
    await expect(client.next({ tag: 'bad tag!' }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'g', count: 10_001 }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'g', key: 'k' }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'sh' }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'r' }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'n', app: 'x' }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(client.next({ tag: 'g', key: 'k'.repeat(257) }), status.INVALID_ARGUMENT, 'INVALID_ARGUMENT');
    await expect(
      client.take({ tag: 'g', count: 10, block: 1_000_000 }).then((r) => Promise.reject(r.error)),
      status.INVALID_ARGUMENT,
      'INVALID_ARGUMENT',
    );

    // Disabled, as the HTTP route answers it (409 TAG_DISABLED).
    await createTag(node.url, { tag: 'off' });
    await client.next({ tag: 'off' });
    assert.equal(
      (
        await fetch(`${node.url}/v1/admin/tags/off`, {
          method: 'PATCH',
          headers: adminHeaders,
          body: '{"enabled":false}',
        })
      ).status,
      200,
    );
    await expect(client.next({ tag: 'off' }), status.FAILED_PRECONDITION, 'TAG_DISABLED');
    await expect(
      client.take({ tag: 'off', count: 3 }).then((r) => Promise.reject(r.error)),
      status.FAILED_PRECONDITION,
      'TAG_DISABLED',
    );

    // Exhausted: every ID up to the limit, then RESOURCE_EXHAUSTED, never an ID above it.
    await createTag(node.url, { tag: 'small', step: 10, min_step: 10, max_id_limit: 25 });
    assert.deepEqual(
      big(await client.next({ tag: 'small', count: 20 })),
      Array.from({ length: 20 }, (_, i) => BigInt(i + 1)),
    );
    // A take whose chunk does not fit what is left fails whole: no block, nothing spent.
    await expect(
      client.take({ tag: 'small', count: 10, block: 2 }).then((r) => Promise.reject(r.error)),
      status.RESOURCE_EXHAUSTED,
      'ID_SPACE_EXHAUSTED',
    );
    assert.deepEqual(big(await client.next({ tag: 'small', count: 5 })), [21n, 22n, 23n, 24n, 25n]);
    await expect(client.next({ tag: 'small' }), status.RESOURCE_EXHAUSTED, 'ID_SPACE_EXHAUSTED');
  });

  it('serves a tag with client tokens only to calls carrying a live one (field or metadata); others get NOT_FOUND, as for a missing tag', async () => {
    await createTag(node.url, { tag: 'guarded' });
    assert.equal((await client.next({ tag: 'guarded' })).length, 1, 'open before it has a token');
    const made = await fetch(`${node.url}/v1/admin/tags/guarded/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"svc"}',
    });
    const { token } = (await made.json()) as { token: string };
    const missing = await failure(client.next({ tag: 'guarded' }));
    assert.equal(missing.code, status.NOT_FOUND);
    assert.equal(missing.idmint, 'TAG_NOT_FOUND');
    assert.equal((await failure(client.next({ tag: 'guarded', token: 'wrong-token' }))).code, status.NOT_FOUND);
    assert.equal(
      (await failure(client.next({ tag: 'guarded' }, IdsClient.md({ authorization: 'Bearer wrong-token' })))).code,
      status.NOT_FOUND,
    );
    const byField = await client.next({ tag: 'guarded', token, count: 3 });
    const byMetadata = await client.next({ tag: 'guarded' }, IdsClient.md({ authorization: `Bearer ${token}` }));
    assert.ok(ascending(big([...byField, ...byMetadata])));
    const denied = await client.take({ tag: 'guarded', count: 10 });
    assert.equal(denied.error?.code, status.NOT_FOUND);
    assert.equal(denied.blocks.length, 0);
    const streamed = await client.take(
      { tag: 'guarded', count: 10 },
      IdsClient.md({ authorization: `Bearer ${token}` }),
    );
    assert.equal(streamed.error, undefined);
    assert.equal(idsOf(streamed.blocks).length, 10);
  });

  it('counts calls by method and status in /metrics', async () => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    assert.match(text, /idmint_grpc_request_duration_seconds_count\{method="Next",code="OK"\} [1-9]/);
    assert.match(text, /idmint_grpc_request_duration_seconds_count\{method="Next",code="NOT_FOUND"\} [1-9]/);
    assert.match(text, /idmint_grpc_request_duration_seconds_count\{method="Take",code="OK"\} [1-9]/);
    assert.match(text, /idmint_errors_total\{transport="grpc",code="TAG_NOT_FOUND"\} [1-9]/);
  });
});
