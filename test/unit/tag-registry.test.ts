// The tag registry's cache against a repository whose reads the test holds open and answers
// when it chooses: once a change is announced (by this process or delivered from another),
// no request gets the definition from before it, whether cached or being read already.
// Without an announcement, a definition older than TAG_CACHE_MS keeps serving while it is
// read again (stale-while-revalidate).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { TagRegistry } from '../../src/service/tag-registry.js';
import type { StoredTag } from '../../src/store/mysql/tags-repo.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { Keys } from '../../src/store/redis/keys.js';

const keys = new Keys('unit');
const CHANNEL = keys.tagsChanged();

/** A definition; only the fields the registry and these checks look at matter. */
const def = (name: string, epoch: number, enabled = true) =>
  ({ tag: name, epoch, enabled, mode: 'segment' }) as unknown as StoredTag;

interface Read {
  readonly name: string;
  answer(row: StoredTag | undefined): void;
  fail(err: Error): void;
}

/** A repository whose reads stay open until the test answers them, in any order. */
class HeldRepo {
  readonly reads: Read[] = [];
  get(name: string): Promise<StoredTag | undefined> {
    return new Promise((resolve, reject) => this.reads.push({ name, answer: resolve, fail: reject }));
  }
  async tokenHashes(): Promise<string[]> {
    return [];
  }
}

/** A subscriber connection the test delivers announcements on, as Redis would. */
class FakeSubscriber extends EventEmitter {
  readonly isCluster = false;
  subscriptions = 0;
  async subscribe(): Promise<number> {
    this.subscriptions++;
    return 1;
  }
  deliver(tag: string): void {
    this.emit('message', CHANNEL, tag);
  }
}

const publisher = { publish: async () => 1 } as unknown as RedisClient;
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

async function setup(maxAgeMs = 60_000) {
  const repo = new HeldRepo();
  const sub = new FakeSubscriber();
  const reg = new TagRegistry(repo, publisher, keys, maxAgeMs, pino({ level: 'silent' }));
  await reg.listen(sub as unknown as RedisClient);
  return { repo, sub, reg };
}

/** Settles of many concurrent gets, as they come. */
function many(reg: TagRegistry, name: string, n: number): Promise<(StoredTag | undefined)[]> {
  return Promise.all(Array.from({ length: n }, () => reg.get(name)));
}

const epochs = (xs: (StoredTag | undefined)[]) =>
  xs.map((t) => (t === undefined ? 'none' : `${t.epoch}${t.enabled ? '' : '-off'}`));

