// A segment hash in the steady state of `take`: created by a cold take through the segment
// store, then given one segment too large to end during a benchmark, so that every later take
// of one ID is the call an `order: global` request makes (take-2.lua's steady state). bench:take
// measures its Redis time; bench:udp serves requests with it from a bare responder.
import type { RedisClient } from '../src/store/redis/connection.js';
import type { Keys } from '../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef } from '../src/store/redis/segments.js';

export interface SteadySegment {
  readonly store: SegmentStore;
  readonly ref: SegmentRef;
  /** KEYS of a take: the segment hash and the tag's moved marker. */
  readonly seg: string;
  readonly moved: string;
}

/** Installs the hash of (tag, epoch 1, shard 0) under `keys` and checks that a take answers ok. */
export async function steadySegment(r: RedisClient, keys: Keys, tag: string, prefetch: number): Promise<SteadySegment> {
  const store = new SegmentStore({ default: r }, keys);
  const ref: SegmentRef = { tag, epoch: 1, shard: 0 };
  const cold = await store.take(ref, 1, prefetch);
  if (cold.status !== 'cold') throw new Error(`expected a cold start, got ${cold.status}`);
  const installed = await store.install(ref, cold.gen, [1, 1e14], prefetch);
  if (installed !== 'current') throw new Error(`install answered ${installed}`);
  const first = await store.take(ref, 1, prefetch);
  if (first.status !== 'ok') throw new Error(`take answered ${first.status}`);
  return { store, ref, seg: store.key(ref), moved: keys.moved(ref.tag) };
}

/**
 * The token of one take call, as SegmentStore.take sends it: new for every call and ending in
 * the digit of its answer field (take-2.lua answers a token it has already seen with the
 * answer it gave then and moves nothing, so a constant token would measure that path).
 */
export function takeTokens(prefix: string): () => string {
  let calls = 0;
  return () => {
    const n = calls++;
    return `${prefix}${n.toString(36)}${n % 8}`;
  };
}
