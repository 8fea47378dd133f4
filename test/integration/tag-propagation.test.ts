// suite: cluster
// A tag created, changed or deleted through one process is served accordingly by another
// process within a second, without a restart. Process B keeps definitions cached for a
// minute (TAG_CACHE_MS), so only the change announcement can make it see a change in time.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

const LIMIT_MS = 1000;

interface Seen {
  readonly status: number;
  readonly code?: string;
  readonly ids: bigint[];
}

async function ask(url: string, path: string): Promise<Seen> {
  const res = await fetch(url + path);
  const body = (await res.json()) as { id?: string; ids?: string[]; error?: { code: string } };
  const ids = body.ids ?? (body.id !== undefined ? [body.id] : []);
  return { status: res.status, code: body.error?.code, ids: ids.map(BigInt) };
}

/**
 * Polls B until `ok` holds; answers the time from `since` to the first answer that satisfied
 * it, and that answer. Fails after 5 s with the last answer seen.
 */
async function until(
  url: string,
  path: string,
  since: number,
  ok: (s: Seen) => boolean,
): Promise<{ ms: number; seen: Seen; polls: number }> {
  let last: Seen | undefined;
  let polls = 0;
  while (performance.now() - since < 5000) {
    last = await ask(url, path);
    polls++;
    if (ok(last)) return { ms: performance.now() - since, seen: last, polls };
    await sleep(5);
  }
  assert.fail(
    `B did not serve the change within 5 s; last answer ${JSON.stringify(last, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
  );
}

/** Sends an admin request to A; answers the time its answer arrived. */
async function admin(url: string, method: string, path: string, body?: unknown, want = 200): Promise<number> {
  const res = await fetch(url + path, {
    method,
    headers: body === undefined ? { authorization: `Bearer ${ADMIN_TOKEN}` } : adminHeaders,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, want, `${method} ${path}: ${text}`);
  return performance.now();
}

describe('tag changes propagate between processes', () => {
  const names = testNames();
  let a: ChildNode;
  let b: ChildNode;
  const delays: Record<string, number> = {};

  before(async () => {
    [a, b] = await Promise.all([
      spawnNode(names, { NODE_ID: 'prop-a' }),
      spawnNode(names, { NODE_ID: 'prop-b', TAG_CACHE_MS: '60000' }),
    ]);
  });
  after(async () => {
    const codes = await Promise.all([a.stop(), b.stop()]);
    await cleanup(names);
    assert.deepEqual(codes, [0, 0]);
  });

  it('a tag created through A is served by B, which had answered TAG_NOT_FOUND', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await ask(b.url, '/v1/id/fresh')).code, 'TAG_NOT_FOUND');
    await createTag(a.url, { tag: 'fresh', step: 100, min_step: 10 });
    const t0 = performance.now();
    const r = await until(b.url, '/v1/id/fresh', t0, (s) => s.status === 200);
    delays.create = r.ms;
    assert.equal(r.seen.ids.length, 1);
    assert.ok(r.ms < LIMIT_MS, `B served the new tag after ${r.ms.toFixed(0)} ms`);
  });

  it('disabling and re-enabling through A is honoured by B', async () => {
    await createTag(a.url, { tag: 'toggle', step: 100, min_step: 10 });
    await until(b.url, '/v1/id/toggle', performance.now(), (s) => s.status === 200);
    for (let i = 0; i < 3; i++)
      assert.equal((await ask(b.url, '/v1/id/toggle')).status, 200, 'B serves the enabled tag');

    const off = await admin(a.url, 'PATCH', '/v1/admin/tags/toggle', { enabled: false });
    const r1 = await until(b.url, '/v1/id/toggle', off, (s) => s.code === 'TAG_DISABLED');
    delays.disable = r1.ms;
    assert.equal(r1.seen.status, 409);
    assert.ok(r1.ms < LIMIT_MS, `B kept serving a disabled tag for ${r1.ms.toFixed(0)} ms`);
    // It stays disabled on B.
    for (let i = 0; i < 5; i++) assert.equal((await ask(b.url, '/v1/ids/toggle?count=3')).code, 'TAG_DISABLED');

    const on = await admin(a.url, 'PATCH', '/v1/admin/tags/toggle', { enabled: true });
    const r2 = await until(b.url, '/v1/id/toggle', on, (s) => s.status === 200);
    delays.enable = r2.ms;
    assert.ok(r2.ms < LIMIT_MS, `B refused a re-enabled tag for ${r2.ms.toFixed(0)} ms`);
  });

  it("a node-order tag disabled through A stops being served from B's memory", async () => {
    await createTag(a.url, { tag: 'nodetag', order: 'node', node_block: 1000 });
    await until(b.url, '/v1/id/nodetag', performance.now(), (s) => s.status === 200);
    const off = await admin(a.url, 'PATCH', '/v1/admin/tags/nodetag', { enabled: false });
    const r = await until(b.url, '/v1/id/nodetag', off, (s) => s.code === 'TAG_DISABLED');
    delays.disableNode = r.ms;
    assert.ok(r.ms < LIMIT_MS, `B served its buffered IDs of a disabled tag for ${r.ms.toFixed(0)} ms`);
  });

  it('max_id_limit raised through A lets B continue where it stopped', async () => {
    await createTag(a.url, { tag: 'capped', step: 10, min_step: 10, max_id_limit: 20 });
    const first = await until(b.url, '/v1/ids/capped?count=20', performance.now(), (s) => s.status === 200);
    assert.deepEqual(
      first.seen.ids,
      Array.from({ length: 20 }, (_, i) => BigInt(i + 1)),
    );
    for (let i = 0; i < 3; i++) assert.equal((await ask(b.url, '/v1/id/capped')).code, 'ID_SPACE_EXHAUSTED');

    const raised = await admin(a.url, 'PATCH', '/v1/admin/tags/capped', { max_id_limit: 40 });
    const r = await until(b.url, '/v1/id/capped', raised, (s) => s.status === 200);
    delays.raiseLimit = r.ms;
    assert.deepEqual(r.seen.ids, [21n]);
    assert.ok(r.ms < LIMIT_MS, `B answered ID_SPACE_EXHAUSTED for ${r.ms.toFixed(0)} ms after the limit was raised`);
    assert.deepEqual(
      await fetchIds(b.url, 'capped', 19),
      Array.from({ length: 19 }, (_, i) => BigInt(i + 22)),
    );
    assert.equal((await ask(b.url, '/v1/id/capped')).code, 'ID_SPACE_EXHAUSTED', 'the new limit holds on B');
  });

  it('a tag deleted through A answers TAG_NOT_FOUND on B', async () => {
    await createTag(a.url, { tag: 'doomed', step: 100, min_step: 10 });
    await until(b.url, '/v1/id/doomed', performance.now(), (s) => s.status === 200);
    const gone = await admin(a.url, 'DELETE', '/v1/admin/tags/doomed', undefined, 204);
    const r = await until(b.url, '/v1/id/doomed', gone, (s) => s.status !== 200);
    delays.delete = r.ms;
    assert.equal(r.seen.code, 'TAG_NOT_FOUND');
    assert.ok(r.ms < LIMIT_MS, `B served a deleted tag for ${r.ms.toFixed(0)} ms`);
  });

  for (const order of ['global', 'node'] as const) {
    it(`a ${order}-order tag deleted and re-created through A is served by B above everything the old one allocated`, async () => {
      const tag = `phoenix_${order}`;
      await createTag(a.url, { tag, order, step: 500, min_step: 10, node_block: 300 });
      const old = await until(b.url, `/v1/ids/${tag}?count=50`, performance.now(), (s) => s.status === 200);
      const oldIds = [...old.seen.ids, ...(await fetchIds(b.url, tag, 20))];
      const show = (await (await fetch(`${a.url}/v1/admin/tags/${tag}`, { headers: adminHeaders })).json()) as {
        state: { shards: { allocated_max: string }[] };
      };
      const allocatedMax = BigInt(show.state.shards[0].allocated_max);
      assert.ok(allocatedMax > oldIds[oldIds.length - 1], 'B holds IDs of the old tag it has not handed out');

      await admin(a.url, 'DELETE', `/v1/admin/tags/${tag}`, undefined, 204);
      await createTag(a.url, { tag, order, step: 100, min_step: 10, node_block: 50 });
      const reborn = performance.now();
      const r = await until(b.url, `/v1/ids/${tag}?count=10`, reborn, (s) => s.status === 200);
      delays[`recreate-${order}`] = r.ms;
      assert.ok(r.ms < LIMIT_MS, `B took ${r.ms.toFixed(0)} ms to serve the re-created tag`);
      const after = [...r.seen.ids, ...(await fetchIds(b.url, tag, 200))];
      for (const id of after)
        assert.ok(id > allocatedMax, `B served ${id}, not above ${allocatedMax} allocated to the deleted tag`);
    });
  }

  it('did all of it without restarting either process', (t) => {
    t.diagnostic(
      `delays (ms): ${Object.entries(delays)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ')}`,
    );
    assert.equal(a.proc.exitCode, null);
    assert.equal(b.proc.exitCode, null);
    assert.equal(Object.keys(delays).length, 8);
  });
});