describe('tag registry: a change is seen by every request after it', () => {
  it('a cached "no such tag": gets after the announcement all wait for the read it causes', async () => {
    for (const how of ['announce', 'deliver'] as const) {
      const { repo, sub, reg } = await setup();
      const first = reg.get('t1');
      repo.reads[0].answer(undefined);
      assert.equal(await first, undefined);
      // The change: made here (announce before the admin call answers) or delivered from another process.
      if (how === 'announce') await reg.announce('t1');
      else sub.deliver('t1');
      assert.equal(reg.peek('t1'), undefined, 'peek after the change does not serve the cached "no such tag"');
      const after = many(reg, 't1', 8);
      await turns();
      assert.equal(repo.reads.length, 2, 'one read for all the gets after the change');
      assert.equal(
        reg.peek('t1'),
        undefined,
        'peek while the read is in flight does not serve the cached "no such tag"',
      );
      repo.reads[1].answer(def('t1', 1));
      assert.deepEqual(epochs(await after), Array(8).fill('1'), `${how}: every get after the change sees the new tag`);
      assert.equal(reg.peek('t1')?.epoch, 1);
    }
  });

  it('a read that started before the announcement is not joined by gets after it', async () => {
    const { repo, sub, reg } = await setup();
    const first = reg.get('t2');
    repo.reads[0].answer(def('t2', 1));
    await first;
    // A change announced, a read starts (the old row is what it will see)...
    sub.deliver('t2');
    const before = many(reg, 't2', 3);
    await turns();
    assert.equal(repo.reads.length, 2);
    // ...and another change is announced while that read is still open.
    sub.deliver('t2');
    const after = many(reg, 't2', 8);
    await turns();
    assert.equal(repo.reads.length, 3, 'gets after the second change start their own read');
    // The older read answers last (reads may finish out of order).
    repo.reads[2].answer(def('t2', 1, false));
    repo.reads[1].answer(def('t2', 1));
    assert.deepEqual(epochs(await after), Array(8).fill('1-off'), 'gets after the change see it');
    assert.deepEqual(epochs(await before), Array(3).fill('1'), 'gets before it may see the older row');
    // The older read finishing later did not replace the newer definition in the cache.
    assert.equal(reg.peek('t2')?.enabled, false);
    assert.deepEqual(epochs(await many(reg, 't2', 4)), Array(4).fill('1-off'));
    assert.equal(repo.reads.length, 3, 'served from the cache afterwards');
  });

  it('changed() reads an announced change again and tells coalescers only what moves the counter', async () => {
    const { repo, sub, reg } = await setup();
    const first = reg.get('t3');
    repo.reads[0].answer(def('t3', 4));
    await first;
    assert.equal(reg.changed('t3', 4), false);

    // An announcement alone: a read starts, and until it is back nothing is known to have moved.
    sub.deliver('t3');
    assert.equal(reg.changed('t3', 4), false, 'announced, not read yet');
    assert.equal(repo.reads.length, 2, 'the announcement started a read');
    assert.equal(reg.changed('t3', 4), false);
    await turns();
    assert.equal(repo.reads.length, 2, 'later calls join that read');
    repo.reads[1].answer(def('t3', 4));
    await turns();
    assert.equal(reg.changed('t3', 4), false, 'same epoch, enabled: the waiting requests continue');

    // A disable, then a new epoch, each once read.
    sub.deliver('t3');
    assert.equal(reg.changed('t3', 4), false);
    repo.reads[2].answer(def('t3', 4, false));
    await turns();
    assert.equal(reg.changed('t3', 4), true, 'disabled');
    sub.deliver('t3');
    assert.equal(reg.changed('t3', 4), false);
    repo.reads[3].answer(def('t3', 5));
    await turns();
    assert.equal(reg.changed('t3', 4), true, 'another epoch');
    assert.equal(reg.changed('t3', 5), false);

    // A read that fails leaves the last known definition in place (the refill wait's deadline
    // decides); a deletion, once read, is a change.
    sub.deliver('t3');
    assert.equal(reg.changed('t3', 5), false);
    repo.reads[4].fail(new Error('MySQL is away'));
    await turns();
    assert.equal(reg.changed('t3', 5), false, 'unknown: the last known definition serves');
    sub.deliver('t3');
    assert.equal(reg.changed('t3', 5), false);
    repo.reads[5].answer(undefined);
    await turns();
    assert.equal(reg.changed('t3', 5), true, 'deleted');
  });

  it('reconnecting the subscriber marks every cached definition changed once it subscribed again', async () => {
    const { repo, sub, reg } = await setup();
    const first = reg.get('t4');
    repo.reads[0].answer(def('t4', 1));
    await first;
    sub.emit('ready');
    assert.equal(sub.subscriptions, 2, 'subscribed again on ready');
    await turns(1);
    assert.equal(reg.peek('t4'), undefined);
    const after = many(reg, 't4', 4);
    await turns();
    repo.reads[1].answer(undefined);
    assert.deepEqual(epochs(await after), Array(4).fill('none'));
  });

  it('without an announcement, a definition older than TAG_CACHE_MS serves while it is read again', async () => {
    const { repo, reg } = await setup(30);
    const first = reg.get('t5');
    repo.reads[0].answer(def('t5', 1));
    await first;
    await sleep(40);
    assert.equal(reg.peek('t5'), undefined, 'peek declines an old definition (get decides)');
    assert.deepEqual(epochs(await many(reg, 't5', 4)), Array(4).fill('1'), 'the cached one answers at once');
    assert.equal(repo.reads.length, 2, 'one background read');
    repo.reads[1].answer(def('t5', 1, false));
    await turns();
    assert.equal(reg.peek('t5')?.enabled, false);
  });

  it('when MySQL cannot be read after a change, the last known definition serves (not retried before TAG_CACHE_MS)', async () => {
    const { repo, sub, reg } = await setup();
    const first = reg.get('t6');
    repo.reads[0].answer(def('t6', 1));
    await first;
    sub.deliver('t6');
    const after = many(reg, 't6', 3);
    await turns();
    repo.reads[1].fail(new Error('connect ECONNREFUSED'));
    assert.deepEqual(epochs(await after), Array(3).fill('1'));
    assert.equal(reg.peek('t6')?.epoch, 1);
    assert.equal(repo.reads.length, 2);
    // Never read at all: the failure is the answer.
    const none = reg.get('t7');
    await turns();
    repo.reads[2].fail(new Error('connect ECONNREFUSED'));
    await assert.rejects(none, (e: Error & { code?: string }) => e.code === 'UNAVAILABLE');
  });

  it('refresh() by many requests at once (a tag moving) is one read, and the cache waits for it', async () => {
    const { repo, reg } = await setup();
    const first = reg.get('t8');
    repo.reads[0].answer(def('t8', 1));
    await first;
    const refreshed = Promise.all(Array.from({ length: 50 }, () => reg.refresh('t8')));
    assert.equal(reg.peek('t8'), undefined, 'the cached definition does not serve while it is read again');
    const other = reg.get('t8');
    await turns();
    assert.equal(repo.reads.length, 2, 'one read for every refresh and get');
    repo.reads[1].answer(def('t8', 2));
    assert.deepEqual(epochs(await refreshed), Array(50).fill('2'));
    assert.equal((await other)?.epoch, 2);
    // Once it is back, a refresh reads again.
    const again = reg.refresh('t8');
    await turns();
    assert.equal(repo.reads.length, 3);
    repo.reads[2].answer(def('t8', 3));
    assert.equal((await again)?.epoch, 3);
  });
});

