// suite: single — /metrics access and exposition, no Redis key layout involved
// A permuted tag's volume stays hidden: an open /metrics (no METRICS_TOKEN) leaves out every
// series labelled with a permuted tag (issued, remaining, rate, forecasts...) while it shows the
// others; with a metrics token the scrape that sends it sees them all. A caller told that a tag
// is exhausted is not told how many IDs are left; the admin API still shows the admin and the
// viewer the tag's capacity.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const METRICS_TOKEN = 'scrape-secret-5678';
const VIEWER_TOKEN = 'viewer-secret-5678';

/** The tags named by the `tag` label of a metrics text's samples. */
function labelledTags(text: string): Set<string> {
  return new Set([...text.matchAll(/^idmint_\w+\{[^}]*\btag="([^"]+)"/gm)].map((m) => m[1]));
}

async function issueBoth(url: string): Promise<void> {
  for (const tag of ['hush', 'loud']) assert.equal((await fetch(`${url}/v1/ids/${tag}?count=3`)).status, 200, tag);
}

describe('a permuted tag on an open /metrics', () => {
  const names = testNames();
  let node: LocalNode;

  before(async () => {
    node = await startLocalNode(names, { VIEWER_TOKEN, LOG_LEVEL: 'error' });
    await createTag(node.url, { tag: 'hush', permute: { digits: 6 }, step: 10, min_step: 10, max_id_limit: 5 });
    await createTag(node.url, { tag: 'loud' });
    await issueBoth(node.url);
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('leaves out every series of the permuted tag, and shows the others', async () => {
    const res = await fetch(`${node.url}/metrics`);
    assert.equal(res.status, 200);
    const tags = labelledTags(await res.text());
    assert.ok(tags.has('loud'), `the plain tag's series are there: ${[...tags].join(', ')}`);
    assert.ok(!tags.has('hush'), 'no series of the permuted tag');
  });

  it('tells a caller the tag is exhausted, not how many IDs are left', async () => {
    const res = await fetch(`${node.url}/v1/ids/hush?count=3`);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ID_SPACE_EXHAUSTED');
    assert.match(body.error.message, /exhausted/);
    assert.doesNotMatch(body.error.message, /\d/, `a count in ${body.error.message}`);
  });

  it('still shows the admin and the viewer the tag’s capacity', async () => {
    for (const token of [ADMIN_TOKEN, VIEWER_TOKEN]) {
      const res = await fetch(`${node.url}/v1/admin/tags/hush`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { capacity: { remaining_ids?: number } | null };
      assert.equal(body.capacity?.remaining_ids, 2, JSON.stringify(body.capacity));
    }
  });
});

describe('a permuted tag on /metrics with a metrics token', () => {
  const names = testNames();
  let node: LocalNode;

  before(async () => {
    node = await startLocalNode(names, { METRICS_TOKEN, LOG_LEVEL: 'error' });
    await createTag(node.url, { tag: 'hush', permute: { digits: 6 } });
    await createTag(node.url, { tag: 'loud' });
    await issueBoth(node.url);
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('shows its series to the scrape that sends the token', async () => {
    const res = await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(res.status, 200);
    const tags = labelledTags(await res.text());
    assert.ok(tags.has('hush') && tags.has('loud'), [...tags].join(', '));
  });
});
