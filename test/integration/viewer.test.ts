// suite: single — admin and viewer token access, no Redis key layout involved
// The viewer token (VIEWER_TOKEN): it reads every admin route, changes nothing (403
// FORBIDDEN), and sees Bull Board read-only, while the admin token keeps full access. Neither
// token ever reaches the logs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, startLocalNode } from '../../tools/node.js';

const VIEWER_TOKEN = 'test-viewer-token';
const asViewer = { authorization: `Bearer ${VIEWER_TOKEN}` };
const asAdmin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const json = { 'content-type': 'application/json' };

async function errorCode(r: Response): Promise<string | undefined> {
  return ((await r.json()) as { error?: { code: string } }).error?.code;
}

interface BoardQueue {
  name: string;
  readOnlyMode: boolean;
  allowRetries: boolean;
  isPaused: boolean;
}

/** A tag view without its capacity, whose forecasts move with the clock between two reads. */
function steady(body: unknown): unknown {
  const strip = (t: Record<string, unknown>) => {
    const { capacity: _live, ...rest } = t;
    return rest;
  };
  const b = body as { tags?: Record<string, unknown>[] } & Record<string, unknown>;
  return b.tags ? { ...b, tags: b.tags.map(strip) } : strip(b);
}
describe('VIEWER_TOKEN configuration', () => {
  it('is off by default and refused when short or equal to ADMIN_TOKEN', () => {
    assert.equal(loadConfig({}).viewerToken, '');
    assert.equal(loadConfig({ VIEWER_TOKEN: 'long-enough-16-ch' }).viewerToken, 'long-enough-16-ch');
    for (const [env, want] of [
      [{ VIEWER_TOKEN: 'fifteen-chars-x' }, 'VIEWER_TOKEN must be at least 16 characters'],
      [
        { ADMIN_TOKEN: 'same-token-16-chars', VIEWER_TOKEN: 'same-token-16-chars' },
        'VIEWER_TOKEN must differ from ADMIN_TOKEN',
      ],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.problems.includes(want),
      );
    }
  });
});

