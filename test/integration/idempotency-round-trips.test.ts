// suite: single — watches a private redis-server with MONITOR
// What a keyed request costs in Redis calls, as an outsider sees it: MONITOR on a private
// redis-server lists every script call that touches a tag's keys while one request is served.
// A segment tag of order global takes from Redis for every request: a new key is looked up,
// taken and kept in that one call (idem-takes-4.lua), the same count as without a key, and a
// replay is that one call too. A tag served from memory (order node) needs the claim before
// its take and the record after it; a replay is the claim alone. A replay sent to the process
// that kept the answer costs no call (it holds the answers it kept: kept-answers.ts), so the
// replays whose calls are counted go to a second process of the same Redis and MySQL. The IDs
// are checked as well: a key's answer continues the tag's counter (stride and offset applied),
// its replay is the same, and where a segment ends the call falls back to claim, take and record.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { loadedScripts } from '../../src/store/redis/scripts.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer, withRedis } from '../../tools/redis-server.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

describe('Redis calls of a keyed request', () => {
  const names = testNames();
  let server: RedisServer;
  let node: LocalNode;
  /** A second process: it kept no answer, so its replays ask Redis. */
  let other: LocalNode;
  let monitor: Redis;
  let feed: Redis;
  const seen: string[][] = [];
  const scriptOf = new Map(Object.entries(loadedScripts()).map(([file, s]) => [s.sha, file]));

  before(async () => {
    server = await RedisServer.start();
    // Loaded up front: a script's first call would otherwise be its EVALSHA, NOSCRIPT, then EVAL.
    await withRedis(server.url, async (r) => {
      for (const script of Object.values(loadedScripts())) await r.script('LOAD', script.text);
    });
    // MONITOR before the nodes start: a monitor line that arrives on the heels of MONITOR's own
    // reply (the nodes' workers send commands all the time) can reach ioredis before it is in
    // monitor mode, which it refuses as a command queue state error.
    monitor = new Redis(server.url);
    feed = await monitor.monitor();
    // Commands a script runs are fed too (source "lua"): only what a client sent counts.
    feed.on('monitor', (_time: string, args: string[], source: string) => {
      if (!source.startsWith('lua')) seen.push(args);
    });
    node = await startLocalNode(names, { REDIS_URL: server.url });
    other = await startLocalNode(names, { REDIS_URL: server.url, NODE_ID: 'round-trips-other' });
  });
  after(async () => {
    feed?.disconnect();
    monitor?.disconnect();
    await node?.close();
    await other?.close();
    await cleanup(names, server?.url);
    await server?.stop();
  });

  /** The scripts (by file) and other commands that touched the tag's keys while `run` ran. */
  async function callsOf(tag: string, run: () => Promise<unknown>): Promise<string[]> {
    const from = seen.length;
    await run();
    // Redis feeds its monitors in the order it runs commands: once the marker is seen, so is every call before it.
    const marker = randomBytes(8).toString('hex');
    await withRedis(server.url, (r) => r.echo(marker));
    const { end } = await waitFor(
      'the marker on the monitor',
      () => {
        const at = seen.findIndex((a, i) => i >= from && a[0] === 'echo' && a[1] === marker);
        return at >= 0 ? { end: at } : undefined;
      },
      10_000,
      5,
    );
    return seen
      .slice(from, end)
      .filter((args) => args.some((a) => a.includes(`{${tag}}`)))
      .map((args) => (args[0] === 'evalsha' || args[0] === 'eval' ? (scriptOf.get(args[1]) ?? 'eval') : args[0]));
  }

  async function ids(tag: string, count: number, key?: string, via: LocalNode = node): Promise<string[]> {
    const res = await fetch(`${via.url}/v1/ids/${tag}?count=${count}`, {
      headers: key ? { 'idempotency-key': key } : {},
    });
    const body = (await res.json()) as { ids?: string[] };
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.ids as string[];
  }

  it('order global: a new key is one call, as many as without a key; a replay is one call', async () => {
    await createTag(node.url, { tag: 'glob', step: 100_000, min_step: 100_000 });
    let got: string[] = [];
    // Warm once a request without a key costs its one take (the first ones also fetch a segment).
    await waitFor(
      'a request without a key that is one take',
      async () => (await callsOf('glob', async () => (got = await ids('glob', 1)))).join() === 'take-2',
      10_000,
      1,
    );
    const next = Number(got[0]) + 1;
    assert.deepEqual(
      await callsOf('glob', async () => (got = await ids('glob', 1, 'k-1'))),
      ['idem-takes-4'],
      'a new key: one call',
    );
    assert.deepEqual(got, [String(next)]);
    assert.deepEqual(
      await callsOf('glob', async () => (got = await ids('glob', 1, 'k-1', other))),
      ['idem-takes-4'],
      'a replay: one call',
    );
    assert.deepEqual(got, [String(next)]);
    assert.deepEqual(
      await callsOf('glob', async () => (got = await ids('glob', 1, 'k-1'))),
      [],
      'a replay to the process that kept the answer: no call',
    );
    assert.deepEqual(got, [String(next)]);
    assert.deepEqual(
      await callsOf('glob', async () => (got = await ids('glob', 1, 'k-1', other))),
      [],
      'a replay to the process that found the answer: no call',
    );
    assert.deepEqual(got, [String(next)]);
    assert.deepEqual(await ids('glob', 1), [String(next + 1)], 'the replay took nothing');
  });

  it('order global: answers of 1, 2 and 3+ IDs kept in the call are the IDs of the counter, with stride and offset', async () => {
    await createTag(node.url, { tag: 'strided', stride: 3, offset: 2, step: 100_000, min_step: 100_000 });
    let last: string[] = [];
    await waitFor(
      'a request without a key that is one take',
      async () => (await callsOf('strided', async () => (last = await ids('strided', 1)))).join() === 'take-2',
      10_000,
      1,
    );
    const counter = (Number(last[0]) - 2) / 3;
    assert.ok(Number.isInteger(counter), `${last[0]} is k * 3 + 2`);
    const answers: string[][] = [];
    for (const [i, count] of [1, 2, 3, 7].entries()) {
      const calls = await callsOf('strided', async () => answers.push(await ids('strided', count, `s-${i}`)));
      assert.deepEqual(calls, ['idem-takes-4'], `count ${count}: one call`);
    }
    const all = answers.flat();
    assert.deepEqual(
      all,
      Array.from({ length: 13 }, (_, k) => String((counter + 1 + k) * 3 + 2)),
      'consecutive counter values, each k * 3 + 2',
    );
    for (const [i, count] of [1, 2, 3, 7].entries())
      assert.deepEqual(await ids('strided', count, `s-${i}`), answers[i], `replay of s-${i}`);
    assert.deepEqual(await ids('strided', 1), [String((counter + 14) * 3 + 2)], 'the replays took nothing');
  });

  it('order global: where a segment ends, the call claims and the take and record follow; IDs stay consecutive', async () => {
    await createTag(node.url, { tag: 'short', step: 10, min_step: 10, max_step: 10 });
    await ids('short', 1);
    const kinds = new Set<string>();
    const got: string[] = [];
    for (let i = 0; i < 12; i++) {
      const calls = await callsOf('short', async () => got.push(...(await ids('short', 3, `b-${i}`))));
      kinds.add(calls.filter((c) => c.startsWith('idem-') || c === 'take-2').join(' '));
    }
    assert.ok(kinds.has('idem-takes-4'), `some requests were one call: ${[...kinds].join(' | ')}`);
    assert.ok(
      [...kinds].some((k) => k.startsWith('idem-takes-4 take-2') && k.endsWith('idem-record-3')),
      `some fell back to take and record: ${[...kinds].join(' | ')}`,
    );
    assert.deepEqual(
      got,
      Array.from({ length: 36 }, (_, k) => String(k + 2)),
      'consecutive IDs, whichever way each was taken',
    );
    for (let i = 0; i < 12; i++)
      assert.deepEqual(await ids('short', 3, `b-${i}`), got.slice(3 * i, 3 * i + 3), `replay of b-${i}`);
    assert.deepEqual(await ids('short', 1), ['38'], 'the replays took nothing');
  });

  it('order global: keyed requests of one event-loop turn share one call, new keys and replays alike, served in arrival order', async () => {
    await createTag(node.url, { tag: 'turn', step: 100_000, min_step: 100_000 });
    await waitFor(
      'a request without a key that is one take',
      async () => (await callsOf('turn', () => ids('turn', 1))).join() === 'take-2',
      10_000,
      1,
    );
    const keys = new IdempotencyKeys(new IdempotencyRecords(node.rt.segments, node.rt.keys), { maxKeys: 100_000 });
    const stored = await node.rt.ids.prepare({ tag: 'turn', as: 'ids', count: 1 });
    const inKey = { shard: 0, scope: '', stride: 1, offset: 0, taken: () => {} };
    const send = (key: string, count: number) =>
      keys.issue(
        stored,
        key,
        fingerprintOf({ count, shape: 'ids' }),
        count,
        () => Promise.reject(new Error('taken the claim’s way')),
        inKey,
      );
    let first: string[][] = [];
    assert.deepEqual(
      await callsOf(
        'turn',
        async () => (first = await Promise.all(Array.from({ length: 20 }, (_, i) => send(`t-${i}`, 1 + (i % 3))))),
      ),
      ['idem-takes-4'],
      '20 new keys sent in one turn: one call',
    );
    const flat = first.flat().map(Number);
    assert.deepEqual(
      flat,
      flat.map((_, i) => flat[0] + i),
      'consecutive IDs in the order the requests were sent',
    );
    let second: string[][] = [];
    assert.deepEqual(
      await callsOf(
        'turn',
        async () =>
          (second = await Promise.all(
            Array.from({ length: 20 }, (_, i) => send(i % 2 === 0 ? `t-${i}` : `u-${i}`, 1 + (i % 3))),
          )),
      ),
      ['idem-takes-4'],
      '10 replays and 10 new keys in one turn: one call',
    );
    for (let i = 0; i < 20; i += 2) assert.deepEqual(second[i], first[i], `replay of t-${i}`);
    const fresh = second
      .filter((_, i) => i % 2 === 1)
      .flat()
      .map(Number);
    assert.deepEqual(
      fresh,
      fresh.map((_, i) => flat[flat.length - 1] + 1 + i),
      'the new keys continue where the first turn ended: the replays took nothing',
    );
  });

  it('order node: a new key is the claim and the record (the take is from memory); a replay is the claim', async () => {
    await createTag(node.url, { tag: 'nodeo', order: 'node', step: 100_000, min_step: 100_000 });
    // Warm once a request without a key is served from memory (the first ones fetch the block).
    await waitFor(
      'a request without a key served from memory',
      async () => (await callsOf('nodeo', () => ids('nodeo', 1))).length === 0,
      10_000,
      1,
    );
    let got: string[] = [];
    assert.deepEqual(await callsOf('nodeo', async () => (got = await ids('nodeo', 1, 'n-1'))), [
      'idem-claim-3',
      'idem-record-3',
    ]);
    assert.deepEqual(await callsOf('nodeo', async () => assert.deepEqual(await ids('nodeo', 1, 'n-1', other), got)), [
      'idem-claim-3',
    ]);
    assert.deepEqual(await callsOf('nodeo', async () => assert.deepEqual(await ids('nodeo', 1, 'n-1'), got)), []);
  });
});
