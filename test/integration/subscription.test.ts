// suite: single — kills one connection of the server by its client ID
// keepSubscribed on a real Redis: a subscriber connection dropped by the server subscribes
// again by itself and says so once the subscription is in place (an announcement published
// then is heard), and a connection closed for good while it reconnects leaves no rejection
// unhandled. The last is the shutdown race that ended a test process with "Connection is
// closed.": quit() while a reconnected subscriber's ready check (INFO) was in flight, after
// which ioredis's own resubscription was rejected with nobody listening.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { REDIS_URL } from '../../tools/env.js';
import { withRedis } from '../../tools/redis-server.js';
import { createRedis } from '../../src/store/redis/connection.js';
import { keepSubscribed } from '../../src/store/redis/subscription.js';

const log = pino({ level: 'silent' });
const channel = `idmint-test:subscription:${process.pid}`;

/** Resolves with the next value of emitter's event, or rejects after ms. */
async function next(emitter: Redis, event: string, ms = 10_000): Promise<unknown[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  try {
    return await once(emitter, event, { signal: ac.signal });
  } catch {
    throw new Error(`no '${event}' within ${ms} ms`);
  } finally {
    clearTimeout(timer);
  }
}

/** Drops the connection whose client ID is id, as a server restart or a CLIENT KILL would. */
async function kill(id: number): Promise<void> {
  assert.equal(await withRedis(REDIS_URL, (admin) => admin.call('CLIENT', 'KILL', 'ID', String(id))), 1);
}

describe('keepSubscribed', () => {
  it('subscribes again after the server dropped the connection, and calls back once it is in place', async () => {
    const sub = createRedis(REDIS_URL, 'subscriber');
    const pub = new Redis(REDIS_URL);
    try {
      const id = Number(await sub.client('ID'));
      let resubscribed!: () => void;
      const back = new Promise<void>((resolve) => {
        resubscribed = resolve;
      });
      await keepSubscribed(sub, channel, () => resubscribed(), log);
      assert.equal(sub.options.autoResubscribe, false, "ioredis's own resubscription is off");
      await kill(id);
      await back;
      // In place when called back: what is published now is heard.
      const heard = next(sub, 'message');
      assert.equal(await pub.publish(channel, 'after'), 1);
      assert.deepEqual(await heard, [channel, 'after']);
    } finally {
      sub.disconnect();
      pub.disconnect();
    }
  });

  it('leaves nothing unhandled when the connection is closed for good while its ready check is in flight', async () => {
    const unhandled: string[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(String((reason as Error)?.message ?? reason));
    process.on('unhandledRejection', onUnhandled);
    const sub = createRedis(REDIS_URL, 'subscriber');
    try {
      const id = Number(await sub.client('ID'));
      await keepSubscribed(sub, channel, () => undefined, log);
      // The shutdown's quit() lands right after the reconnected connection sent its ready
      // check: Redis answers the INFO, the connection turns ready, then ends.
      const internal = sub as unknown as { _readyCheck(this: Redis, done: unknown): void };
      const readyCheck = internal._readyCheck;
      let quitting: Promise<unknown> | undefined;
      internal._readyCheck = function (done) {
        readyCheck.call(this, done);
        quitting ??= sub.quit();
      };
      const ready = next(sub, 'ready');
      const ended = next(sub, 'end');
      await kill(id);
      await ready;
      await ended;
      await quitting;
      // A rejection is reported unhandled once the turn it happened in is over.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      sub.disconnect();
    }
  });
});