describe('requests waiting for a refill when their tag changes', () => {
  const names = testNames();
  let node: ChildNode;

  before(async () => {
    // No refill worker anywhere: a request to a new tag waits for a segment that never comes.
    node = await spawnNode(names, { REFILL_CONCURRENCY: '0', REFILL_WAIT_MS: '8000' });
  });

  after(async () => {
    await node.stop();
    await cleanup(names);
  });

  it('answer TAG_NOT_FOUND at once when the tag is deleted, instead of waiting out REFILL_WAIT_MS', async () => {
    await createTag(node.url, { tag: 'stuck' });
    const start = performance.now();
    const waiting = fetch(`${node.url}/v1/id/stuck`).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { error?: { code: string } },
      ms: performance.now() - start,
    }));
    // The request has reached the node and waits for the tag's first segment.
    await waitFor(
      'the request to wait for a refill',
      async () =>
        /^idmint_refill_waits_total\{tag="stuck"\} [1-9]/m.test(await (await fetch(`${node.url}/metrics`)).text()),
      10_000,
    );
    const del = await fetch(`${node.url}/v1/admin/tags/stuck`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(del.status, 204);
    const r = await waiting;
    assert.equal(r.status, 404);
    assert.equal(r.body.error?.code, 'TAG_NOT_FOUND');
    assert.ok(r.ms < 2000, `answered after ${r.ms.toFixed(0)} ms, not after the 8 s refill wait`);
  });
});
