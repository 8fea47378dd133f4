// suite: single — what one node's open routes tell a caller without a token, no Redis key layout involved
// OPERATIONS.md's exposure section held to the code: without METRICS_TOKEN, /metrics leaves out
// every series of a protected tag (and the Redis masters' addresses) unless the request carries
// the admin or viewer token; /healthz and /readyz give an anonymous caller exactly the status
// bodies the page shows, the details only with a token; a wrong token there counts as a failed
// admin sign-in.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { PRIVATE_FAMILIES } from '../../src/metrics/public-series.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const asAdmin = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** The exposure section of OPERATIONS.md. */
function exposureSection(): string {
  const page = readFileSync(new URL('../../docs/OPERATIONS.md', import.meta.url), 'utf8');
  const start = page.indexOf('## Exposure');
  assert.ok(start >= 0, 'OPERATIONS.md has an exposure section');
  return page.slice(start, page.indexOf('\n## ', start + 1));
}

describe('what an anonymous caller learns', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;
  let clientToken: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'shown' });
    await createTag(url, { tag: 'hidden-tag' });
    const t = await fetch(`${url}/v1/admin/tags/hidden-tag/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{}',
    });
    clientToken = ((await t.json()) as { token: string }).token;
    assert.equal((await fetch(`${url}/v1/ids/shown?count=5`)).status, 200);
    assert.equal(
      (await fetch(`${url}/v1/ids/hidden-tag?count=5`, { headers: { authorization: `Bearer ${clientToken}` } })).status,
      200,
    );
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it("/metrics leaves out a protected tag's series and the Redis addresses; the admin token sees them", async () => {
    const open = await (await fetch(`${url}/metrics`)).text();
    assert.match(open, /^idmint_ids_issued_total\{tag="shown"/m);
    assert.ok(!open.includes('hidden-tag'), 'the protected tag is named on the open page');
    for (const family of PRIVATE_FAMILIES) assert.ok(!open.includes(family), `${family} on the open page`);
    // Every per-tag series of the open page is of an open tag.
    for (const m of open.matchAll(/[{,]tag="([^"]*)"/g)) assert.equal(m[1], 'shown');
    const full = await (await fetch(`${url}/metrics`, { headers: asAdmin })).text();
    assert.match(full, /^idmint_ids_issued_total\{tag="hidden-tag"/m);
    assert.match(full, /^idmint_redis_master_info\{/m);
    // OPERATIONS.md names what is left out.
    const doc = exposureSection();
    for (const family of PRIVATE_FAMILIES) assert.ok(doc.includes(family), `OPERATIONS.md does not name ${family}`);
    assert.ok(doc.includes('tagSeriesArePublic'));
  });

  it('/healthz and /readyz answer the status bodies OPERATIONS.md shows, the details only with a token', async () => {
    const doc = exposureSection();
    const healthz = await fetch(`${url}/healthz`);
    const healthBody = await healthz.text();
    assert.equal(healthBody, '{"status":"ok"}');
    assert.ok(
      doc.includes(`\`/healthz\` answers anyone \`${healthBody}\``),
      'OPERATIONS.md shows the anonymous /healthz body',
    );
    const readyz = await fetch(`${url}/readyz`);
    const readyBody = await readyz.text();
    assert.deepEqual([readyz.status, readyBody], [200, '{"status":"ready"}']);
    assert.ok(doc.includes(`(\`${readyBody}\``), 'OPERATIONS.md shows the anonymous /readyz body');

    const h = (await (await fetch(`${url}/healthz`, { headers: asAdmin })).json()) as { node?: string };
    assert.equal(typeof h.node, 'string');
    const r = (await (await fetch(`${url}/readyz`, { headers: asAdmin })).json()) as {
      checks?: Record<string, string>;
      redis_master?: Record<string, string>;
    };
    assert.deepEqual(r.checks, { redis: 'ok', mysql: 'ok', lease: 'ok' });
    assert.equal(typeof r.redis_master?.default, 'string');
  });

  it('a wrong token on an open route is a failed admin sign-in, and shows nothing more', async () => {
    const failures = async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Number(/^idmint_admin_auth_failures_total\{transport="http"\} (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const before = await failures();
    assert.equal(
      await (await fetch(`${url}/healthz`, { headers: { authorization: 'Bearer not-the-admin-token-x' } })).text(),
      '{"status":"ok"}',
    );
    const m = await (
      await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer not-the-admin-token-x' } })
    ).text();
    assert.ok(!m.includes('hidden-tag'));
    assert.equal(await failures(), before + 2);
  });
});
