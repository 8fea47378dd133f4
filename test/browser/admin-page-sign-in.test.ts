// The admin page at /admin in real headless Chromium against a real node: its security
// headers, signing in with the admin token (an HttpOnly cookie the server sets, Secure behind
// TLS) and out, a wrong token's message, and the viewer token's read-only page. The page must
// run without script errors or Content-Security-Policy violations.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ADMIN_TOKEN } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { openAdminPage, VIEWER_TOKEN } from '../helpers/admin-page.js';

describe('admin page in Chromium', () => {
  const session = openAdminPage();
  const { api, textOf, signIn, signInAsAdmin, openTag } = session;
  let url: string;
  let context: BrowserContext;
  let page: Page;
  beforeEach(() => {
    ({ url, context, page } = session);
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
    assert.equal(
      (await page.request.get(`${url}/admin/queues/api/queues`)).status(),
      200,
      'Bull Board opens signed in',
    );
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
    assert.ok(
      out.headers.getSetCookie().length >= 2 &&
        out.headers.getSetCookie().every((c) => c.startsWith('idmint_admin=;') && c.includes('Max-Age=0')),
    );
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
});
