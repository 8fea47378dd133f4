// The admin cookie against another site's page, in real headless Chromium: an attacker's page
// on another port of the same host (same site, so the SameSite=Strict cookie goes along)
// posts forms to the admin API and to Bull Board, and frames Bull Board. The forms are refused
// (403) and change nothing; the frame is refused by Bull Board's CSP; Bull Board's own requests
// (same origin) still write.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

describe('the admin cookie against a page of another origin, in Chromium', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;
  /** The attacker's pages, on another port. */
  let evil: Server;
  let evilUrl: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pages = new Map<string, string>();

  const tagStatus = async (tag: string) =>
    (await fetch(`${url}/v1/admin/tags/${tag}`, { headers: adminHeaders })).status;
  const refillCounts = async () => {
    const r = await fetch(`${url}/admin/queues/api/queues?activeQueue=refill&status=waiting`, {
      headers: adminHeaders,
    });
    const q = (
      (await r.json()) as { queues: { name: string; counts: Record<string, number>; isPaused: boolean }[] }
    ).queues.find((x) => x.name === 'refill');
    return { counts: JSON.stringify(q?.counts), paused: q?.isPaused };
  };

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh (apt-get install chromium)`);
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'kept' });
    evil = createServer((req, res) => {
      const body = pages.get(req.url ?? '');
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html' }).end(body ?? '');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
    // A JSON body from a text/plain form: name `{"tag":"forged","x":"` and value `"}`.
    pages.set(
      '/create',
      `<form id="f" method="POST" enctype="text/plain" action="${url}/v1/admin/tags"><input name='{"tag":"forged","x":"' value='"}'></form><script>f.submit()</script>`,
    );
    pages.set(
      '/token',
      `<form id="f" method="POST" action="${url}/v1/admin/tags/kept/tokens"></form><script>f.submit()</script>`,
    );
    pages.set(
      '/board-add',
      `<form id="f" method="POST" action="${url}/admin/queues/api/queues/refill/add"></form><script>f.submit()</script>`,
    );
    pages.set('/frame', `<iframe id="board" src="${url}/admin/queues/"></iframe>`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless=new',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => evil?.close(resolve));
    await node?.close();
    await cleanup(names);
  });
  beforeEach(async () => {
    context = await browser.newContext();
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    // Signed in through the admin page: the cookie is the browser's.
    await page.goto(`${url}/admin`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('#sign-in-submit');
    await page.locator('#role-badge').filter({ hasText: 'admin' }).waitFor();
  });
  afterEach(async () => {
    await context.close();
  });

  it('refuses the forms of another origin with the cookie (403) and changes nothing', async () => {
    const board = await refillCounts();
    for (const [path, target] of [
      ['/create', '/v1/admin/tags'],
      ['/token', '/v1/admin/tags/kept/tokens'],
      ['/board-add', '/admin/queues/api/queues/refill/add'],
    ] as const) {
      const answered = page.waitForResponse(
        (r) => r.url().startsWith(`${url}${target}`) && r.request().method() === 'POST',
      );
      await page.goto(`${evilUrl}${path}`);
      const res = await answered;
      // The cookie went along (same site): the guard, not SameSite, refused it.
      assert.match((await res.request().allHeaders()).cookie ?? '', /idmint_admin=/, path);
      assert.equal(res.status(), 403, path);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'FORBIDDEN', path);
    }
    assert.equal(await tagStatus('forged'), 404);
    const tokens = await fetch(`${url}/v1/admin/tags/kept/tokens`, { headers: adminHeaders });
    assert.deepEqual(((await tokens.json()) as { tokens: unknown[] }).tokens, []);
    assert.deepEqual(await refillCounts(), board);
  });

  it("keeps Bull Board out of another origin's frame, and lets its own page write", async () => {
    const refused: string[] = [];
    page.on('console', (msg) => {
      if (/frame-ancestors|Refused to frame/i.test(msg.text())) refused.push(msg.text());
    });
    const framed = page.waitForResponse((r) => r.url().startsWith(`${url}/admin/queues`));
    await page.goto(`${evilUrl}/frame`);
    const res = await framed;
    assert.match(res.headers()['content-security-policy'] ?? '', /frame-ancestors 'self'/);
    // Chromium replaces a frame its CSP refuses with an error page: no Bull Board inside.
    const frame = page.frames().find((f) => f !== page.mainFrame());
    assert.ok(frame);
    await frame.waitForLoadState();
    const inside = await frame.evaluate(() => document.querySelector('#root') !== null).catch(() => false);
    assert.equal(inside, false, 'Bull Board rendered inside the frame of another origin');
    assert.ok(
      refused.length > 0 || frame.url().startsWith('chrome-error:'),
      `the frame was not refused: ${frame.url()}`,
    );

    // Bull Board's own page writes with the cookie: its requests are of its own origin.
    await page.goto(`${url}/admin/queues/`);
    const status = await page.evaluate(async () => (await fetch('api/queues/refill/pause', { method: 'PUT' })).status);
    assert.equal(status, 200);
    assert.equal((await refillCounts()).paused, true);
    assert.equal(
      await page.evaluate(async () => (await fetch('api/queues/refill/resume', { method: 'PUT' })).status),
      200,
    );
    assert.equal((await refillCounts()).paused, false);
  });
});