describe('viewer token', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;
  let tokenId: number;

  before(async () => {
    // The wrong tokens below are more than a source may try before it is slowed down (admin-guard.test.ts).
    node = await startLocalNode(names, { VIEWER_TOKEN, ADMIN_AUTH_MAX_FAILURES: '1000' });
    url = node.url;
    await createTag(url, { tag: 'v1', step: 100, min_step: 10 });
    await createTag(url, { tag: 'vsf', mode: 'snowflake', preset: 'jssafe' });
    assert.equal((await fetch(`${url}/v1/id/v1`)).status, 200);
    const t = await fetch(`${url}/v1/admin/tags/v1/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"billing"}',
    });
    tokenId = ((await t.json()) as { id: number }).id;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('reads every admin GET route, with the same answers as the admin token', async () => {
    for (const path of ['/v1/admin/tags', '/v1/admin/tags/v1', '/v1/admin/tags/vsf', '/v1/admin/tags/v1/tokens']) {
      const [v, a] = await Promise.all([
        fetch(`${url}${path}`, { headers: asViewer }),
        fetch(`${url}${path}`, { headers: asAdmin }),
      ]);
      assert.equal(v.status, 200, path);
      assert.deepEqual(steady(await v.json()), steady(await a.json()), path);
    }
    const workers = await fetch(`${url}/v1/admin/workers`, { headers: { cookie: `idmint_admin=${VIEWER_TOKEN}` } });
    assert.equal(workers.status, 200, 'the cookie carries the viewer token too');
    assert.ok(Array.isArray(((await workers.json()) as { spaces: unknown[] }).spaces));
    const missing = await fetch(`${url}/v1/admin/tags/nope`, { headers: asViewer });
    assert.equal(await errorCode(missing), 'TAG_NOT_FOUND');
  });

  it('tells the page which role a token has', async () => {
    const role = async (headers: Record<string, string>) =>
      ((await (await fetch(`${url}/v1/admin/session`, { headers })).json()) as { role: string }).role;
    assert.equal(await role(asViewer), 'viewer');
    assert.equal(await role(asAdmin), 'admin');
    assert.equal(await role({ cookie: `other=1; idmint_admin=${VIEWER_TOKEN}` }), 'viewer');
  });

  it('changes nothing: every non-GET admin route answers 403 FORBIDDEN', async () => {
    const before = steady(await (await fetch(`${url}/v1/admin/tags`, { headers: asAdmin })).json());
    const attempts: [string, string, string?][] = [
      ['POST', '/v1/admin/tags', '{"tag":"v2"}'],
      ['PATCH', '/v1/admin/tags/v1', '{"step":500}'],
      ['PATCH', '/v1/admin/tags/v1', '{"enabled":false}'],
      ['DELETE', '/v1/admin/tags/v1'],
      ['DELETE', '/v1/admin/tags/vsf'],
      ['POST', '/v1/admin/tags/v1/tokens', '{"name":"x"}'],
      ['DELETE', `/v1/admin/tags/v1/tokens/${tokenId}`],
    ];
    for (const [method, path, body] of attempts) {
      for (const headers of [asViewer, { cookie: `idmint_admin=${VIEWER_TOKEN}` }]) {
        const r = await fetch(`${url}${path}`, { method, headers: body ? { ...headers, ...json } : headers, body });
        assert.equal(r.status, 403, `${method} ${path}`);
        const e = ((await r.json()) as { error: { code: string; message: string } }).error;
        assert.equal(e.code, 'FORBIDDEN', `${method} ${path}`);
        assert.match(e.message, /viewer token may only read/);
      }
    }
    assert.deepEqual(
      steady(await (await fetch(`${url}/v1/admin/tags`, { headers: asAdmin })).json()),
      before,
      'no tag changed',
    );
    const tokens = (await (await fetch(`${url}/v1/admin/tags/v1/tokens`, { headers: asAdmin })).json()) as {
      tokens: { id: number }[];
    };
    assert.deepEqual(
      tokens.tokens.map((t) => t.id),
      [tokenId],
      'no token created or revoked',
    );
  });

  it('answers 401 without a token or with a wrong one, for reads and writes', async () => {
    const callers: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token-x' },
      { cookie: 'idmint_admin=wrong-token-x' },
      { authorization: `Bearer ${VIEWER_TOKEN}x` },
    ];
    for (const headers of callers) {
      for (const [method, path] of [
        ['GET', '/v1/admin/tags'],
        ['POST', '/v1/admin/tags'],
        ['GET', '/v1/admin/session'],
        ['GET', '/admin/queues'],
        ['PUT', '/admin/queues/api/queues/refill/pause'],
      ]) {
        const r = await fetch(`${url}${path}`, { method, headers });
        assert.equal(r.status, 401, `${method} ${path} with ${JSON.stringify(headers)}`);
        assert.equal(await errorCode(r), 'UNAUTHORIZED');
      }
    }
    const wrong = await fetch(`${url}/v1/admin/tags`, { headers: { authorization: 'Bearer wrong-token-x' } });
    assert.equal(
      ((await wrong.json()) as { error: { message: string } }).error.message,
      'the token is neither the admin token nor the viewer token',
    );
  });

  it('keeps full access for the admin token', async () => {
    const r = await fetch(`${url}/v1/admin/tags/v1`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"description":"changed by the admin"}',
    });
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { description: string }).description, 'changed by the admin');
  });

  it('shows the viewer a read-only Bull Board at the same address, the admin a writable one', async () => {
    const page = await fetch(`${url}/admin/queues`, { headers: asViewer });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await page.text(), /<div id="root">/);
    const board = async (headers: Record<string, string>) => {
      const res = await fetch(`${url}/admin/queues/api/queues`, { headers });
      assert.equal(res.status, 200);
      return ((await res.json()) as { queues: BoardQueue[] }).queues;
    };
    const viewerQueues = await board(asViewer);
    const adminQueues = await board(asAdmin);
    assert.deepEqual(viewerQueues.map((q) => q.name).sort(), adminQueues.map((q) => q.name).sort(), 'the same queues');
    assert.ok(viewerQueues.length >= 3);
    for (const q of viewerQueues) assert.deepEqual([q.name, q.readOnlyMode, q.allowRetries], [q.name, true, false]);
    for (const q of adminQueues) assert.deepEqual([q.name, q.readOnlyMode], [q.name, false]);
    const asset = await fetch(`${url}/admin/queues/static/favicon-32x32.png`, {
      headers: { cookie: `idmint_admin=${VIEWER_TOKEN}` },
    });
    assert.equal(asset.status, 200, "the board's files load for the viewer");
    assert.equal(asset.headers.get('content-type'), 'image/png');
  });

  it('refuses Bull Board actions to the viewer and runs them for the admin', async () => {
    const paused = async () => await node.rt.queues.find((q) => q.name === 'janitor')!.isPaused();
    const actions: [string, string][] = [
      ['PUT', '/admin/queues/api/queues/janitor/pause'],
      ['PUT', '/admin/queues/api/queues/pause'],
      ['PUT', '/admin/queues/api/queues/janitor/retry/failed'],
      ['PUT', '/admin/queues/api/queues/janitor/clean/completed'],
      ['PUT', '/admin/queues/api/queues/janitor/empty'],
      ['PUT', '/admin/queues/api/queues/janitor/obliterate'],
      ['POST', '/admin/queues/api/queues/janitor/add'],
    ];
    for (const [method, path] of actions) {
      const r = await fetch(`${url}${path}`, {
        method,
        headers: { ...asViewer, ...json },
        body: method === 'POST' ? '{"name":"x","data":{}}' : '{}',
      });
      assert.equal(r.status, 403, `${method} ${path}`);
      assert.equal(await errorCode(r), 'FORBIDDEN');
    }
    assert.equal(await paused(), false, 'the viewer paused nothing');
    const pause = await fetch(`${url}/admin/queues/api/queues/janitor/pause`, { method: 'PUT', headers: asAdmin });
    assert.equal(pause.status, 200, await pause.clone().text());
    assert.equal(await paused(), true, 'the admin paused the queue');
    const resume = await fetch(`${url}/admin/queues/api/queues/janitor/resume`, { method: 'PUT', headers: asAdmin });
    assert.equal(resume.status, 200);
    assert.equal(await paused(), false);
  });
});

describe('viewer token off, and tokens kept out of the logs', () => {
  it('refuses a would-be viewer token when VIEWER_TOKEN is unset', async () => {
    const names = testNames();
    const node = await startLocalNode(names);
    try {
      const r = await fetch(`${node.url}/v1/admin/tags`, { headers: asViewer });
      assert.equal(r.status, 401);
      assert.equal(((await r.json()) as { error: { message: string } }).error.message, 'the admin token is wrong');
    } finally {
      await node.close();
      await cleanup(names);
    }
  });

  it('logs neither token, even at trace level', async () => {
    const names = testNames();
    const child = await spawnNode(names, { VIEWER_TOKEN, LOG_LEVEL: 'trace' });
    try {
      await createTag(child.url, { tag: 'logged' });
      for (const headers of [asViewer, asAdmin, { cookie: `idmint_admin=${VIEWER_TOKEN}` }]) {
        await fetch(`${child.url}/v1/admin/tags`, { headers });
        await fetch(`${child.url}/v1/admin/tags/logged`, {
          method: 'PATCH',
          headers: { ...headers, ...json },
          body: '{"step":900}',
        });
        await fetch(`${child.url}/admin/queues/api/queues`, { headers });
        await fetch(`${child.url}/admin/queues/api/queues/janitor/pause`, { method: 'PUT', headers });
        await fetch(`${child.url}/admin/queues/api/queues/janitor/resume`, { method: 'PUT', headers });
      }
      const r = await fetch(`${child.url}/v1/admin/tags`, { headers: { authorization: 'Bearer wrong-token-x' } });
      assert.equal(r.status, 401);
    } finally {
      assert.equal(await child.stop(), 0);
      await cleanup(names);
    }
    const out = child.output.join('\n');
    assert.ok(child.output.length > 5, 'the child logged at trace level');
    assert.ok(!out.includes(VIEWER_TOKEN), 'the viewer token is not logged');
    assert.ok(!out.includes(ADMIN_TOKEN), 'the admin token is not logged');
  });
});
