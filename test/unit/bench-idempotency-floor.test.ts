// The floor of bench:idempotency sends the Redis calls idmint sends: the arguments of its
// idem-takes-4.lua call are those idmint's own IdempotencyKeys and store send for the same keys
// (caught on a stand-in connection), its take's those of idmint's segment store, and its
// settings those idmint derives from its configuration.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BENCH_KEY_SETTINGS, DEFAULT_PREFETCH, takeArgs, takesArgs } from '../../bench/idempotency/floor-calls.js';
import { loadConfig } from '../../src/config.js';
import { specFromCreate } from '../../src/core/tag-spec.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import type { StoredTag } from '../../src/store/mysql/tags-repo.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore } from '../../src/store/redis/segments.js';
import { fingerprintOf } from '../../src/core/idempotency-key.js';

/** A connection that records each EVALSHA's arguments after the sha and answers with `reply`. */
function standIn(reply: (args: unknown[]) => unknown): { redis: RedisClient; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const redis = {
    // Ready, and never closed (connection-sessions.ts listens for its close).
    status: 'ready',
    on: () => redis,
    evalsha: (_sha: string, ...args: unknown[]) => {
      calls.push(args);
      return Promise.resolve(reply(args));
    },
  } as unknown as RedisClient;
  return { redis, calls };
}

const where = { tag: 'idem.global', epoch: 1 };
const keys = new Keys('bprefix');

describe('bench:idempotency floor calls', () => {
  it('sends the idem-takes-4.lua call idmint sends for the new keys of one turn, owners aside', async () => {
    const { redis, calls } = standIn(() => [
      [6, 10],
      [6, 11],
    ]);
    const records = new IdempotencyRecords({ connection: () => redis }, keys);
    const s = BENCH_KEY_SETTINGS;
    const idmint = new IdempotencyKeys(records, { maxKeys: s.maxKeys, maxBytes: s.maxBytes, claimMs: s.claimMs });
    const tag = { tag: where.tag, epoch: where.epoch, keyRetentionSeconds: s.retentionMs / 1000 } as StoredTag;
    const inKey = { shard: 0, scope: '', stride: s.stride, offset: s.offset, taken: () => undefined };
    const fingerprint = fingerprintOf({ count: 1, shape: 'one', key: undefined });
    const take = () => Promise.reject(new Error('no take: the IDs come in the key call'));
    const ids = await Promise.all(['k-1', 'k-22'].map((key) => idmint.issue(tag, key, fingerprint, 1, take, inKey)));
    assert.deepEqual(ids, [['10'], ['11']]);
    assert.equal(calls.length, 1);
    const sent = calls[0];
    const floor = [
      4,
      ...takesArgs(keys, where, [
        { key: 'k-1', owner: String(sent[15]) },
        { key: 'k-22', owner: String(sent[20]) },
      ]),
    ];
    assert.deepEqual(sent, floor);
    assert.match(String(sent[15]), /^[\w-]{16}\.\w+$/);
  });

  it("sends the take idmint's segment store sends for n IDs", async () => {
    const { redis, calls } = standIn(() => 7);
    const store = new SegmentStore({ default: redis }, keys);
    await store.take({ tag: where.tag, epoch: where.epoch, shard: 0 }, 3, DEFAULT_PREFETCH);
    const sent = calls[0];
    assert.deepEqual(sent, [2, ...takeArgs(keys, where, 3, String(sent[4]))]);
  });

  it("holds the settings to idmint's: the claim's hold from REFILL_WAIT_MS, a tag's defaults", () => {
    const config = loadConfig({});
    assert.equal(BENCH_KEY_SETTINGS.claimMs, Math.max(10_000, 3 * config.refillWaitMs));
    const spec = specFromCreate({ tag: 'idem.global', mode: 'segment', order: 'global' });
    assert.equal(BENCH_KEY_SETTINGS.retentionMs, spec.keyRetentionSeconds * 1000);
    assert.equal(DEFAULT_PREFETCH, spec.prefetch);
    assert.equal(BENCH_KEY_SETTINGS.stride, spec.stride);
    assert.equal(BENCH_KEY_SETTINGS.offset, spec.offset);
  });
});
