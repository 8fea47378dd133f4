// Redis key names (src/store/redis/keys.ts): what is built can be read back, and the BullMQ
// layout the janitor relies on is still bullmq's own.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { QueueKeys } from 'bullmq';
import { Keys, queueKeys } from '../../src/store/redis/keys.js';

/** Redis MATCH semantics for the patterns built here (*, ?, escapes; no classes needed). */
function matches(pattern: string, key: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') re += pattern[++i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's').test(key);
}

describe('Keys', () => {
  const keys = new Keys('t*x');

  it('worker-id spaces: leases, last timestamps, guard, and reading them back', () => {
    assert.equal(keys.workerLease(10, 7), 't*x:{ws10}:w:7');
    assert.equal(keys.workerLast(10, 7), 't*x:{ws10}:last:7');
    assert.equal(keys.workerSpaceInit(10), 't*x:{ws10}:init');
    assert.equal(keys.workerIdOf(10, keys.workerLease(10, 123)), 123);
    assert.ok(matches(keys.workerLeasePattern(10), keys.workerLease(10, 5)));
    assert.ok(!matches(keys.workerLeasePattern(10), 'tyx:{ws10}:w:5'), 'the prefix is matched literally');
    assert.ok(!matches(keys.workerLeasePattern(10), keys.workerLast(10, 5)));
    assert.ok(matches(keys.workerSpaceInitPattern(), keys.workerSpaceInit(12)));
    assert.equal(keys.workerBitsOf(keys.workerSpaceInit(12)), 12);
    assert.equal(keys.workerBitsOf('t*x:{ws}:init'), undefined);
  });
});

describe('BullMQ key layout (the janitor finds lease queues by it)', () => {
  const version = (createRequire(import.meta.url)('bullmq/package.json') as { version: string }).version;

  it(`is bullmq's own (bullmq ${version})`, () => {
    for (const prefix of ['{idmint}', '{t-1}', 'bull']) {
      const bull = new QueueKeys(prefix);
      for (const queue of ['lease.node-1', 'lease.a.b', 'janitor', 'refill']) {
        const meta = bull.getKeys(queue).meta;
        assert.equal(meta, bull.toKey(queue, 'meta'));
        assert.equal(queueKeys.queueOfMeta(prefix, meta), queue, `${prefix} ${queue}: ${meta}`);
        assert.equal(
          matches(queueKeys.metaPattern(prefix, 'lease.'), meta),
          queue.startsWith('lease.'),
          `${prefix} ${queue}`,
        );
      }
      assert.equal(queueKeys.queueOfMeta(prefix, bull.toKey('lease.n', 'wait')), undefined);
      assert.equal(queueKeys.queueOfMeta(prefix, `other:lease.n:meta`), undefined);
    }
  });
});
