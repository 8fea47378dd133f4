// suite: single — counts the writes of a request-path connection to a single Redis (cluster nodes are ioredis's own)
// The request path's connection sends the commands of one turn of the event loop in one write
// (src/store/redis/write-batching.ts), against the real Redis: the commands of requests read
// together leave in one writev and are each answered, in order; a command sent from any phase of
// the loop (a microtask, an immediate, a timer) still goes out before the loop waits again, so
// none waits for its deadline; a socket dropped with commands held back by the batching leaves
// none of them unsettled, and the connection serves again.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createRedis, whenReady } from '../../src/store/redis/connection.js';
import { batchedWrites } from '../../src/store/redis/write-batching.js';
import { cleanup, REDIS_URL, testNames } from '../../tools/env.js';

/** The writes a socket hands the kernel: one per _write, one per _writev (of several chunks). */
function countWrites(socket: Socket): { writes: number; chunks: number } {
  const seen = { writes: 0, chunks: 0 };
  const inner = socket as unknown as {
    _write(chunk: unknown, encoding: string, cb: () => void): void;
    _writev(chunks: unknown[], cb: () => void): void;
  };
  const write = inner._write.bind(socket);
  const writev = inner._writev.bind(socket);
  inner._write = (chunk, encoding, cb) => {
    seen.writes++;
    seen.chunks++;
    write(chunk, encoding, cb);
  };
  inner._writev = (chunks, cb) => {
    seen.writes++;
    seen.chunks += chunks.length;
    writev(chunks, cb);
  };
  return seen;
}

describe('the request path sends a turn of commands in one write', () => {
  const names = testNames();
  let redis: Redis;
  const key = `${names.prefix}:batched`;

  before(async () => {
    redis = createRedis(REDIS_URL, 'command', 1000);
    await whenReady(redis);
  });
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('sends 50 commands of one turn in one write, each answered in order', async () => {
    await redis.del(key);
    const seen = countWrites(redis.stream as Socket);
    const flushes = batchedWrites.flushes;
    const replies = await Promise.all(Array.from({ length: 50 }, () => redis.incr(key)));
    assert.deepEqual(
      replies,
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(seen.chunks, 50, 'each command written once');
    assert.equal(seen.writes, 1, `${seen.writes} writes for the 50 commands of one turn`);
    assert.equal(batchedWrites.flushes, flushes + 1);
  });

  it('sends a command from a microtask, an immediate or a timer before the loop waits again', async () => {
    // Each of these is answered, not failed at its 1000 ms deadline ("Command timed out").
    await Promise.resolve();
    assert.equal(typeof (await redis.incr(key)), 'number');
    await nextTurn();
    assert.equal(typeof (await redis.incr(key)), 'number');
    await sleep(1);
    assert.equal(typeof (await redis.incr(key)), 'number');
    // Sent while the batching's own immediate is running (the check phase): the next turn's.
    const inCheck = await new Promise<number>((resolve, reject) =>
      setImmediate(() => {
        redis.incr(key).then(resolve, reject);
      }),
    );
    assert.equal(typeof inCheck, 'number');
    // And a reply's continuation sending the next command, many times over.
    let last = 0;
    for (let i = 0; i < 200; i++) {
      const n = await redis.incr(key);
      assert.ok(n > last);
      last = n;
    }
  });

  it('leaves no command unsettled when the socket is dropped before the batch is written', async () => {
    const sent = Array.from({ length: 10 }, () =>
      redis.incr(key).then(
        () => 'answered',
        (err: Error) => `failed: ${err.message}`,
      ),
    );
    (redis.stream as Socket).destroy();
    const settled = await Promise.all(sent);
    assert.equal(settled.length, 10);
    for (const s of settled) assert.ok(s === 'answered' || s.startsWith('failed: '), s);
    await whenReady(redis);
    assert.equal(typeof (await redis.incr(key)), 'number', 'the connection serves again');
  });
});
