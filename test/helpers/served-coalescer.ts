// A coalescer as the server makes one for an `order: global` tag: on a request-path connection
// to the test Redis (command role, its timeouts), over a current segment of a million IDs, with
// the server's defaults (config.ts: 4 takes in flight, hold 32, a round trip, linger 2 ms) and a
// refill producer that is never needed.
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { RefillProducer } from '../../src/producer/refill-producer.js';
import { Coalescer } from '../../src/service/coalescer.js';
import { createRedis, whenReady, type RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';
import { REDIS_URL, type TestNames } from '../../tools/env.js';

export interface ServedCoalescer {
  readonly coalescer: Coalescer;
  /** The connection it takes over: disconnect it when done. */
  readonly redis: RedisClient;
}

/** Installs IDs 1 to 1,000,000 as the current segment of `tag` and opens its coalescer. */
export async function openServedCoalescer(names: TestNames, tag: string): Promise<ServedCoalescer> {
  const redis = createRedis(REDIS_URL, 'command', 1000);
  await whenReady(redis);
  const store = new SegmentStore({ default: redis }, new Keys(names.prefix));
  const ref: SegmentRef = { tag, epoch: 1, shard: 0 };
  const cold = await store.take(ref, 1, 0.5);
  assert.equal(cold.status, 'cold');
  assert.equal(await store.install(ref, cold.gen, [1, 1_000_000], 0.5), 'current');
  const producer = { request: async () => undefined } as unknown as RefillProducer;
  const coalescer = new Coalescer(ref, () => 0.5, {
    segments: store,
    producer,
    log: pino({ level: 'silent' }),
    maxBatch: 100_000,
    waitMs: 3000,
    pipeline: 4,
    hold: 32,
    holdRtt: 1,
    lingerMs: 2,
  });
  return { coalescer, redis };
}
