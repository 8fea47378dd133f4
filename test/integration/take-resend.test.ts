// suite: single — a request-path connection through a proxy in front of the single-server Redis
// A take that Redis ran but whose reply never arrived, because the connection closed first,
// is sent again by the Redis client once it has reconnected (ioredis resends the commands it
// had no reply to; a cluster client does the same after "Connection is closed"). The second
// run must answer what the first did, not take the IDs a second time: on a fresh tag (limit
// 25, segments of 10) a request for 20 whose first take ran that way was refused with
// "15 IDs left, fewer than asked", IDs 1-10 taken in Redis and given to nobody.
//
// The order of events is fixed by the proxy: the take's reply is held back, the test waits
// until Redis has run it (the cursor moved), then drops the connection; the reply is lost
// and the client's resend is the only answer the coalescer can get.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Socket } from 'node:net';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Range } from '../../src/core/ranges.js';
import type { RefillJobData } from '../../src/jobs/refill.js';
import type { RefillProducer } from '../../src/producer/refill-producer.js';
import { Coalescer } from '../../src/service/coalescer.js';
import { createRedis } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';
import { SegmentStore, type SegmentRef } from '../../src/store/redis/segments.js';
import { REDIS_URL, cleanup, testNames } from '../../tools/env.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';
import { waitFor } from '../helpers/fault-load.js';

const LIMIT = 25;
const STEP = 10;

/** The reply-hold proxy, able to drop the connections it carries while it keeps listening. */
class DroppingProxy extends ReplyHoldProxy {
  static override start(targetPort: number): Promise<DroppingProxy> {
    return new DroppingProxy(targetPort, '127.0.0.1').listen();
  }

  /** Drops every connection now open (replies held back are lost); new ones are accepted. */
  dropConnections(): void {
    for (const s of [...this.sockets] as Socket[]) s.destroy();
  }
}

/** The refill worker's part: the next range of a counter of its own, installed with the tag's limit. */
class Refiller {
  next = 1;
  constructor(private readonly store: SegmentStore) {}

  async request(d: RefillJobData): Promise<void> {
    if (this.next > LIMIT) return;
    const range: Range = [this.next, Math.min(LIMIT, this.next + STEP - 1)];
    this.next = range[1] + 1;
    await this.store.install({ tag: d.tag, epoch: d.epoch, shard: d.shard }, d.gen, range, 0.2, Date.now(), LIMIT);
  }
}

describe('a take run by Redis whose reply was lost, sent again by the client', () => {
  const names = testNames();
  const direct = new Redis(REDIS_URL);
  const directStore = new SegmentStore({ default: direct }, new Keys(names.prefix));
  let proxy: DroppingProxy;
  let proxied: Redis;
  let store: SegmentStore;
  let epoch = 0;
  const fresh = (): SegmentRef => ({ tag: 'resend', epoch: ++epoch, shard: 0 });

  before(async () => {
    proxy = await DroppingProxy.start(Number(new URL(REDIS_URL).port || 6379));
    const url = new URL(REDIS_URL);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    // The request path's own connection options (command timeout, retries, offline queue).
    proxied = createRedis(url.toString(), 'command');
    await new Promise<void>((r) => (proxied.status === 'ready' ? r() : proxied.once('ready', () => r())));
    store = new SegmentStore({ default: proxied }, new Keys(names.prefix));
  });

  after(async () => {
    proxied.disconnect();
    direct.disconnect();
    await proxy.close();
    await cleanup(names);
  });

  /** A tag whose hash holds its first segment, 1-10 (limit 25), as after the first refill. */
  async function firstSegment(ref: SegmentRef): Promise<void> {
    assert.equal((await directStore.take(ref, 1, 0.2)).status, 'cold');
    const { gen } = await directStore.stats(ref);
    assert.equal(await directStore.install(ref, gen!, [1, STEP], 0.2, Date.now(), LIMIT), 'current');
  }

  /**
   * Sends `send`'s takes with their replies held back, drops the connection once Redis ran
   * them (the cursor reached `ranTo`), and lets the resent takes' replies through.
   */
  async function loseFirstReplies<T>(ref: SegmentRef, ranTo: number, send: () => Promise<T>): Promise<T> {
    proxy.hold();
    const p = send();
    await waitFor('Redis to run the takes', async () => (await directStore.stats(ref)).cur === ranTo, 5000, 5);
    proxy.dropConnections();
    proxy.release();
    return p;
  }

  it('answers the resent take as the first run did: the IDs it took, once', async () => {
    const ref = fresh();
    await firstSegment(ref);
    const r = await loseFirstReplies(ref, 11, () => store.take(ref, 20, 0.2));
    assert.equal(proxy.heldChunks > 0, true, 'the first reply was held back');
    assert.equal(r.status, 'dry', `the resent take answered ${JSON.stringify(r)}`);
    assert.deepEqual(r.ranges, [[1, 10]]);
    assert.equal((await directStore.stats(ref)).cur, 11, 'the cursor moved once');
  });

  it('answers a resent steady-state take (one cursor move) with the same first ID', async () => {
    const ref = fresh();
    await firstSegment(ref);
    // Up to the prefetch point's take, the segment's first IDs go out in the steady state.
    const r = await loseFirstReplies(ref, 2, () => store.take(ref, 1, 0.2));
    assert.deepEqual(r.ranges, [[1, 1]]);
    assert.equal((await directStore.stats(ref)).cur, 2, 'the cursor moved once');
  });

  it('answers takes that were in flight together, all sent again, each as its first run', async () => {
    const ref = fresh();
    await firstSegment(ref);
    const rs = await loseFirstReplies(ref, 10, () => Promise.all([1, 2, 3].map(() => store.take(ref, 3, 0.2))));
    assert.deepEqual(
      rs.map((r) => r.ranges),
      [[[1, 3]], [[4, 6]], [[7, 9]]],
    );
    assert.equal((await directStore.stats(ref)).cur, 10, 'each take moved the cursor once');
  });

  it('a request for 20 of a fresh tag with 25 IDs gets 1-20 when its take was sent twice', async () => {
    const ref = fresh();
    await firstSegment(ref);
    const refiller = new Refiller(directStore);
    refiller.next = STEP + 1;
    const co = new Coalescer(ref, () => 0.2, {
      segments: store,
      producer: refiller as unknown as RefillProducer,
      log: pino({ level: 'silent' }),
      maxBatch: 1000,
      waitMs: 5000,
      pipeline: 4,
    });
    const ids = await loseFirstReplies(ref, 11, () => co.take(20));
    assert.deepEqual(ids, [
      [1, 10],
      [11, 20],
    ]);
    // What is left is still there, whole: a request for 5 gets 21-25.
    assert.deepEqual(await co.take(5), [[21, 25]]);
  });
});
