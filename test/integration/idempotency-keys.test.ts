// suite: cluster
// Idempotency keys against the real stores (service/idempotency.ts, idem-record-3.lua): two
// idmint runtimes in this process, each with its own Redis connections as two processes have,
// issue real IDs of real tags under keys. The first request under a key is answered with the IDs
// it took, every later one with the same IDs and takes nothing (also from the other runtime, and from a runtime
// started after the first closed), a different request under the key is refused, requests under
// one key that run at once all get one answer, a replay still works once the tag has run out,
// keys expire after the tag's retention (and no process answers one from memory after that),
// and the bounds (key, count, keys per tag) hold. On a Redis Cluster the records lie in the
// tag's slot.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { IdmintError, type ErrorCode } from '../../src/errors.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import type { StoredTag } from '../../src/store/mysql/tags-repo.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { ON_CLUSTER, REDIS_URL, cleanup, testNames, testRedis } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** One idmint process's view: its runtime and idempotency keys on its own connections. */
interface Side {
  readonly node: LocalNode;
  readonly keys: IdempotencyKeys;
  readonly records: IdempotencyRecords;
  readonly metrics: Metrics;
  /** Keyed request for count IDs of tag; taken: what its own take gave (undefined if none ran). */
  issue(
    tag: string,
    key: string,
    count: number,
    shape?: string,
  ): Promise<{ answer: string[]; taken: string[] | undefined }>;
}

async function side(names: ReturnType<typeof testNames>): Promise<Side> {
  return keysOn(await startLocalNode(names));
}

/** Idempotency keys of their own (bound, retention in seconds) on a node's connections. */
function keysOn(node: LocalNode, maxKeys = 100_000, retention?: number): Side {
  const metrics = new Metrics({ defaultMetrics: false });
  const records = new IdempotencyRecords(node.rt.segments, node.rt.keys);
  const keys = new IdempotencyKeys(records, { maxKeys, counters: metrics.idempotency });
  return {
    node,
    keys,
    records,
    metrics,
    async issue(name, key, count, shape = 'ids') {
      let tag = await node.rt.ids.prepare({ tag: name, as: 'ids', count: 1 });
      if (retention !== undefined) tag = { ...tag, keyRetentionSeconds: retention } as StoredTag;
      let taken: string[] | undefined;
      const answer = await keys.issue(
        tag,
        key,
        fingerprintOf({ count, shape }),
        count,
        async () => (taken = await node.rt.ids.issue({ tag: name, as: 'ids', count: count })),
      );
      return { answer, taken };
    },
  };
}

