// suite: single — the admin guard of one node, no Redis key layout involved
// The admin guard against an attacker: a write with the session cookie alone (what a
// cross-site or same-site form can make a signed-in browser send) is refused and changes
// nothing, on the admin API and on Bull Board; Bull Board is served with a CSP that forbids
// framing by another origin; guessing the admin token is counted, logged and slowed down per
// source address (429 with Retry-After, the right token included, until the window passes).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AuthFailures } from '../../src/api/http/auth-failures.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { createTag, startLocalNode } from '../../tools/node.js';

const cookie = { cookie: `idmint_admin=${ADMIN_TOKEN}` };
const json = { 'content-type': 'application/json' };
const MAX_FAILURES = 4;
const WINDOW_MS = 8000;

async function errorCode(r: Response): Promise<string | undefined> {
  return ((await r.json()) as { error?: { code: string } }).error?.code;
}

async function metric(url: string, line: RegExp): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = text.split('\n').find((l) => line.test(l));
  return m === undefined ? 0 : Number(m.split(' ').at(-1));
}

describe('admin writes need more than the cookie', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'kept' });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('refuses a write with the cookie alone (403) and changes nothing; reads with it still work', async () => {
    const create = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: { ...cookie, ...json },
      body: '{"tag":"forged"}',
    });
    assert.equal(create.status, 403);
    assert.equal(await errorCode(create), 'FORBIDDEN');
    // A form's content type: no JSON body, still refused before anything is read.
    const form = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: { ...cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'tag=forged',
    });
    assert.equal(form.status, 403);
    const del = await fetch(`${url}/v1/admin/tags/kept`, { method: 'DELETE', headers: cookie });
    assert.equal(del.status, 403);
    assert.equal((await fetch(`${url}/v1/admin/tags/forged`, { headers: cookie })).status, 404);
    assert.equal((await fetch(`${url}/v1/admin/tags/kept`, { headers: cookie })).status, 200);
    // The admin page's header, or the browser's word that the request is of this origin, is enough.
    const page = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: { ...cookie, ...json, 'x-idmint-admin': '1' },
      body: '{"tag":"by-page"}',
    });
    assert.equal(page.status, 201);
    const same = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: { ...cookie, ...json, 'sec-fetch-site': 'same-origin' },
      body: '{"tag":"by-board"}',
    });
    assert.equal(same.status, 201);
    for (const site of ['same-site', 'cross-site', 'none']) {
      const r = await fetch(`${url}/v1/admin/tags`, {
        method: 'POST',
        headers: { ...cookie, ...json, 'sec-fetch-site': site },
        body: '{"tag":"forged"}',
      });
      assert.equal(r.status, 403, site);
    }
    assert.equal((await fetch(`${url}/v1/admin/tags/forged`, { headers: cookie })).status, 404);
  });

  it("refuses Bull Board's writes with the cookie alone, adding no job, and serves it with a CSP that forbids other origins' frames", async () => {
    const counts = async () => {
      const r = await fetch(`${url}/admin/queues/api/queues?activeQueue=refill&status=waiting`, { headers: cookie });
      assert.equal(r.status, 200);
      const q = ((await r.json()) as { queues: { name: string; counts: Record<string, number> }[] }).queues.find(
        (x) => x.name === 'refill',
      );
      return JSON.stringify(q?.counts);
    };
    const before = await counts();
    const add = await fetch(`${url}/admin/queues/api/queues/refill/add`, { method: 'POST', headers: cookie });
    assert.equal(add.status, 403);
    assert.equal(await errorCode(add), 'FORBIDDEN');
    const pause = await fetch(`${url}/admin/queues/api/queues/refill/pause`, { method: 'PUT', headers: cookie });
    assert.equal(pause.status, 403);
    assert.equal(await counts(), before);

    const board = await fetch(`${url}/admin/queues`, { headers: cookie });
    assert.equal(board.status, 200);
    const csp = board.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'self'/);
    assert.match(csp, /script-src 'self'/);
    assert.equal(board.headers.get('x-frame-options'), 'SAMEORIGIN');
    const api = await fetch(`${url}/admin/queues/api/queues`, { headers: cookie });
    assert.match(api.headers.get('content-security-policy') ?? '', /frame-ancestors 'self'/);
  });
});

