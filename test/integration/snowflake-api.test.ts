// suite: cluster
// The HTTP API of snowflake tags against real Redis and MySQL, on a node whose clock the test
// moves: tags from each preset, /v1/id, /v1/ids, text and the Leaf route, decode's shape,
// refusal of short-lived layouts unless forced, field errors, re-creation rules, and
// CLOCK_BACKWARDS (503 with Retry-After) when the clock steps back past the bound.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNode, type Node } from '../../src/process/serve.js';
import type { Clock } from '../../src/core/clock.js';
import { PRESETS, encode, runsOutAt, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds } from '../../tools/node.js';

/** Wall clock plus an adjustable offset, or frozen at one reading. */
class TestClock implements Clock {
  offset = 0;
  frozen: number | null = null;
  now(): number {
    return this.frozen ?? Date.now() + this.offset;
  }
}

interface Decoded {
  mode: string;
  id: string;
  timestamp: string;
  time: number;
  worker_id: number;
  sequence: number;
}
interface ErrorBody {
  error: { code: string; message: string };
}

const MAX_BACK_MS = 200;

describe('HTTP API (snowflake tags)', () => {
  const names = testNames();
  const clock = new TestClock();
  let node: Node;
  let url: string;

  const get = (path: string, headers: Record<string, string> = {}) => fetch(url + path, { headers });
  const json = async <T>(path: string): Promise<T> => {
    const r = await get(path);
    assert.equal(r.status, 200, `${path}: ${r.status} ${await r.clone().text()}`);
    return (await r.json()) as T;
  };
  const post = (body: unknown) =>
    fetch(`${url}/v1/admin/tags`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  const patch = (tag: string, body: unknown) =>
    fetch(`${url}/v1/admin/tags/${tag}`, { method: 'PATCH', headers: adminHeaders, body: JSON.stringify(body) });
  const refused = async (r: Response, status = 400, code = 'INVALID_ARGUMENT'): Promise<string> => {
    const body = (await r.json()) as ErrorBody;
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(body.error.code, code, JSON.stringify(body));
    return body.error.message;
  };
  const oneId = async (tag: string) => BigInt((await json<{ id: string }>(`/v1/id/${tag}`)).id);
  const decodeId = (tag: string, id: bigint | string) => json<Decoded>(`/v1/decode/${tag}/${id}`);
  const workers = () =>
    fetch(`${url}/v1/admin/workers`, { headers: adminHeaders }).then((r) => r.json()) as Promise<{
      spaces: { worker_bits: number; leases: { worker_id: number; owner: string }[] }[];
      this_node: {
        node_id: string;
        leases: { worker_bits: number; worker_id: number; valid: boolean }[];
        clock_events: { backwards: number; waits: number };
        lease_events: { renewed: number };
      };
    }>;
  const myWorker = async (bits: number) => {
    const w = await workers();
    const l = w.this_node.leases.find((x) => x.worker_bits === bits);
    assert.ok(l, `this node holds no lease of width ${bits}`);
    return l.worker_id;
  };

  before(async () => {
    node = await startNode(
      testConfig(names, { CLOCK_MAX_BACK_MS: String(MAX_BACK_MS), LEASE_TTL_MS: '3000', LEASE_MARGIN_MS: '500' }),
      { clock },
    );
    url = node.url!;
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
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