describe('tag registry: made-up names cost bounded memory', () => {
  it('keeps at most maxAbsent names of tags that do not exist, forgets the oldest, and never a tag that exists', async () => {
    const repo = new HeldRepo();
    const reg = new TagRegistry(repo, publisher, keys, 60_000, pino({ level: 'silent' }), 3);
    const real = reg.get('real');
    repo.reads.shift()!.answer(def('real', 1));
    assert.equal((await real)?.epoch, 1);
    for (let i = 0; i < 50; i++) {
      const got = reg.get(`nope${i}`);
      repo.reads.shift()!.answer(undefined);
      assert.equal(await got, undefined);
    }
    assert.equal(reg.cachedNames(), 1 + 3, 'the tag and the three names read last');
    // The newest absent name answers from the cache; a forgotten one is read again.
    assert.equal(await reg.get('nope49'), undefined);
    assert.equal(repo.reads.length, 0);
    const again = reg.get('nope0');
    assert.equal(repo.reads.length, 1, 'a forgotten name is read again');
    repo.reads.shift()!.answer(undefined);
    assert.equal(await again, undefined);
    assert.equal(reg.peek('real')?.epoch, 1, 'the tag that exists is still cached');
  });

  it('keeps nothing of a name whose first read failed', async () => {
    const { repo, reg } = await setup();
    const before = reg.cachedNames();
    for (let i = 0; i < 20; i++) {
      const got = reg.get(`down${i}`);
      repo.reads.shift()!.fail(new Error('connect ECONNREFUSED'));
      await assert.rejects(got, /tag definitions cannot be read/);
    }
    assert.equal(reg.cachedNames(), before);
  });
});
