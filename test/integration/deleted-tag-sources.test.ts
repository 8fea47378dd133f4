// suite: cluster
// A deleted tag leaves nothing of its sources behind in the processes that served it. Nothing
// asks a deleted tag's definition again, so the processes learn of the deletion from its
// announcement: each re-reads the definition it held at once and drops the tag's sources
// (coalescers, blocks, rule scopes). Without that, every tag deleted kept its sources for the
// life of the process: a soak creating and deleting a tag every few seconds grew its heap by
// about 3 KB a deleted tag. Two processes: the one that deletes, and one that only served.
// The tag's metric series go too (about 1.5 KB a tag), also from a third process that never
// served it and only ran its refills (the two serving processes run none, REFILL_CONCURRENCY=0):
// it holds no definition of the tag, and hears of the deletion from the announcement alone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SourceCache } from '../../src/service/sources.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** The lines of a process's /metrics (every series: the admin token is sent) labelled with the tag. */
async function seriesLines(n: LocalNode, tag: string): Promise<string[]> {
  const res = await fetch(`${n.url}/metrics`, { headers: { authorization: adminHeaders.authorization } });
  assert.equal(res.status, 200);
  return (await res.text()).split('\n').filter((line) => line.includes(`tag="${tag}"`));
}

/** The tags whose sources a process holds (IdService's cache, read for the test). */
const held = (n: LocalNode, tag: string) =>
  (n.rt.ids as unknown as { sources: SourceCache }).sources.size(tag) !== undefined;

const TAGS: Record<string, Record<string, unknown>> = {
  del_global: { mode: 'segment', order: 'global' },
  del_node: { mode: 'segment', order: 'node' },
  del_rule: { mode: 'rule', template: 'R{counter:6}', max_counter: 999999, reset_seconds: 0 },
};

describe('a deleted tag', () => {
  const names = testNames();
  const nodes: LocalNode[] = [];

  before(async () => {
    const serveOnly = { REFILL_CONCURRENCY: '0' };
    nodes.push(await startLocalNode(names, serveOnly), await startLocalNode(names, serveOnly));
    nodes.push(await startLocalNode(names));
    for (const [tag, body] of Object.entries(TAGS)) {
      await createTag(nodes[0].url, { tag, ...body });
      await createTag(nodes[0].url, { tag: `${tag}_m`, ...body });
    }
  });

  after(async () => {
    for (const n of nodes) await n.close().catch(() => undefined);
    await cleanup(names);
  });

  it('leaves no sources in any process that served it', { timeout: 60000 }, async () => {
    for (const n of nodes.slice(0, 2))
      for (const tag of Object.keys(TAGS)) {
        const res = await fetch(`${n.url}/v1/id/${tag}${tag === 'del_rule' ? '?app=a' : ''}`);
        assert.equal(res.status, 200, `${tag} answered`);
        assert.ok(held(n, tag), `${tag} has sources while it serves`);
      }
    for (const tag of Object.keys(TAGS)) {
      const res = await fetch(`${nodes[0].url}/v1/admin/tags/${tag}`, {
        method: 'DELETE',
        headers: { authorization: adminHeaders.authorization },
      });
      assert.equal(res.status, 204);
    }
    for (const [i, n] of nodes.slice(0, 2).entries())
      for (const tag of Object.keys(TAGS))
        await waitFor(`process ${i} to drop the sources of ${tag}`, () => !held(n, tag), 15000);
    // Created again through the other process, it serves as a new tag here once the announcement
    // has been delivered (GUARANTEES.md: other processes see a change one pub/sub hop later).
    await createTag(nodes[1].url, { tag: 'del_global', ...TAGS.del_global });
    await waitFor(
      'process 0 to serve the tag created again',
      async () => (await fetch(`${nodes[0].url}/v1/id/del_global`)).status === 200,
      15000,
    );
  });

  it('leaves no metric series in any process that served it or ran its refills', { timeout: 60000 }, async () => {
    const tags = Object.keys(TAGS).map((tag) => `${tag}_m`);
    for (const n of nodes.slice(0, 2))
      for (const tag of tags) {
        const res = await fetch(`${n.url}/v1/id/${tag}${tag.startsWith('del_rule') ? '?app=a' : ''}`);
        assert.equal(res.status, 200, `${tag} answered`);
      }
    for (const [i, n] of nodes.entries())
      for (const tag of tags) {
        assert.notDeepEqual(await seriesLines(n, tag), [], `process ${i} shows series of ${tag}`);
      }
    // The refills ran in the third process only; it never read the tags' definitions.
    assert.deepEqual(
      (await seriesLines(nodes[2], tags[0])).map((line) => line.split('{')[0]).filter((m) => m.includes('issued')),
      [],
      'the third process issued IDs of a tag it was not asked for',
    );
    for (const tag of tags) {
      const res = await fetch(`${nodes[0].url}/v1/admin/tags/${tag}`, {
        method: 'DELETE',
        headers: { authorization: adminHeaders.authorization },
      });
      assert.equal(res.status, 204);
    }
    for (const [i, n] of nodes.entries())
      for (const tag of tags) {
        await waitFor(
          `process ${i} to drop the series of ${tag}`,
          async () => (await seriesLines(n, tag)).length === 0,
          15000,
        );
      }
  });
});
