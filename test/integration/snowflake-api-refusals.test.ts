// suite: cluster
// What the HTTP API of snowflake tags refuses, against real Redis and MySQL, on a node whose
// clock the test moves: short-lived layouts unless forced, field errors, re-creation with
// another layout (and no ID repeated when re-created as it was), and CLOCK_BACKWARDS (503 with
// Retry-After) when the clock steps back past the bound.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PRESETS, runsOutAt } from '../../src/core/snowflake-layout.js';
import { adminHeaders, createTag, fetchIds } from '../../tools/node.js';
import { snowflakeApiNode, type ErrorBody } from '../helpers/snowflake-api-node.js';

describe('HTTP API (snowflake tags)', () => {
  const api = snowflakeApiNode();
  const { clock, get, post, patch, refused, oneId, decodeId, workers } = api;
  let url: string;

  // The field-error and clock tests use tag evt, with the default preset.
  before(async () => {
    url = api.url();
    await createTag(url, { tag: 'evt', mode: 'snowflake' });
  });

  it('refuses short-lived layouts unless forced, naming when they run out', async () => {
    const epoch = new Date(Math.floor((Date.now() - 86_400_000) / 1000) * 1000);
    const body = { tag: 'short', mode: 'snowflake', epoch: epoch.toISOString(), time_bits: 36 };
    const end = runsOutAt({ ...PRESETS.snowflake, epochMs: epoch.getTime(), timeBits: 36 }).toISOString();
    const msg = await refused(await post(body));
    assert.ok(msg.includes(end), `"${msg}" does not name ${end}`);
    await refused(await get('/v1/id/short'), 404, 'TAG_NOT_FOUND');
    await refused(await post({ ...body, force: 'yes' }));
    const made = await createTag(url, { ...body, force: true });
    assert.equal(made.runs_out_at, end);
    assert.equal(made.epoch, epoch.toISOString());
    const id = await oneId('short');
    const d = await decodeId('short', id);
    assert.ok(Math.abs(Date.parse(d.timestamp) - Date.now()) < 5000);

    // A layout whose range has already ended is accepted with force but issues nothing.
    await createTag(url, { tag: 'ended', mode: 'snowflake', time_bits: 30, force: true });
    const r = await get('/v1/id/ended');
    const m = await refused(r, 409, 'ID_SPACE_EXHAUSTED');
    assert.ok(m.includes(runsOutAt({ ...PRESETS.snowflake, timeBits: 30 }).toISOString()), m);
    assert.equal(runsOutAt({ ...PRESETS.snowflake, timeBits: 30 }).toISOString(), '2020-01-13T10:15:41.824Z');
  });

  it('answers field errors for the wrong mode and bad layouts', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ tag: 'x1', mode: 'segment', preset: 'uid' }, 'preset applies to snowflake tags only'],
      [{ tag: 'x1', preset: 'uid' }, 'preset applies to snowflake tags only'],
      [{ tag: 'x1', mode: 'segment', worker_bits: 5 }, 'worker_bits applies to snowflake tags only'],
      [{ tag: 'x1', mode: 'segment', force: true }, 'force applies to snowflake tags only'],
      [{ tag: 'x1', mode: 'snowflake', step: 10 }, 'step applies to segment tags only'],
      [{ tag: 'x1', mode: 'snowflake', order: 'node' }, 'order applies to segment tags only'],
      [{ tag: 'x1', mode: 'snowflake', max_id_limit: '1000' }, 'max_id_limit applies to segment tags only'],
      [{ tag: 'x1', mode: 'snowflake', preset: 'twitter' }, 'preset must be one of snowflake, uid, jssafe'],
      [{ tag: 'x1', mode: 'snowflake', time_bits: 51 }, 'time_bits must be an integer from 20 to 50'],
      [{ tag: 'x1', mode: 'snowflake', worker_bits: 0 }, 'worker_bits must be an integer from 1 to 22'],
      [{ tag: 'x1', mode: 'snowflake', seq_bits: 13 }, 'time_bits + worker_bits + seq_bits must not exceed 63'],
      [{ tag: 'x1', mode: 'snowflake', time_unit: 'h' }, 'time_unit must be "ms" or "s"'],
      [{ tag: 'x1', mode: 'snowflake', epoch: '2999-01-01T00:00:00Z' }, 'epoch must not lie in the future'],
      [{ tag: 'x1', mode: 'snowflake', epoch: 'soon' }, 'epoch must be an ISO 8601 date or milliseconds since 1970'],
    ];
    for (const [body, want] of cases) {
      const msg = await refused(await post(body));
      assert.ok(msg.includes(want), `${JSON.stringify(body)}: "${msg}" lacks "${want}"`);
    }
    await refused(await get('/v1/id/x1'), 404, 'TAG_NOT_FOUND');

    // The layout is fixed after creation; segment fields stay refused on update.
    for (const [body, want] of [
      [{ worker_bits: 8 }, 'worker_bits cannot be changed after creation'],
      [{ preset: 'uid' }, 'preset cannot be changed after creation'],
      [{ epoch: '2021-01-01T00:00:00Z' }, 'epoch cannot be changed after creation'],
      [{ step: 10 }, 'step applies to segment tags only'],
    ] as const) {
      const msg = await refused(await patch('evt', body));
      assert.ok(msg.includes(want), `${JSON.stringify(body)}: "${msg}" lacks "${want}"`);
    }
    const ok = await patch('evt', { description: 'events' });
    assert.equal(ok.status, 200);
    const shown = (await ok.json()) as Record<string, unknown>;
    assert.equal(shown.description, 'events');
    assert.equal(shown.worker_bits, 10);
  });

  it('refuses re-creating a deleted tag with another layout, and keeps IDs increasing when re-created as it was', async () => {
    await createTag(url, { tag: 'again', mode: 'snowflake', worker_bits: 8, seq_bits: 14 });
    await refused(await post({ tag: 'again', mode: 'snowflake', worker_bits: 8, seq_bits: 14 }), 409, 'TAG_EXISTS');
    const before = await fetchIds(url, 'again', 100);
    const del = await fetch(`${url}/v1/admin/tags/again`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    assert.equal(del.status, 204);
    await refused(await get('/v1/id/again'), 404, 'TAG_NOT_FOUND');
    for (const body of [
      { tag: 'again', mode: 'snowflake' },
      { tag: 'again', mode: 'snowflake', worker_bits: 8, seq_bits: 13 },
      { tag: 'again', mode: 'snowflake', worker_bits: 8, seq_bits: 14, epoch: '2021-01-01T00:00:00Z' },
      { tag: 'again', mode: 'segment' },
    ]) {
      const msg = await refused(await post(body));
      assert.match(msg, /was used before as a snowflake tag/, JSON.stringify(body));
    }
    await refused(await get('/v1/id/again'), 404, 'TAG_NOT_FOUND');
    const re = await createTag(url, { tag: 'again', mode: 'snowflake', worker_bits: 8, seq_bits: 14 });
    assert.equal(re.incarnation, 2);
    const after = await fetchIds(url, 'again', 100);
    assert.ok(after[0] > before[before.length - 1], 'the re-created tag went below its earlier IDs');
  });

  it('never repeats an ID of an earlier incarnation when a tag is re-created within the same tick', async () => {
    // A seconds layout: one tick is a whole second, time enough to delete and re-create the
    // tag. Real clock; start just after a second begins so both incarnations serve in it.
    await createTag(url, { tag: 'secs', mode: 'snowflake', preset: 'uid', force: true });
    while (Date.now() % 1000 > 50) await sleep(5);
    const first = await fetchIds(url, 'secs', 5);
    const del = await fetch(`${url}/v1/admin/tags/secs`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    assert.equal(del.status, 204);
    await createTag(url, { tag: 'secs', mode: 'snowflake', preset: 'uid', force: true });
    const second = await fetchIds(url, 'secs', 5);
    const sec = async (id: bigint) => (await decodeId('secs', id)).time;
    assert.equal(await sec(second[0]), await sec(first[0]), 'precondition: both incarnations served within one second');
    const repeated = second.filter((id) => first.includes(id));
    assert.deepEqual(repeated, [], `the re-created tag repeated ${repeated.length} IDs of its first incarnation`);
    assert.ok(second[0] > first[first.length - 1]);
  });

  it('answers 503 CLOCK_BACKWARDS with Retry-After when the clock steps back past the bound, and waits out a small step', async () => {
    const last = await oneId('evt');
    const lastMs = Date.parse((await decodeId('evt', last)).timestamp);
    const ev0 = (await workers()).this_node.clock_events;

    clock.offset = -2500;
    for (const path of ['/v1/id/evt', '/v1/ids/evt?count=5', '/api/snowflake/get/evt']) {
      const r = await get(path);
      assert.equal(r.status, 503, path);
      const ra = Number(r.headers.get('retry-after'));
      assert.ok(ra >= 2 && ra <= 4, `${path}: Retry-After ${r.headers.get('retry-after')}`);
      const body = (await r.json()) as ErrorBody;
      assert.equal(body.error.code, 'CLOCK_BACKWARDS', path);
      assert.match(body.error.message, /behind the last issued time/);
    }
    const ev1 = (await workers()).this_node.clock_events;
    assert.equal(ev1.backwards - ev0.backwards, 3);

    // A renewal that ran while the clock read 2.5 s behind set the lease's local deadline
    // 2.5 s early: once the clock is right again the lease counts as lapsed, and the next
    // request would take a new lease (refused below its floor) instead of waiting. Let one
    // renewal run on the right clock first.
    clock.offset = 0;
    const renewed = (await workers()).this_node.lease_events.renewed;
    for (let i = 0; i < 50 && (await workers()).this_node.lease_events.renewed === renewed; i++) await sleep(100);
    assert.ok((await workers()).this_node.lease_events.renewed > renewed, 'no lease renewal within 5 s');

    // A step back within CLOCK_MAX_BACK_MS: the request waits until the clock catches up.
    clock.offset = lastMs - 150 - Date.now();
    const started = Date.now();
    const id = await oneId('evt');
    const took = Date.now() - started;
    const d = await decodeId('evt', id);
    assert.ok(id > last, 'went below an ID already issued');
    assert.ok(Date.parse(d.timestamp) >= lastMs);
    assert.ok(took >= 80, `answered after ${took} ms without waiting for the clock`);
    const ev2 = (await workers()).this_node.clock_events;
    assert.ok(ev2.waits > ev1.waits);
    assert.equal(ev2.backwards, ev1.backwards);

    clock.offset = 0;
    assert.ok((await oneId('evt')) > id);
  });
});
