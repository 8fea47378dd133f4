// The admin page at /admin in real headless Chromium against a real node: creating tags of
// every mode, the server's validation messages, editing, disabling, enabling, deleting and a
// tag's client tokens. Every change made through the page is checked over the HTTP API, and the
// page must run without script errors or Content-Security-Policy violations.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { createTag } from '../../tools/node.js';
import { openAdminPage } from '../helpers/admin-page.js';

describe('admin page in Chromium', () => {
  const session = openAdminPage();
  const { api, textOf, signInAsAdmin, openTag, createThroughPage } = session;
  let url: string;
  let page: Page;
  beforeEach(() => {
    ({ url, page } = session);
  });

  it('creates a segment tag that then serves IDs over HTTP, with its live state', async () => {
    await signInAsAdmin();
    await createThroughPage({ tag: 'pseg', step: '200', description: 'made in the page' });
    await textOf('#detail-title', 'Tag pseg');
    const stored = await api('/v1/admin/tags/pseg');
    assert.equal(stored.status, 200);
    assert.deepEqual(
      [stored.body!.mode, stored.body!.step, stored.body!.description],
      ['segment', 200, 'made in the page'],
    );
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
    const sfDirect = await api('/v1/admin/tags', {
      method: 'POST',
      body: JSON.stringify({ tag: 'pbadsf', mode: 'snowflake', time_bits: 30 }),
    });
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

  it('creates a client token, shows its secret once, and revokes it', async () => {
    await createTag(url, { tag: 'ptok' });
    await signInAsAdmin();
    await openTag('ptok');
    await textOf('#tokens-table', 'No client tokens');
    await page.fill('#token-form [name=name]', 'billing');
    await page.click('#token-create');
    const secret = await textOf('#token-secret-value', /^idm_/);
    await textOf('#tokens-table tbody tr', 'billing');
    assert.equal(
      (await fetch(`${url}/v1/id/ptok`)).status,
      404,
      'the tag now wants a token (and answers others as a missing tag)',
    );
    assert.equal(
      (await fetch(`${url}/v1/id/ptok`, { headers: { authorization: `Bearer ${secret}` } })).status,
      200,
      'the shown secret works',
    );
    await page.click('#tokens-table button.revoke');
    await textOf('#tokens-table', 'No client tokens');
    assert.equal((await fetch(`${url}/v1/id/ptok`)).status, 200, 'revoked: the tag is open again');
    assert.deepEqual((await api('/v1/admin/tags/ptok/tokens')).body, { tokens: [] });
  });
});