async function refusal(p: Promise<unknown>): Promise<IdmintError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof IdmintError, `an IdmintError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}

async function refusedWith(p: Promise<unknown>, code: ErrorCode, message?: RegExp): Promise<IdmintError> {
  const e = await refusal(p);
  assert.equal(e.code, code, e.message);
  if (message) assert.match(e.message, message);
  return e;
}

async function counterValue(m: Metrics, name: string, tag: string): Promise<number> {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name) as
    | { values: { labels: { tag?: string }; value: number }[] }
    | undefined;
  return metric?.values.find((v) => v.labels.tag === tag)?.value ?? 0;
}

describe('idempotency keys', () => {
  const names = testNames();
  let a: Side;
  let b: Side;

  before(async () => {
    a = await side(names);
    b = await side(names);
    await createTag(a.node.url, { tag: 'orders' });
  });
  after(async () => {
    await Promise.allSettled([a?.node.close(), b?.node.close()]);
    await cleanup(names);
  });

  it('answers the first request with the IDs it took and every later one with the same IDs, from any process', async () => {
    const first = await a.issue('orders', 'order-1', 3);
    assert.deepEqual(first.answer, first.taken);
    assert.equal(first.answer.length, 3);
    const again = await a.issue('orders', 'order-1', 3);
    assert.deepEqual(again.answer, first.answer, 'a retry gets the first answer');
    assert.equal(again.taken, undefined, 'the retry took nothing');
    const elsewhere = await b.issue('orders', 'order-1', 3);
    assert.deepEqual(elsewhere.answer, first.answer, 'another process answers the same');
    assert.equal(await counterValue(a.metrics, 'idmint_idempotent_replays_total', 'orders'), 1);
    assert.equal(await counterValue(b.metrics, 'idmint_idempotent_replays_total', 'orders'), 1);
    // Another key is another request: new IDs.
    const other = await a.issue('orders', 'order-2', 3);
    assert.deepEqual(other.answer, other.taken);
    assert.ok(BigInt(other.answer[0]) > BigInt(first.answer[2]));
  });

  it('keeps the answer across a restart of idmint', async () => {
    const first = await a.issue('orders', 'restart-1', 2);
    await a.node.close();
    a = await side(names);
    assert.deepEqual((await a.issue('orders', 'restart-1', 2)).answer, first.answer);
  });

  it('refuses the same key with a different request, and never answers it with IDs', async () => {
    const first = await a.issue('orders', 'mismatch-1', 2);
    const e = await refusedWith(a.issue('orders', 'mismatch-1', 5), 'IDEMPOTENCY_KEY_MISMATCH', /count 5, not 2/);
    assert.equal(e.status, 422);
    await refusedWith(b.issue('orders', 'mismatch-1', 2, 'id'), 'IDEMPOTENCY_KEY_MISMATCH', /shape "id", not "ids"/);
    assert.equal(await counterValue(a.metrics, 'idmint_idempotency_key_mismatches_total', 'orders'), 1);
    // The key still answers its own request.
    assert.deepEqual((await b.issue('orders', 'mismatch-1', 2)).answer, first.answer);
  });

  it('gives requests under one key that run at once one answer, from two connections, round after round', async () => {
    const rounds = 60;
    const answered = new Set<string>();
    for (let i = 0; i < rounds; i++) {
      const key = `race-${i}`;
      const [x, y] = await Promise.all([a.issue('orders', key, 2), b.issue('orders', key, 2)]);
      assert.deepEqual(x.answer, y.answer, `round ${i}: both requests get one answer`);
      // The answer is what one of the two took; the other's IDs reach nobody.
      assert.ok(
        JSON.stringify(x.answer) === JSON.stringify(x.taken) || JSON.stringify(x.answer) === JSON.stringify(y.taken),
        `round ${i}: the answer ${x.answer} was taken by one of them (${x.taken} / ${y.taken})`,
      );
      for (const id of x.answer) {
        assert.ok(!answered.has(id), `round ${i}: ${id} was answered under another key`);
        answered.add(id);
      }
    }
  });

  it('answers UNAVAILABLE, having taken nothing, when the key cannot be looked up', async () => {
    // A connection that is never opened: every command fails at once, as with Redis away.
    const away = new Redis({ lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    away.on('error', () => undefined);
    try {
      const keys = new IdempotencyKeys(new IdempotencyRecords({ connection: () => away }, a.node.rt.keys), {
        maxKeys: 10,
      });
      const tag = await a.node.rt.ids.prepare({ tag: 'orders', as: 'ids', count: 1 });
      let taken: string[] = [];
      const e = await refusedWith(
        keys.issue(
          tag,
          'unkept-1',
          fingerprintOf({ count: 2, shape: 'ids' }),
          2,
          async () => (taken = await a.node.rt.ids.issue({ tag: 'orders', as: 'ids', count: 2 })),
        ),
        'UNAVAILABLE',
        /could not be looked up .*no ID was given: retry with the same key/,
      );
      assert.equal(taken.length, 0, 'nothing was taken');
      assert.equal(e.retryAfter, 1);
      // Nothing was kept: the retry is a first request.
      const retry = await a.issue('orders', 'unkept-1', 2);
      assert.deepEqual(retry.answer, retry.taken);
    } finally {
      away.disconnect();
    }
  });

  it('still answers a kept answer once the tag has run out, and refuses new keys as any request', async () => {
    await createTag(a.node.url, { tag: 'small', step: 10, min_step: 10, max_id_limit: 12 });
    const first = await a.issue('small', 'last-1', 5);
    assert.deepEqual(first.answer, ['1', '2', '3', '4', '5']);
    // Unkeyed requests take the rest.
    const rest = await a.node.rt.ids.issue({ tag: 'small', as: 'ids', count: 7 });
    assert.deepEqual(rest, ['6', '7', '8', '9', '10', '11', '12']);
    await refusedWith(
      Promise.resolve().then(() => a.node.rt.ids.issue({ tag: 'small', as: 'ids', count: 1 })),
      'ID_SPACE_EXHAUSTED',
    );
    assert.deepEqual((await a.issue('small', 'last-1', 5)).answer, first.answer, 'the replay is served');
    assert.deepEqual((await b.issue('small', 'last-1', 5)).answer, first.answer, 'from the other process too');
    await refusedWith(a.issue('small', 'last-2', 1), 'ID_SPACE_EXHAUSTED');
    await refusedWith(a.issue('small', 'last-1', 4), 'IDEMPOTENCY_KEY_MISMATCH');
  });

  it('forgets a key once the tag’s retention has passed', async () => {
    await createTag(a.node.url, { tag: 'brief' });
    const short = keysOn(b.node, 100_000, 3);
    {
      const first = await short.issue('brief', 'expires-1', 2);
      assert.deepEqual((await short.issue('brief', 'expires-1', 2)).answer, first.answer, 'kept within the retention');
      // Another process finds the answer in Redis and holds it: never past the record's expiry.
      const finder = keysOn(a.node, 100_000, 3);
      assert.deepEqual((await finder.issue('brief', 'expires-1', 2)).answer, first.answer, 'found by another process');
      // A key of the default retention (a day) keeps the tag's index alive past the short one.
      const stays = await a.issue('brief', 'stays-1', 1);
      const tag = await short.node.rt.ids.prepare({ tag: 'brief', as: 'ids', count: 1 });
      assert.equal(await short.keys.held(tag), 2);
      const ttl = await short.node.rt.segments
        .connection()
        .pttl(short.node.rt.keys.idempotencyRecord('brief', tag.epoch, 'expires-1'));
      assert.ok(ttl > 0 && ttl <= 3000, `the record expires with the retention (PTTL ${ttl})`);
      await waitFor(
        'the key to expire',
        async () => (await short.records.lookup(tag, 'expires-1')) === undefined,
        20_000,
      );
      assert.equal(await short.keys.held(tag), 1, 'an expired key is not counted as held');
      const later = await short.issue('brief', 'expires-1', 2);
      assert.deepEqual(later.answer, later.taken, 'served as a first request');
      assert.ok(BigInt(later.answer[0]) > BigInt(first.answer[1]));
      assert.deepEqual(
        (await finder.issue('brief', 'expires-1', 2)).answer,
        later.answer,
        'the process that found the first answer holds it no longer than its record lived',
      );
      assert.equal(await short.keys.held(tag), 2);
      assert.deepEqual((await a.issue('brief', 'stays-1', 1)).answer, stays.answer, 'the other key is still kept');
    }
  });

  it('refuses keys that are not 1 to 255 visible ASCII characters, and more than 1000 IDs, before taking any', async () => {
    const tag = await a.node.rt.ids.prepare({ tag: 'orders', as: 'ids', count: 1 });
    let took = 0;
    const take = async () => {
      took++;
      return ['1'];
    };
    const fp = fingerprintOf({ count: 1, shape: 'ids' });
    for (const [key, why] of [
      ['', /empty/],
      ['x'.repeat(256), /256 bytes long; at most 255/],
      ['with space', /visible ASCII/],
      ['tab\there', /visible ASCII/],
      ['café', /visible ASCII/],
      ['line\nbreak', /visible ASCII/],
    ] as const)
      await refusedWith(a.keys.issue(tag, key, fp, 1, take), 'INVALID_ARGUMENT', why);
    await refusedWith(
      a.keys.issue(tag, 'big', fingerprintOf({ count: 1001, shape: 'ids' }), 1001, take),
      'INVALID_ARGUMENT',
      /at most 1000 IDs .*got 1001/,
    );
    assert.equal(took, 0, 'nothing was taken for a refused request');
    const longest = 'k'.repeat(255);
    const ok = await a.issue('orders', longest, 1000);
    assert.equal(ok.answer.length, 1000);
    assert.deepEqual((await b.issue('orders', longest, 1000)).answer, ok.answer);
    const odd = '{x}~!"#$%&\'()*+,-./:;<=>?@[\\]^_`|';
    const first = await a.issue('orders', odd, 1);
    assert.deepEqual((await b.issue('orders', odd, 1)).answer, first.answer);
  });

  it('keeps the records in the tag’s slot and counts the live keys of each tag', async () => {
    await createTag(a.node.url, { tag: 'counted' });
    const tag = await a.node.rt.ids.prepare({ tag: 'counted', as: 'ids', count: 1 });
    assert.equal(await a.keys.held(tag), 0);
    for (const k of ['c-1', 'c-2', 'c-{3}']) await a.issue('counted', k, 1);
    await a.issue('counted', 'c-1', 1); // a replay holds no new key
    await refusal(a.issue('counted', 'c-2', 2)); // nor does a mismatch
    assert.equal(await a.keys.held(tag), 3);
    assert.equal(await b.keys.held(tag), 3);
    if (ON_CLUSTER) {
      const r = testRedis();
      try {
        const slot = async (k: string) => Number(await r.cluster('KEYSLOT', k));
        const tagSlot = await slot(a.node.rt.keys.segment('counted', tag.epoch, 0));
        for (const k of ['c-1', 'c-{3}'])
          assert.equal(await slot(a.node.rt.keys.idempotencyRecord('counted', tag.epoch, k)), tagSlot, k);
        assert.equal(await slot(a.node.rt.keys.idempotencyIndex('counted', tag.epoch)), tagSlot);
      } finally {
        r.disconnect();
      }
    }
    const r = a.node.rt.segments.connection();
    assert.ok(
      await r.exists(a.node.rt.keys.idempotencyRecord('counted', tag.epoch, 'c-{3}')),
      'the record is where keys.ts says',
    );
  });

  it('refuses a new key once the tag holds IDEMPOTENCY_MAX_KEYS live keys, and still answers the kept ones', async () => {
    await createTag(a.node.url, { tag: 'bounded' });
    const few = keysOn(b.node, 3);
    {
      const kept = await few.issue('bounded', 'b-1', 1);
      await few.issue('bounded', 'b-2', 1);
      await few.issue('bounded', 'b-3', 1);
      const e = await refusedWith(
        few.issue('bounded', 'b-4', 1),
        'IDEMPOTENCY_KEYS_FULL',
        /holds 3 live idempotency keys/,
      );
      assert.equal(e.status, 429);
      assert.ok(
        e.retryAfter !== undefined && e.retryAfter >= 1 && e.retryAfter <= 86400,
        `Retry-After ${e.retryAfter}`,
      );
      assert.equal(await counterValue(few.metrics, 'idmint_idempotency_keys_full_total', 'bounded'), 1);
      assert.deepEqual((await few.issue('bounded', 'b-1', 1)).answer, kept.answer, 'a kept key is answered when full');
      assert.equal(await few.keys.held(await few.node.rt.ids.prepare({ tag: 'bounded', as: 'ids', count: 1 })), 3);
    }
  });

  it('counts only live keys against the bound: an expired key makes room', async () => {
    await createTag(a.node.url, { tag: 'roomy' });
    const long = keysOn(a.node, 2);
    const short = keysOn(b.node, 2, 3);
    const tag = await a.node.rt.ids.prepare({ tag: 'roomy', as: 'ids', count: 1 });
    await long.issue('roomy', 'long-1', 1);
    await short.issue('roomy', 'short-1', 1);
    const e = await refusedWith(long.issue('roomy', 'long-2', 1), 'IDEMPOTENCY_KEYS_FULL');
    assert.ok(
      e.retryAfter !== undefined && e.retryAfter >= 1 && e.retryAfter <= 3,
      `Retry-After ${e.retryAfter}: when the short key expires`,
    );
    await waitFor('the short key to expire', async () => (await long.keys.held(tag)) === 1, 20_000);
    const room = await long.issue('roomy', 'long-2', 1);
    assert.deepEqual(room.answer, room.taken);
    assert.equal(await long.keys.held(tag), 2);
  });
});

describe('idempotency keys of a tag on a named Redis server', () => {
  const names = testNames();
  // Database 3 of the test Redis stands for another server (REDIS_URLS).
  const other = `${REDIS_URL.replace(/\/\d*$/, '')}/3`;
  let node: LocalNode;

  before(async () => {
    node = await startLocalNode(names, { REDIS_URLS: `b=${other}` });
    await createTag(node.url, { tag: 'away', redis: 'b' });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
    await cleanup(names, other).catch(() => undefined);
  });

  it('keeps them on the tag’s server, beside its segments', async () => {
    const s = keysOn(node);
    const first = await s.issue('away', 'far-1', 2);
    assert.deepEqual((await s.issue('away', 'far-1', 2)).answer, first.answer);
    const tag = await node.rt.ids.prepare({ tag: 'away', as: 'ids', count: 1 });
    const record = node.rt.keys.idempotencyRecord('away', tag.epoch, 'far-1');
    assert.equal(await node.rt.segments.connection('b').exists(record), 1, 'on server b');
    assert.equal(await node.rt.segments.connection().exists(record), 0, 'not on the default server');
    assert.equal(await s.keys.held(tag), 1);
  });
});
