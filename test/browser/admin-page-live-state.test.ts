// The admin page at /admin in real headless Chromium against a real node: what it shows of the
// live system (a tag's capacity, the worker pool and its leases, each Redis server and its
// master, MySQL found behind Redis) and moving a tag to another Redis server, checked over the
// HTTP API. The page must run without script errors or Content-Security-Policy violations.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Page } from 'playwright-core';
import { createTag, startLocalNode } from '../../tools/node.js';
import type { RedisServer } from '../../tools/redis-server.js';
import { openAdminPage, VIEWER_TOKEN } from '../helpers/admin-page.js';

describe('admin page in Chromium', () => {
  const session = openAdminPage();
  const { api, textOf, signIn, signInAsAdmin, openTag } = session;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let second: RedisServer;
  let url: string;
  let page: Page;
  beforeEach(() => {
    ({ node, second, url, page } = session);
  });

  it("shows each tag's capacity: IDs left, rate and when they run out; the worker pool of a snowflake tag", async () => {
    await createTag(url, { tag: 'pcap', step: 100, min_step: 100, max_step: 100, max_id_limit: '1000' });
    await createTag(url, { tag: 'pcapsf', mode: 'snowflake', preset: 'jssafe' });
    for (let i = 0; i < 5; i++) {
      assert.equal((await fetch(`${url}/v1/ids/pcap?count=50`)).status, 200);
      await sleep(100); // takes spread over time: the tag's rate
    }
    assert.equal((await fetch(`${url}/v1/id/pcapsf`)).status, 200);
    await signInAsAdmin();
    await openTag('pcap');
    await textOf('#capacity dd[data-capacity="left"]', '750');
    await textOf('#capacity tr[data-counter="0"]', '750');
    const server = (await api('/v1/admin/tags/pcap')).body!.capacity as { runs_out_at: string };
    assert.ok(server.runs_out_at, 'a tag in use runs out at some date');
    await textOf('#tags-table tr[data-tag="pcap"] td.runs-out', server.runs_out_at.slice(0, 10));
    await openTag('pcapsf');
    await textOf('#capacity dd[data-capacity="worker ids leased"]', / of 64$/);
    await textOf('#capacity dd[data-capacity="layout runs out"]', '2089-09-06');
  });

  it('shows the worker-id lease once a snowflake ID was issued', async () => {
    await createTag(url, { tag: 'plsf', mode: 'snowflake', preset: 'jssafe' });
    assert.equal((await fetch(`${url}/v1/id/plsf`)).status, 200);
    await signInAsAdmin();
    const row = '#workers .space[data-worker-bits="6"] tr[data-worker-id]';
    const owner = await textOf(`${row} td.owner`, node.rt.config.nodeId);
    assert.equal(owner, node.rt.config.nodeId);
    await textOf('#workers .space[data-worker-bits="6"] h3', /1 used, 63 free of 64/);
  });

  it('lists each Redis server with the master its connection talks to now, to the viewer too', async () => {
    const { body } = await api('/v1/admin/redis');
    const counts = new Map((body!.redis as { name: string; tags: number }[]).map((r) => [r.name, r.tags]));
    await signIn(VIEWER_TOKEN);
    await textOf('#role-badge', 'viewer');
    const row = async (name: string) => {
      const cells = page.locator(`#redis-table tr[data-redis="${name}"] td`);
      await cells.first().waitFor({ state: 'visible' });
      return cells.allTextContents();
    };
    assert.deepEqual(await row('b'), [
      'b',
      `127.0.0.1:${second.port}`,
      `127.0.0.1:${second.port}`,
      'ready',
      String(counts.get('b')),
    ]);
    const [name, , master, status] = await row('default');
    assert.equal(name, 'default');
    assert.match(master, /^127\.0\.0\.1:\d+$/);
    assert.equal(status, 'ready');
  });

  it('moves a tag to another Redis server, which then serves it above every earlier ID', async () => {
    await createTag(url, { tag: 'pmove', step: 100 });
    const before = (await api('/v1/ids/pmove?count=5')).body!.ids as string[];
    await signInAsAdmin();
    await openTag('pmove');
    await page.locator('#move-to option[value="b"]').waitFor({ state: 'attached' });
    // Each server is listed with the master its connection talks to now.
    assert.match(
      (await page.locator('#move-to option[value="b"]').textContent()) ?? '',
      new RegExp(`^b, master 127\\.0\\.0\\.1:${second.port}, 0 tags$`),
    );
    await page.selectOption('#move-to', 'b');
    await page.click('#move-button');
    await textOf('#move-result', 'Moved to b');
    assert.equal((await api('/v1/admin/tags/pmove')).body!.redis, 'b');
    const after = (await api('/v1/ids/pmove?count=5')).body!.ids as string[];
    assert.ok(BigInt(after[0]) > BigInt(before[4]), `${after[0]} follows ${before[4]}`);
    // A refusal shows the server's message: snowflake tags have nothing to move.
    await createTag(url, { tag: 'pmove-sf', mode: 'snowflake' });
    await openTag('pmove-sf');
    await page.locator('#move-to option[value="b"]').waitFor({ state: 'attached' });
    await page.selectOption('#move-to', 'b');
    await page.click('#move-button');
    const refused = await textOf('#move-error', /snowflake/);
    assert.match(refused, /nothing to move/);
  });

  it('notes when MySQL was found behind Redis for a tag', async () => {
    await createTag(url, { tag: 'pbehind', step: 100, min_step: 100, max_step: 100 });
    assert.equal(((await api('/v1/ids/pbehind?count=5')).body!.ids as string[])[0], '1');
    // MySQL restored from before the first segment: its mark is behind the 100 Redis installed.
    await node.rt.pool.query("UPDATE idmint_counters SET max_id = 0 WHERE tag = 'pbehind'");
    assert.equal((await api('/v1/ids/pbehind?count=100')).status, 200);
    await signInAsAdmin();
    await openTag('pbehind');
    const note = await textOf('#counter-regression', 'found behind Redis');
    assert.match(note, /once; last at .*\(shard 0\): raised from 0 to 100/);
  });
});
