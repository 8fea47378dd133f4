// suite: single — counts the work of one request on a request-path connection to the single-server Redis
// What one `order: global` request costs this process when it is alone (a lightly loaded
// tag: nothing to coalesce with), counted rather than timed: the timers and immediates it
// arms and the promises it creates, from the coalescer down to the Redis connection. A
// request that shares nothing should pay for its round trip and little else; each timer
// (ioredis armed two per command for its timeouts), each turn waited for company that never
// comes, each promise hop showed up as latency beside a bare server doing one EVALSHA. The
// bounds below are today's counts: a change that adds one fails here, whatever the machine's
// speed, before a benchmark would notice. The one immediate allowed per request is the write
// batching's (write-batching.ts), which sends the command in the turn it was made in, before the
// loop waits again: it is counted on its own, one per turn that sent a command.
//
// The promises still hold: the timeouts are the connection's (command-deadlines.ts, tested
// in process-pause.test.ts and network-faults.test.ts), and order is the coalescer's
// (coalescer-order.test.ts).
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import type { Coalescer } from '../../src/service/coalescer.js';
import { deadlineTimers } from '../../src/store/redis/command-deadlines.js';
import { batchedWrites } from '../../src/store/redis/write-batching.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { cleanup, testNames } from '../../tools/env.js';
import { openServedCoalescer } from '../helpers/served-coalescer.js';

/** Requests measured one after the other, each alone. */
const REQUESTS = 50;

/** What the async hooks saw created while fn ran, per type (Timeout, Immediate, PROMISE...). */
async function counted(fn: () => Promise<void>): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  const hook = createHook({
    init(_id, type) {
      seen.set(type, (seen.get(type) ?? 0) + 1);
    },
  });
  hook.enable();
  try {
    await fn();
  } finally {
    hook.disable();
  }
  return seen;
}

/** A full collection on demand (the flag exposes gc() to contexts made from now on). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('one order-global request alone', () => {
  const names = testNames();
  let redis: RedisClient;
  let coalescer: Coalescer;

  before(async () => {
    // The request path's connection, as the server makes it (command role, its timeouts), and the server's defaults.
    ({ coalescer, redis } = await openServedCoalescer(names, 'lone'));
    // A few requests first: the scripts are loaded, the round trip is measured, and the
    // latest take served one request (the tag is lightly loaded).
    for (let i = 0; i < 5; i++) await coalescer.take(1);
  });
  after(async () => {
    redis.disconnect();
    await cleanup(names);
  });

  it('arms no timer and waits no turn of the event loop for company', async () => {
    const armed0 = deadlineTimers.armed;
    const flushes0 = batchedWrites.flushes;
    const t0 = performance.now();
    let last = 0;
    const seen = await counted(async () => {
      for (let i = 0; i < REQUESTS; i++) {
        const [[id]] = await coalescer.take(1);
        assert.ok(id > last, `IDs increase: ${id} after ${last}`);
        last = id;
      }
    });
    // The connection's one deadline timer may come due once per command timeout (1000 ms)
    // and be armed again: allowed once per second the requests took (a busy machine).
    const sweeps = Math.ceil((performance.now() - t0) / 1000);
    const timers = seen.get('Timeout') ?? 0;
    const immediates = seen.get('Immediate') ?? 0;
    assert.ok(
      deadlineTimers.armed - armed0 <= sweeps,
      `deadline timer armed ${deadlineTimers.armed - armed0} times in ${sweeps} s`,
    );
    assert.ok(
      timers <= sweeps,
      `${timers} timers for ${REQUESTS} requests (at most one per command timeout that passed: ${sweeps})`,
    );
    // The write batching's: one per turn that sent a command, each request alone its own turn.
    const flushes = batchedWrites.flushes - flushes0;
    assert.ok(flushes <= REQUESTS, `${flushes} batched writes for ${REQUESTS} requests`);
    assert.ok(
      immediates - flushes <= sweeps,
      `${immediates} immediates for ${REQUESTS} requests, ${flushes} of them the write batching's`,
    );
  });

  it('creates at most 6.5 promises per request (the coalescer, the script call, this loop)', async () => {
    const seen = await counted(async () => {
      for (let i = 0; i < REQUESTS; i++) await coalescer.take(1);
    });
    // Counted by the async hooks: the request's promise and its hand-over, ioredis's command
    // and the one step that decodes its reply (the store's steps and the NOSCRIPT fallback
    // run in it), and this loop's awaits. A step of its own in the store or the script call,
    // or the fallback as a step of its own (ioredis's scripts have one), takes it past the bound.
    const perRequest = (seen.get('PROMISE') ?? 0) / REQUESTS;
    assert.ok(perRequest <= 6.5, `${perRequest} promises per request`);
  });

  it('keeps no answered command until its deadline', async () => {
    // Each request's command (its arguments, its reply) should be garbage once answered: kept
    // until the deadline sweep (1000 ms here), thousands of them a second outlive the young
    // generation's collections and are copied into the old one, a cost every request pays.
    const gc = collector();
    const host = redis as unknown as { sendCommand(c: object, s?: unknown): unknown };
    const inner = host.sendCommand;
    const sent: WeakRef<object>[] = [];
    host.sendCommand = (c, s) => {
      sent.push(new WeakRef(c));
      return inner.call(redis, c, s);
    };
    try {
      for (let i = 0; i < REQUESTS; i++) await coalescer.take(1);
    } finally {
      host.sendCommand = inner;
    }
    // One command per request, or a few more (a NOSCRIPT sends the script again).
    assert.ok(sent.length >= REQUESTS, `${sent.length} commands for ${REQUESTS} requests`);
    await nextTurn(); // a WeakRef's target stays alive until the turn that made it ends
    gc();
    const kept = sent.filter((r) => r.deref() !== undefined).length;
    // The last one waits in the queue for the next command to be sent; the bound leaves room
    // for a stray reference elsewhere. Kept until the sweep, all of them would be here.
    assert.ok(kept <= 3, `${kept} of ${sent.length} answered commands still held`);
  });
});
