// suite: cluster
// The HTTP API of snowflake tags issuing IDs, against real Redis and MySQL: tags from each preset
// and their layout, /v1/id (JSON and text), /v1/ids and the Leaf route, decode's shape, JS-safe
// IDs, and the Leaf route of the other mode refused naming one that serves the tag.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { PRESETS, encode, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { adminHeaders, createTag, fetchIds } from '../../tools/node.js';
import { snowflakeApiNode } from '../helpers/snowflake-api-node.js';

describe('HTTP API (snowflake tags)', () => {
  const api = snowflakeApiNode();
  const { clock, get, json, post, refused, oneId, decodeId, myWorker } = api;
  let url: string;

  before(() => {
    url = api.url();
  });

  it('creates tags from each preset and shows their layout', async () => {
    const evt = await createTag(url, { tag: 'evt', mode: 'snowflake' });
    assert.deepEqual(
      { ...evt, created_at: undefined, updated_at: undefined },
      {
        tag: 'evt',
        mode: 'snowflake',
        preset: 'snowflake',
        epoch: '2020-01-01T00:00:00.000Z',
        time_unit: 'ms',
        time_bits: 41,
        worker_bits: 10,
        seq_bits: 12,
        runs_out_at: '2089-09-06T15:47:35.552Z',
        enabled: true,
        description: '',
        incarnation: 1,
        key_retention_seconds: 86400,
        created_at: undefined,
        updated_at: undefined,
      },
    );
    const js = await createTag(url, { tag: 'js', mode: 'snowflake', preset: 'jssafe' });
    assert.deepEqual([js.preset, js.time_unit, js.time_bits, js.worker_bits, js.seq_bits], ['jssafe', 'ms', 41, 6, 6]);
    // uid's 28-bit seconds run out in 2028: refused without force, the message names the date.
    const msg = await refused(await post({ tag: 'uidt', mode: 'snowflake', preset: 'uid' }));
    assert.match(msg, /2028-07-03T21:24:16\.000Z/);
    assert.match(msg, /under 10 years/);
    assert.match(msg, /"force": true/);
    const uid = await createTag(url, { tag: 'uidt', mode: 'snowflake', preset: 'uid', force: true });
    assert.deepEqual(
      [uid.preset, uid.time_unit, uid.time_bits, uid.worker_bits, uid.seq_bits, uid.runs_out_at],
      ['uid', 's', 28, 22, 13, '2028-07-03T21:24:16.000Z'],
    );
    await createTag(url, { tag: 'seg', mode: 'segment' });
    // Listed with the others, snowflake fields only.
    const list = (await (await fetch(`${url}/v1/admin/tags`, { headers: adminHeaders })).json()) as {
      tags: Record<string, unknown>[];
    };
    const shown = list.tags.find((t) => t.tag === 'js')!;
    assert.equal(shown.runs_out_at, '2089-09-06T15:47:35.552Z');
    assert.equal('step' in shown, false);
  });

  it('serves /v1/id (JSON and text), /v1/ids and the Leaf route, all increasing', async () => {
    const seen: bigint[] = [];
    const a = await json<Record<string, unknown>>('/v1/id/evt');
    assert.deepEqual(Object.keys(a), ['id']);
    assert.match(a.id as string, /^[1-9]\d{15,18}$/);
    seen.push(BigInt(a.id as string));

    const text = await get('/v1/id/evt', { accept: 'text/plain' });
    assert.equal(text.status, 200);
    assert.match(text.headers.get('content-type') ?? '', /^text\/plain/);
    const t = await text.text();
    assert.match(t, /^\d+$/);
    seen.push(BigInt(t));

    const leaf = await get('/api/snowflake/get/evt');
    assert.equal(leaf.status, 200);
    assert.match(leaf.headers.get('content-type') ?? '', /^text\/plain/);
    const l = await leaf.text();
    assert.match(l, /^\d+$/);
    seen.push(BigInt(l));

    const batch = await fetchIds(url, 'evt', 10000);
    assert.equal(batch.length, 10000);
    seen.push(...batch);
    seen.push(await oneId('evt'));
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `ID ${i} not above the one before`);
    assert.equal(new Set(seen).size, seen.length);

    // Every ID carries this node's worker id, and a batch of 10000 spans several ms ticks.
    const w = await myWorker(10);
    const first = await decodeId('evt', batch[0]);
    const last = await decodeId('evt', batch[batch.length - 1]);
    assert.equal(first.worker_id, w);
    assert.equal(last.worker_id, w);
    assert.ok(last.time - first.time >= 2, 'more than 4096 IDs need at least three ms ticks');
  });

  it('decodes snowflake IDs into time, worker and sequence', async () => {
    const check = async (tag: string, layout: SnowflakeLayout) => {
      const before = clock.now();
      const id = await oneId(tag);
      const afterMs = clock.now();
      const d = await decodeId(tag, id);
      assert.deepEqual(Object.keys(d).sort(), ['id', 'mode', 'sequence', 'time', 'timestamp', 'worker_id']);
      assert.equal(d.mode, 'snowflake');
      assert.equal(d.id, String(id));
      assert.match(d.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const unit = layout.unit === 's' ? 1000 : 1;
      assert.equal(Date.parse(d.timestamp), layout.epochMs + d.time * unit);
      assert.ok(
        Date.parse(d.timestamp) >= Math.floor(before / unit) * unit && Date.parse(d.timestamp) <= afterMs,
        `${tag}: ${d.timestamp} outside the request`,
      );
      assert.equal(d.worker_id, await myWorker(layout.workerBits));
      assert.ok(Number.isInteger(d.sequence) && d.sequence >= 0 && d.sequence < 2 ** layout.seqBits);
      assert.equal(encode(layout, d.time, d.worker_id, d.sequence), id, `${tag}: the parts rebuild the ID`);
      return d;
    };
    await check('evt', PRESETS.snowflake);
    const u = await check('uidt', PRESETS.uid);
    assert.match(u.timestamp, /\.000Z$/, 'a seconds layout decodes to whole seconds');
    await check('js', PRESETS.jssafe);

    // A known ID decodes exactly.
    const known = encode(PRESETS.snowflake, 123_456_789, 1023, 4095);
    assert.deepEqual(await decodeId('evt', known), {
      mode: 'snowflake',
      id: String(known),
      timestamp: new Date(Date.UTC(2020, 0, 1) + 123_456_789).toISOString(),
      time: 123_456_789,
      worker_id: 1023,
      sequence: 4095,
    });
    await refused(await get('/v1/decode/evt/99999999999999999999'));
    await refused(await get(`/v1/decode/evt/${2n ** 63n}`));
  });

  it('keeps JS-safe IDs below 2^53 and exact as numbers', async () => {
    const ids = await fetchIds(url, 'js', 2000);
    assert.equal(new Set(ids).size, 2000);
    for (const id of ids) {
      assert.ok(id < 2n ** 53n, `${id} is not below 2^53`);
      assert.equal(BigInt(Number(id)), id);
    }
    // 64 IDs per ms: a batch of 2000 spans at least 32 ticks.
    const span = (await decodeId('js', ids[ids.length - 1])).time - (await decodeId('js', ids[0])).time;
    assert.ok(span >= 31, `span ${span}`);
  });

  it('refuses the Leaf route of the other mode, naming a route that serves the tag', async () => {
    await createTag(url, {
      tag: 'rul',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
    });
    const cases = [
      ['/api/segment/get/evt', 'snowflake', /use \/api\/snowflake\/get\/evt$/],
      ['/api/snowflake/get/seg', 'segment', /use \/api\/segment\/get\/seg$/],
      ['/api/segment/get/rul', 'rule', /use \/v1\/id\/rul\?app=<app>$/],
      ['/api/snowflake/get/rul', 'rule', /use \/v1\/id\/rul\?app=<app>$/],
    ] as const;
    for (const [path, mode, route] of cases) {
      const msg = await refused(await get(path));
      assert.match(msg, new RegExp(`is a ${mode} tag; `));
      assert.match(msg, route);
      // The route named answers with an ID.
      const named = msg.slice(msg.lastIndexOf('use ') + 4).replace('<app>', 'docs');
      const r = await get(named);
      assert.equal(r.status, 200, `${path} names ${named}, which answers ${r.status} ${await r.text()}`);
    }
    await refused(await get('/api/snowflake/get/nope'), 404, 'TAG_NOT_FOUND');
    await refused(await get('/v1/id/evt?key=abc'));
  });
});
