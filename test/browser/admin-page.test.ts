// The admin page at /admin in real headless Chromium against a real node: sign-in with the
// admin and the viewer token, creating tags of every mode, the server's validation messages,
// editing, disabling, deleting, client tokens and the worker pool. Every change made through
// the page is checked over the HTTP API, and the page must run without script errors or
// Content-Security-Policy violations.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const VIEWER_TOKEN = 'page-viewer-token';

describe('admin page in Chromium', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  /** A second Redis server, "b", that tags can be moved to. */
  let second: RedisServer;
  let url: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];

  const api = async (path: string, init: RequestInit = {}) => {
    const r = await fetch(`${url}${path}`, { ...init, headers: { ...adminHeaders, ...(init.headers as Record<string, string> | undefined) } });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read admin replies of every shape
    return { status: r.status, body: r.status === 204 ? undefined : ((await r.json()) as Record<string, any>) };
  };
  /** The element's text once it matches. */
  const textOf = async (selector: string, want: RegExp | string) => {
    const loc = page.locator(selector).filter({ hasText: want });
    await loc.first().waitFor({ state: 'visible' });
    return (await loc.first().textContent()) ?? '';
  };
  const signIn = async (token: string) => {
    await page.goto(`${url}/admin`);
    await page.fill('#token', token);
    await page.click('#sign-in-submit');
  };
  const signInAsAdmin = async () => {
    await signIn(ADMIN_TOKEN);
    await textOf('#role-badge', 'admin');
  };
  const openTag = async (tag: string) => {
    await page.click('#refresh');
    await page.click(`button.tag-link[data-tag="${tag}"]`);
    await textOf('#detail-title', `Tag ${tag}`);
  };
  const createThroughPage = async (fields: Record<string, string>, mode = 'segment', selects: Record<string, string> = {}) => {
    await page.click('#new-tag');
    await page.selectOption('#create-form [name=mode]', mode);
    for (const [k, v] of Object.entries(selects)) await page.selectOption(`#create-form [name=${k}]`, v);
    for (const [k, v] of Object.entries(fields)) await page.fill(`#create-form [name=${k}]`, v);
    await page.click('#create-submit');
  };

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh (apt-get install chromium)`);
    second = await RedisServer.start();
    node = await startLocalNode(names, { VIEWER_TOKEN, REDIS_URLS: `b=${second.url}` });
    url = node.url;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
    });
  });
  after(async () => {
    await browser?.close();
    await node?.close();
    await cleanup(names);
    await second?.stop();
  });
  beforeEach(async () => {
    context = await browser.newContext();
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    problems = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (/Content.Security.Policy|Refused to/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
    });
  });
  afterEach(async () => {
    await context.close();
    assert.deepEqual(problems, [], 'the page ran without script errors or CSP violations');
  });

  it('serves the page with its security headers', async () => {
    const res = await page.goto(`${url}/admin`);
    assert.equal(res?.status(), 200);
    const h = res!.headers();
    assert.match(h['content-security-policy'], /default-src 'self'/);
    assert.equal(h['cache-control'], 'no-cache');
    assert.match(h['content-type'], /^text\/html/);
    assert.equal(await page.getAttribute('#link-queues', 'href'), '/admin/queues');
    assert.equal(await page.getAttribute('#link-docs', 'href'), '/docs');
  });

  it("shows the server's message for a wrong token and keeps the console closed", async () => {
    await signIn('not-the-token');
    const msg = await textOf('#sign-in-error', /token/);
    assert.equal(msg, 'the token is neither the admin token nor the viewer token');
    assert.equal(await page.isVisible('#console'), false);
  });

  it('signs in with the admin token, keeps it in an HttpOnly cookie of the admin paths set by the server, and signs out', async () => {
    await signInAsAdmin();
    assert.equal(await page.isVisible('#new-tag'), true);
    const cookies = (await context.cookies()).filter((c) => c.name === 'idmint_admin');
    assert.deepEqual(cookies.map((c) => c.path).sort(), ['/admin', '/v1/admin']);
    for (const c of cookies) {
      assert.equal(c.value, ADMIN_TOKEN);
      assert.equal(c.httpOnly, true, `${c.path}: HttpOnly`);
      assert.equal(c.sameSite, 'Strict', `${c.path}: SameSite`);
      assert.equal(c.secure, false, `${c.path}: plain HTTP here, so not Secure`);
      assert.equal(c.expires, -1, `${c.path}: a session cookie`);
    }
    // No script sees it, and it goes to the admin paths only.
    const seen = await page.evaluate(() => document.cookie);
    assert.ok(!seen.includes(ADMIN_TOKEN), `document.cookie shows the token: ${seen}`);
    assert.ok(!seen.includes('idmint_admin'), `document.cookie shows the cookie: ${seen}`);
    for (const other of ['/v1/id/x', '/metrics', '/docs', '/tinyid/id/nextId', '/administrator'])
      assert.deepEqual(
        (await context.cookies(`${url}${other}`)).map((c) => c.name),
        [],
        `sent to ${other}`,
      );
    assert.equal((await page.request.get(`${url}/admin/queues/api/queues`)).status(), 200, 'Bull Board opens signed in');
    await page.reload();
    await textOf('#role-badge', 'admin'); // the kept cookie signs in again
    await page.click('#sign-out');
    await page.locator('#sign-in-form').waitFor({ state: 'visible' });
    assert.equal(
      (await context.cookies()).some((c) => c.name === 'idmint_admin'),
      false,
    );
  });

  it('signs in through the server only: a checked token gets the cookie, Secure behind TLS, and signing out clears it', async () => {
    const signInAs = (token: string, headers: Record<string, string> = {}) =>
      fetch(`${url}/v1/admin/session`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers } });
    const wrong = await signInAs('not-the-token');
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.headers.getSetCookie(), []);
    const viewer = await signInAs(VIEWER_TOKEN);
    assert.equal(viewer.status, 200);
    assert.deepEqual(await viewer.json(), { role: 'viewer' });
    const tls = await signInAs(ADMIN_TOKEN, { 'x-forwarded-proto': 'https' });
    const set = tls.headers.getSetCookie().filter((c) => !c.includes('Max-Age=0'));
    assert.deepEqual(set.map((c) => /Path=([^;]+)/.exec(c)?.[1]).sort(), ['/admin', '/v1/admin']);
    for (const c of set) assert.match(c, /; HttpOnly; SameSite=Strict; Secure$/);
    const out = await fetch(`${url}/v1/admin/session`, { method: 'DELETE' });
    assert.equal(out.status, 204);
    assert.ok(out.headers.getSetCookie().length >= 2 && out.headers.getSetCookie().every((c) => c.startsWith('idmint_admin=;') && c.includes('Max-Age=0')));
  });

  it('creates a segment tag that then serves IDs over HTTP, with its live state', async () => {
    await signInAsAdmin();
    await createThroughPage({ tag: 'pseg', step: '200', description: 'made in the page' });
    await textOf('#detail-title', 'Tag pseg');
    const stored = await api('/v1/admin/tags/pseg');
    assert.equal(stored.status, 200);
    assert.deepEqual([stored.body!.mode, stored.body!.step, stored.body!.description], ['segment', 200, 'made in the page']);
    const r = await fetch(`${url}/v1/id/pseg`);
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { id: string }).id, '1');
    await page.click('#refresh');
    await textOf('#tags-table tr[data-tag="pseg"] td.current', '2 – 200');
    assert.equal(await page.textContent('#tags-table tr[data-tag="pseg"] td.issued'), '1');
    assert.equal(await page.textContent('#tags-table tr[data-tag="pseg"] td.left'), '199');
  });

  it('creates an interleaved tag (stride, offset) and shows them, with its segments as IDs', async () => {
    await signInAsAdmin();
    await createThroughPage({ tag: 'podd', step: '100', stride: '2', offset: '1' });
    await textOf('#detail-title', 'Tag podd');
    const stored = await api('/v1/admin/tags/podd');
    assert.deepEqual([stored.body!.stride, stored.body!.offset], [2, 1]);
    const r = await fetch(`${url}/v1/id/podd`);
    assert.equal(((await r.json()) as { id: string }).id, '3');
    await page.click('#refresh');
    await page.click('#tags-table tr[data-tag="podd"]');
    await textOf('#detail-live dd[data-field="stride"]', '2');
    await textOf('#detail-live dd[data-field="offset"]', '1');
    // The current segment in IDs: counters 2..100 are 5..201.
    await textOf('#tags-table tr[data-tag="podd"] td.current', '5 – 201');
  });

  it('creates snowflake and rule tags', async () => {
    await signInAsAdmin();
    await createThroughPage({ tag: 'psf', description: 'sf' }, 'snowflake', { preset: 'jssafe' });
    await textOf('#detail-title', 'Tag psf');
    await createThroughPage({ tag: 'prule', template: 'R{counter:5}', max_counter: '99999' }, 'rule');
    await textOf('#detail-title', 'Tag prule');
    const sf = (await api('/v1/admin/tags/psf')).body!;
    assert.deepEqual([sf.mode, sf.preset, sf.worker_bits, sf.description], ['snowflake', 'jssafe', 6, 'sf']);
    const rule = (await api('/v1/admin/tags/prule')).body!;
    assert.deepEqual([rule.mode, rule.template, rule.max_counter], ['rule', 'R{counter:5}', 99999]);
    const id = await fetch(`${url}/v1/id/prule?app=shop`);
    assert.equal(id.status, 200);
    assert.equal(((await id.json()) as { id: string }).id, 'R00000');
    await page.click('#refresh');
    await textOf('#tags-table tr[data-tag="psf"] td.step', '41/6/6 ms');
    await textOf('#tags-table tr[data-tag="prule"]', 'rule R{counter:5}');
  });

  it("shows the server's validation message next to the form", async () => {
    await signInAsAdmin();
    await createThroughPage({ tag: 'pbad', step: 'many', min_step: '10', max_step: '5' });
    const shown = await textOf('#create-error', /step/);
    const direct = await api('/v1/admin/tags', {
      method: 'POST',
      body: JSON.stringify({ tag: 'pbad', mode: 'segment', step: 'many', min_step: 10, max_step: 5 }),
    });
    assert.equal(direct.status, 400);
    assert.equal(shown, direct.body!.error.message, 'the page shows exactly what the server answered');
    assert.equal((await api('/v1/admin/tags/pbad')).status, 404);
    // A snowflake layout the server refuses, with its own message.
    await page.selectOption('#create-form [name=mode]', 'snowflake');
    await page.fill('#create-form [name=tag]', 'pbadsf');
    await page.fill('#create-form [name=time_bits]', '30');
    await page.click('#create-submit');
    const sfDirect = await api('/v1/admin/tags', { method: 'POST', body: JSON.stringify({ tag: 'pbadsf', mode: 'snowflake', time_bits: 30 }) });
    assert.equal(sfDirect.status, 400);
    assert.equal(await textOf('#create-error', sfDirect.body!.error.message), sfDirect.body!.error.message);
    assert.equal((await api('/v1/admin/tags/pbadsf')).status, 404);
  });

  it('edits a tag and the new step sizes its next segment', async () => {
    await createTag(url, { tag: 'pedit', step: 100, min_step: 10 });
    await signInAsAdmin();
    await openTag('pedit');
    await page.fill('#edit-form [name=step]', '4000');
    await page.click('#edit-form button[type=submit]');
    await textOf('#edit-result', 'Saved: step.');
    assert.equal((await api('/v1/admin/tags/pedit')).body!.step, 4000);
    const r = await fetch(`${url}/v1/id/pedit`);
    assert.equal(((await r.json()) as { id: string }).id, '1');
    await page.click('#refresh');
    await textOf('#tags-table tr[data-tag="pedit"] td.current', '2 – 4000');
    await textOf('#detail-live dd[data-field="step"]', '4000');
    // A change the server refuses shows its message and changes nothing.
    await page.fill('#edit-form [name=min_step]', '5000');
    await page.click('#edit-form button[type=submit]');
    const direct = await api('/v1/admin/tags/pedit', { method: 'PATCH', body: '{"min_step":5000}' });
    assert.equal(direct.status, 400);
    assert.equal(await textOf('#edit-error', /min_step/), direct.body!.error.message);
    assert.equal((await api('/v1/admin/tags/pedit')).body!.min_step, 10);
  });

  it("shows a permuted tag's setting and the order it promises, never its key, and edits key_retention_seconds", async () => {
    await createTag(url, { tag: 'pperm', step: 100, min_step: 10, permute: { digits: 8 } });
    const r = await fetch(`${url}/v1/id/pperm`);
    assert.equal(r.status, 200);
    await signInAsAdmin();
    await openTag('pperm');
    await textOf('#detail-live dd[data-field="permute"]', '{"digits":8}');
    await textOf('#detail-live dd[data-field="id_order"]', /numeric values follow no order/);
    await textOf('#detail-live dd[data-field="key_retention_seconds"]', '86400');
    // The live state shows counters (the current segment 2..100), not permuted IDs.
    await textOf('#tags-table tr[data-tag="pperm"] td.current', '2 – 100');
    assert.doesNotMatch(await page.content(), /"key"|[0-9a-f]{32}/);
    await page.fill('#edit-form [name=key_retention_seconds]', '3600');
    await page.click('#edit-form button[type=submit]');
    await textOf('#edit-result', 'Saved: key_retention_seconds.');
    assert.equal((await api('/v1/admin/tags/pperm')).body!.key_retention_seconds, 3600);
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

  it('disables, enables and deletes a tag', async () => {
    await createTag(url, { tag: 'pgone' });
    await signInAsAdmin();
    await openTag('pgone');
    await page.click('#toggle-enabled');
    await textOf('#tags-table tr[data-tag="pgone"] td.state', 'disabled');
    const off = await fetch(`${url}/v1/id/pgone`);
    assert.equal(off.status, 409);
    assert.equal(((await off.json()) as { error: { code: string } }).error.code, 'TAG_DISABLED');
    await textOf('#toggle-enabled', 'Enable');
    await page.click('#toggle-enabled');
    await textOf('#tags-table tr[data-tag="pgone"] td.state', 'enabled');
    assert.equal((await fetch(`${url}/v1/id/pgone`)).status, 200);
    await page.click('#delete-tag');
    await page.click('#delete-yes');
    await page.locator('#tags-table tr[data-tag="pgone"]').waitFor({ state: 'detached' });
    assert.equal(await page.isVisible('#tag-detail'), false);
    assert.equal((await api('/v1/admin/tags/pgone')).status, 404);
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

  it('creates a client token, shows its secret once, and revokes it', async () => {
    await createTag(url, { tag: 'ptok' });
    await signInAsAdmin();
    await openTag('ptok');
    await textOf('#tokens-table', 'No client tokens');
    await page.fill('#token-form [name=name]', 'billing');
    await page.click('#token-create');
    const secret = await textOf('#token-secret-value', /^idm_/);
    await textOf('#tokens-table tbody tr', 'billing');
    assert.equal((await fetch(`${url}/v1/id/ptok`)).status, 404, 'the tag now wants a token (and answers others as a missing tag)');
    assert.equal((await fetch(`${url}/v1/id/ptok`, { headers: { authorization: `Bearer ${secret}` } })).status, 200, 'the shown secret works');
    await page.click('#tokens-table button.revoke');
    await textOf('#tokens-table', 'No client tokens');
    assert.equal((await fetch(`${url}/v1/id/ptok`)).status, 200, 'revoked: the tag is open again');
    assert.deepEqual((await api('/v1/admin/tags/ptok/tokens')).body, { tokens: [] });
  });

  it('gives the viewer token a read-only page', async () => {
    await createTag(url, { tag: 'pview', description: 'visible to viewers' });
    await api('/v1/admin/tags/pview/tokens', { method: 'POST', body: '{"name":"seen"}' });
    await signIn(VIEWER_TOKEN);
    await textOf('#role-badge', 'viewer (read only)');
    await page.locator('#tags-table tr[data-tag="pview"]').waitFor();
    assert.equal(await page.isVisible('#new-tag'), false, 'no create button');
    await openTag('pview');
    await textOf('#detail-live dd[data-field="description"]', 'visible to viewers');
    await textOf('#tokens-table tbody tr', 'seen');
    for (const sel of ['#detail-actions', '#tag-edit', '#token-form', '#tag-move', '#tokens-table button.revoke']) {
      assert.equal(await page.isVisible(sel), false, `${sel} is hidden for the viewer`);
    }
    assert.equal(await page.locator('#workers').isVisible(), true);
    // Bull Board opens read-only with the same cookie.
    const board = await page.request.get(`${url}/admin/queues/api/queues`);
    assert.equal(board.status(), 200);
    assert.ok(((await board.json()) as { queues: { readOnlyMode: boolean }[] }).queues.every((q) => q.readOnlyMode));
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
    assert.deepEqual(await row('b'), ['b', `127.0.0.1:${second.port}`, `127.0.0.1:${second.port}`, 'ready', String(counts.get('b'))]);
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
    assert.match((await page.locator('#move-to option[value="b"]').textContent()) ?? '', new RegExp(`^b, master 127\\.0\\.0\\.1:${second.port}, 0 tags$`));
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
