// suite: single — moves a tag to a private redis-server
// Read-your-writes through the write door (service/tag-admin.ts): after each kind of admin
// write resolves, this process's tag registry serves the new definition at once, and so does
// the registry of another process (its own subscriber connection and cache) once the
// announcements published before a marker have reached it. Both registries cache definitions
// for TAG_CACHE_MS (60 s here), so a write the door did not announce is missed by both and
// each check fails. Also the Redis clean-up the door pairs with a delete.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/logger.js';
import type { StoredTag } from '../../src/service/tag-admin.js';
import { TagRegistry } from '../../src/service/tag-registry.js';
import type { RedisClient } from '../../src/store/redis/connection.js';
import { cleanup, testConfig, testNames, testRedis } from '../../tools/env.js';
import { startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';

const CACHE_MS = '60000';

describe('the write door announces every admin write', () => {
  const names = testNames();
  let target: RedisServer;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let publisher: RedisClient;
  let subscriber: RedisClient;
  /** The tag registry of "another process": its own cache and its own subscriber. */
  let elsewhere: TagRegistry;
  /** Resolvers of markers not yet seen by the other process's subscriber. */
  const markers = new Map<string, () => void>();

  before(async () => {
    target = await RedisServer.start();
    const env = { REDIS_URLS: `b=${target.url}`, TAG_CACHE_MS: CACHE_MS, LOG_LEVEL: 'error' };
    node = await startLocalNode(names, env);
    const { rt } = node;
    publisher = testRedis();
    subscriber = testRedis();
    const repo = { get: (tag: string) => rt.tags.get(tag), tokenHashes: (tag: string) => rt.tokens.hashes(tag) };
    const log = createLogger(testConfig(names, env));
    elsewhere = new TagRegistry(repo, publisher, rt.keys, Number(CACHE_MS), log);
    await elsewhere.listen(subscriber);
    // Attached after the registry's own listener: it runs after the registry has seen the message.
    subscriber.on('message', (_channel: string, name: string) => markers.get(name)?.());
  });

  after(async () => {
    subscriber?.disconnect();
    publisher?.disconnect();
    await node?.close();
    await cleanup(names);
    await target?.stop();
  });

  /**
   * Resolves once the other process has received every announcement published before now: a
   * marker published on the same channel after them reaches its subscriber after them.
   */
  async function announcementsDelivered(): Promise<void> {
    const marker = `marker-${randomUUID()}`;
    const seen = new Promise<void>((resolve) => markers.set(marker, resolve));
    await publisher.publish(node.rt.keys.tagsChanged(), marker);
    await seen;
    markers.delete(marker);
  }

  /** Both registries read the tag now, so each holds it in its cache for TAG_CACHE_MS. */
  async function cacheEverywhere(tag: string): Promise<void> {
    await node.rt.registry.get(tag);
    await elsewhere.get(tag);
  }

  /** What this process serves at once after the write, and what the other serves once delivered. */
  async function definitionsAfterWrite(tag: string): Promise<[StoredTag | undefined, StoredTag | undefined]> {
    const here = await node.rt.registry.get(tag);
    await announcementsDelivered();
    return [here, await elsewhere.get(tag)];
  }

  it('announces a created tag', async () => {
    await cacheEverywhere('made');
    await node.rt.tagAdmin.createTag({ tag: 'made', description: 'first' });
    for (const seen of await definitionsAfterWrite('made')) assert.equal(seen?.description, 'first');
  });

  it('announces an updated tag', async () => {
    await node.rt.tagAdmin.createTag({ tag: 'edited', description: 'before' });
    await cacheEverywhere('edited');
    await node.rt.tagAdmin.updateTag('edited', { description: 'after' });
    for (const seen of await definitionsAfterWrite('edited')) assert.equal(seen?.description, 'after');
  });

  it('announces a deleted tag and drops its Redis state', async () => {
    await node.rt.tagAdmin.createTag({ tag: 'gone' });
    assert.ok(await node.rt.ids.issue({ tag: 'gone', as: 'one' }));
    const old = await node.rt.adminReads.getTag('gone');
    const ref = { tag: 'gone', epoch: old.epoch, shard: 0, redis: old.redis };
    assert.ok((await node.rt.segments.stats(ref)).gen, 'the tag holds a segment in Redis before the delete');
    await cacheEverywhere('gone');
    await node.rt.tagAdmin.deleteTag('gone');
    for (const seen of await definitionsAfterWrite('gone')) assert.equal(seen, undefined);
    assert.equal((await node.rt.segments.stats(ref)).gen, undefined, 'the deleted tag keeps no segment in Redis');
  });

  it('announces a created client token, and its revocation', async () => {
    await node.rt.tagAdmin.createTag({ tag: 'guarded' });
    await cacheEverywhere('guarded');
    const token = await node.rt.tagAdmin.createToken('guarded', 'app');
    for (const seen of await definitionsAfterWrite('guarded')) assert.equal(seen?.tokenHashes?.size, 1);
    await node.rt.tagAdmin.revokeToken('guarded', token.id);
    for (const seen of await definitionsAfterWrite('guarded')) assert.equal(seen?.tokenHashes?.size, 0);
  });

  it('announces a tag an import creates', async () => {
    await cacheEverywhere('imported');
    const report = await node.rt.tagAdmin.importTags({ system: 'leaf-snowflake', leafSnowflake: { tag: 'imported' } });
    assert.deepEqual(
      report.tags.map((tag) => [tag.tag, tag.action]),
      [['imported', 'create']],
    );
    for (const seen of await definitionsAfterWrite('imported')) assert.equal(seen?.mode, 'snowflake');
  });

  it('announces a tag moved to another Redis server', async () => {
    await node.rt.tagAdmin.createTag({ tag: 'moved' });
    await cacheEverywhere('moved');
    const result = await node.rt.tagAdmin.moveTag('moved', 'b');
    assert.equal(result.moved, true);
    for (const seen of await definitionsAfterWrite('moved')) assert.equal(seen?.redis, 'b');
  });
});