describe('guessing the admin token', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names, {
      ADMIN_AUTH_MAX_FAILURES: String(MAX_FAILURES),
      ADMIN_AUTH_WINDOW_MS: String(WINDOW_MS),
    });
    url = node.url;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('counts each failure, then answers 429 with Retry-After (the right token too) until the window has passed', async () => {
    const failures = () => metric(url, /^idmint_admin_auth_failures_total\{transport="http"\}/);
    const refused = () =>
      metric(
        url,
        /^idmint_errors_total\{.*transport="http".*code="UNAUTHORIZED"|^idmint_errors_total\{code="UNAUTHORIZED".*transport="http"/,
      );
    // No token at all (the admin page opened before signing in) is refused, but is no guess.
    for (let i = 0; i < MAX_FAILURES + 2; i++) assert.equal((await fetch(`${url}/v1/admin/tags`)).status, 401);
    const [f0, r0] = [await failures(), await refused()];
    assert.equal(f0, 0);
    const t0 = Date.now();
    for (let i = 0; i < MAX_FAILURES; i++) {
      const wrong = await fetch(`${url}/v1/admin/tags`, {
        headers: { authorization: `Bearer wrong-token-${i}-xxxxxxxx` },
      });
      assert.equal(wrong.status, 401, `guess ${i}`);
    }
    assert.equal(await failures(), f0 + MAX_FAILURES);
    assert.equal(await refused(), r0 + MAX_FAILURES);
    const attempts: Record<string, string>[] = [
      { authorization: 'Bearer another-wrong-token-xx' },
      { authorization: `Bearer ${ADMIN_TOKEN}` },
      cookie,
      {},
    ];
    for (const headers of attempts) {
      const r = await fetch(`${url}/v1/admin/tags`, { headers });
      assert.equal(r.status, 429);
      assert.equal(await errorCode(r), 'LIMIT_EXCEEDED');
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= WINDOW_MS / 1000, `Retry-After ${retry}`);
    }
    // A slowed request is not another failure: the token was not looked at.
    assert.equal(await failures(), f0 + MAX_FAILURES);
    // The sign-in and Bull Board are behind the same count.
    assert.equal(
      (await fetch(`${url}/v1/admin/session`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
        .status,
      429,
    );
    assert.equal(
      (await fetch(`${url}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status,
      429,
    );
    // ID routes are not admin routes: untouched.
    assert.notEqual((await fetch(`${url}/v1/id/nope`)).status, 429);
    // Once the window has passed (waited for by asking, the Retry-After apart), the right token works again.
    let ok: Response;
    for (;;) {
      ok = await fetch(`${url}/v1/admin/tags`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      if (ok.status !== 429) break;
      assert.ok(Date.now() - t0 < WINDOW_MS + 5000, 'still slowed long after the window');
      await new Promise((resolve) => setTimeout(resolve, Number(ok.headers.get('retry-after')) * 250));
    }
    assert.equal(ok.status, 200);
    assert.ok(Date.now() - t0 >= WINDOW_MS - 50, `served again after ${Date.now() - t0} ms`);
  });
});

describe('failed admin sign-ins in the log', () => {
  it('logs at most one line a second, with the number left out, and keeps counting every one', () => {
    let now = 1_000_000;
    const lines: Record<string, unknown>[] = [];
    const counted: string[] = [];
    const failures = new AuthFailures(
      { maxFailures: 1000, windowMs: 60_000, now: () => now },
      {
        errors: { inc: (l) => counted.push(`${l.transport} ${l.code}`) },
        authFailures: { inc: (l) => counted.push(`auth ${l.transport}`) },
      },
      { warn: (obj: Record<string, unknown>) => lines.push(obj) } as never,
    );
    for (let i = 0; i < 50; i++) failures.fail(`10.0.0.${i % 3}`, 'http', 'the admin token is wrong');
    assert.equal(lines.length, 1);
    assert.equal(counted.length, 100);
    now += 1000;
    failures.fail('10.0.0.9', 'http', 'the admin token is wrong');
    assert.equal(lines.length, 2);
    assert.deepEqual(lines[1], {
      transport: 'http',
      source: '10.0.0.9',
      reason: 'the admin token is wrong',
      failures_not_logged: 49,
    });
  });
});
