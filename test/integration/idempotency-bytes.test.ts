// suite: cluster
// Idempotency keys bounded in bytes (IDEMPOTENCY_MAX_BYTES; idem-claim-3.lua, idem-record-3.lua,
// idem-release-3.lua, includes/idem-bytes.lua), against the real stores: what a kept answer
// costs in Redis (MEMORY USAGE, printed), the tag's byte account following records, releases
// and expiries, a new key refused once the tag's keys cost their most bytes with a retry hint
// of when enough of them expire, having taken nothing, and kept keys still answered.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { IdmintError } from '../../src/errors.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import type { StoredTag } from '../../src/store/mysql/tags-repo.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

interface Issued {
  readonly answer: string[];
  /** What its own take gave; undefined when no take ran. */
  readonly taken: string[] | undefined;
}

/** Keyed requests of a tag through IdempotencyKeys of their own (byte bound, retention in s). */
function keysOn(node: LocalNode, maxBytes: number, retention?: number) {
  const keys = new IdempotencyKeys(new IdempotencyRecords(node.rt.segments, node.rt.keys), {
    maxKeys: 100_000,
    maxBytes,
  });
  const prepare = async (name: string): Promise<StoredTag> => {
    const tag = await node.rt.ids.prepare({ tag: name, as: 'ids', count: 1 });
    return retention === undefined ? tag : ({ ...tag, keyRetentionSeconds: retention } as StoredTag);
  };
  return {
    keys,
    prepare,
    async issue(name: string, key: string, count: number, fail = false): Promise<Issued> {
      let taken: string[] | undefined;
      const answer = await keys.issue(
        await prepare(name),
        key,
        fingerprintOf({ count, shape: 'ids' }),
        count,
        async () => {
          if (fail) throw new Error('the take failed');
          return (taken = await node.rt.ids.issue({ tag: name, as: 'ids', count }));
        },
      );
      return { answer, taken };
    },
  };
}

async function fullRefusal(p: Promise<Issued>): Promise<IdmintError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof IdmintError, `an IdmintError, got ${String(err)}`);
    assert.equal(err.code, 'IDEMPOTENCY_KEYS_FULL', err.message);
    assert.match(err.message, /IDEMPOTENCY_MAX_BYTES/);
    assert.equal(err.status, 429);
    return err;
  }
  assert.fail('expected IDEMPOTENCY_KEYS_FULL');
}

describe('idempotency keys bounded in bytes', () => {
  const names = testNames();
  let node: LocalNode;

  /** The tag's byte account: its total, and one key's charge. */
  const account = async (name: string, key = ''): Promise<number> => {
    const tag = await node.rt.ids.prepare({ tag: name, as: 'ids', count: 1 });
    return Number((await node.rt.segments.connection().hget(node.rt.keys.idempotencyBytes(name, tag.epoch), key)) ?? 0);
  };
  const memoryUsage = async (name: string, key: string): Promise<number> => {
    const tag = await node.rt.ids.prepare({ tag: name, as: 'ids', count: 1 });
    const record = node.rt.keys.idempotencyRecord(name, tag.epoch, key);
    return Number(await node.rt.segments.connection().call('MEMORY', 'USAGE', record, 'SAMPLES', '0'));
  };

  before(async () => {
    node = await startLocalNode(names);
    await createTag(node.url, { tag: 'plain' });
    for (const tag of ['mixed', 'spread', 'late']) await createTag(node.url, { tag, permute: { digits: 12 } });
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('charges each kept answer its bytes, as MEMORY USAGE measures them', async (t) => {
    const keys = keysOn(node, 64 * 1024 * 1024);
    for (const [name, count] of [
      ['plain', 1],
      ['plain', 1000],
      ['mixed', 1],
      ['mixed', 1000],
    ] as const) {
      const key = `size-${count}`;
      await keys.issue(name, key, count);
      const charged = await account(name, key);
      const usage = await memoryUsage(name, key);
      t.diagnostic(
        `kept answer of ${count} ID(s) of a ${name === 'plain' ? 'counter' : 'permuted (12 digits)'} tag: MEMORY USAGE ${usage} B, charged ${charged} B`,
      );
      assert.ok(
        charged > 0 && charged <= usage && usage <= 1.25 * charged + 128,
        `charged ${charged} B for a record of ${usage} B`,
      );
    }
  });

  it('refuses a new key that would take the tag past IDEMPOTENCY_MAX_BYTES, took nothing, answers kept keys, and has room once they expire', async () => {
    const budget = 40_000;
    const short = keysOn(node, budget, 3);
    const long = keysOn(node, budget);
    const first = await short.issue('spread', 's-1', 1000);
    const second = await long.issue('spread', 'l-1', 1000);
    const before = await account('spread');
    assert.ok(before > 25_000 && before <= budget, `the two answers cost ${before} B`);
    const refused = keysOn(node, budget);
    let took = false;
    const e = await fullRefusal(
      refused.keys.issue(
        await refused.prepare('spread'),
        'l-2',
        fingerprintOf({ count: 1000, shape: 'ids' }),
        1000,
        async () => {
          took = true;
          return [];
        },
      ) as Promise<never>,
    );
    assert.equal(took, false, 'a refused request takes nothing');
    assert.ok(
      e.retryAfter !== undefined && e.retryAfter >= 1 && e.retryAfter <= 3,
      `Retry-After ${e.retryAfter}: when the 3 s key expires`,
    );
    assert.equal(await account('spread'), before, 'a refusal charges nothing');
    assert.deepEqual(
      (await long.issue('spread', 'l-1', 1000)).answer,
      second.answer,
      'a kept key is answered when full',
    );
    assert.deepEqual((await long.issue('spread', 's-1', 1000)).answer, first.answer);
    // A take that fails gives its claim's charge back.
    await assert.rejects(long.issue('spread', 'small-fail', 1, true), /the take failed/);
    assert.equal(await account('spread'), before);
    const tag = await long.prepare('spread');
    await waitFor('the 3 s key to expire', async () => (await long.keys.held(tag)) === 1, 20_000);
    const room = await long.issue('spread', 'l-2', 1000);
    assert.deepEqual(room.answer, room.taken, 'the new key is served once room is free');
    assert.ok((await account('spread')) <= budget);
  });

  it('hints the expiry that frees enough bytes, not the first one', async () => {
    const budget = 40_000;
    const short = keysOn(node, budget, 3);
    const long = keysOn(node, budget);
    await short.issue('late', 'small', 1);
    await long.issue('late', 'big-1', 1000);
    await long.issue('late', 'big-2', 1000);
    const e = await fullRefusal(long.issue('late', 'big-3', 1000));
    assert.ok(
      e.retryAfter !== undefined && e.retryAfter > 86_000 && e.retryAfter <= 86_400,
      `Retry-After ${e.retryAfter}: when a day-long key expires`,
    );
  });
});
