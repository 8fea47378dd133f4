// The admin page at /admin in real headless Chromium against a real node, for the page's
// tests: a node with the admin and a viewer token and a second Redis server "b" that tags can
// be moved to, a fresh browser context per test, and the steps the tests share (admin API
// calls, waiting for text, signing in, opening and creating a tag through the page). After
// each test the page must have run without script errors or Content-Security-Policy
// violations.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, afterEach, before, beforeEach } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const VIEWER_TOKEN = 'page-viewer-token';

export interface AdminPage {
  node: Awaited<ReturnType<typeof startLocalNode>>;
  /** A second Redis server, "b", that tags can be moved to. */
  second: RedisServer;
  url: string;
  context: BrowserContext;
  page: Page;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read admin replies of every shape
  api(path: string, init?: RequestInit): Promise<{ status: number; body: Record<string, any> | undefined }>;
  /** The element's text once it matches. */
  textOf(selector: string, want: RegExp | string): Promise<string>;
  signIn(token: string): Promise<void>;
  signInAsAdmin(): Promise<void>;
  openTag(tag: string): Promise<void>;
  createThroughPage(fields: Record<string, string>, mode?: string, selects?: Record<string, string>): Promise<void>;
}

/**
 * Starts the node and Chromium for the enclosing describe and opens a page per test; the fields are set once its hooks
 * ran.
 */
export function openAdminPage(): AdminPage {
  const names = testNames();
  let browser: Browser;
  let problems: string[];

  const session = {
    async api(path: string, init: RequestInit = {}) {
      const r = await fetch(`${session.url}${path}`, {
        ...init,
        headers: { ...adminHeaders, ...(init.headers as Record<string, string> | undefined) },
      });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read admin replies of every shape
      return { status: r.status, body: r.status === 204 ? undefined : ((await r.json()) as Record<string, any>) };
    },
    async textOf(selector: string, want: RegExp | string) {
      const loc = session.page.locator(selector).filter({ hasText: want });
      await loc.first().waitFor({ state: 'visible' });
      return (await loc.first().textContent()) ?? '';
    },
    async signIn(token: string) {
      await session.page.goto(`${session.url}/admin`);
      await session.page.fill('#token', token);
      await session.page.click('#sign-in-submit');
    },
    async signInAsAdmin() {
      await session.signIn(ADMIN_TOKEN);
      await session.textOf('#role-badge', 'admin');
    },
    async openTag(tag: string) {
      await session.page.click('#refresh');
      // The refresh redraws the table, maybe while the click lands: a click that hit a row being
      // redrawn opens nothing, so the click is made again until the panel shows the tag.
      const title = session.page
        .locator('#detail-title')
        .filter({ hasText: `Tag ${tag}` })
        .first();
      for (let attempt = 1; ; attempt++) {
        await session.page.click(`button.tag-link[data-tag="${tag}"]`);
        try {
          await title.waitFor({ state: 'visible', timeout: 2_000 });
          return;
        } catch (err) {
          if (attempt === 5) throw err;
        }
      }
    },
    async createThroughPage(fields: Record<string, string>, mode = 'segment', selects: Record<string, string> = {}) {
      const page = session.page;
      await page.click('#new-tag');
      await page.selectOption('#create-form [name=mode]', mode);
      for (const [k, v] of Object.entries(selects)) await page.selectOption(`#create-form [name=${k}]`, v);
      for (const [k, v] of Object.entries(fields)) await page.fill(`#create-form [name=${k}]`, v);
      await page.click('#create-submit');
    },
  } as AdminPage;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh (apt-get install chromium)`);
    session.second = await RedisServer.start();
    session.node = await startLocalNode(names, { VIEWER_TOKEN, REDIS_URLS: `b=${session.second.url}` });
    session.url = session.node.url;
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
    await session.node?.close();
    await cleanup(names);
    await session.second?.stop();
  });
  beforeEach(async () => {
    session.context = await browser.newContext();
    const page = await session.context.newPage();
    session.page = page;
    page.setDefaultTimeout(10_000);
    problems = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (/Content.Security.Policy|Refused to/i.test(msg.text())) problems.push(`CSP: ${msg.text()}`);
    });
  });
  afterEach(async () => {
    await session.context.close();
    assert.deepEqual(problems, [], 'the page ran without script errors or CSP violations');
  });
  return session;
}
