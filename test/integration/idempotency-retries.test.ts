// suite: cluster
// A retry consumes nothing (service/idempotency.ts, idem-claim-3.lua): over HTTP, against an
// idmint child process and one in this process on the same stores, replays, mismatching
// requests and concurrent requests under one key take exactly one request's IDs, which the
// next unkeyed ID proves; a rule tag with a small max_counter keeps serving through a client's
// retries; a take that fails leaves the key free; a process that dies between take and record
// (killed with SIGKILL mid-burst, or a request that never comes back) loses at most its own
// IDs, and no key ever has two answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fingerprintOf } from '../../src/core/idempotency-key.js';
import { IdmintError } from '../../src/errors.js';
import { IdempotencyKeys } from '../../src/service/idempotency.js';
import { IdempotencyRecords } from '../../src/store/redis/idempotency-records.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

interface Answer {
  readonly status: number;
  readonly ids?: string[];
  readonly code?: string;
  readonly retryAfter?: string | null;
}

/** GET /v1/ids/:tag?count=n with an Idempotency-Key. */
async function keyed(url: string, tag: string, key: string, count: number, query = ''): Promise<Answer> {
  const res = await fetch(`${url}/v1/ids/${tag}?count=${count}${query}`, { headers: { 'idempotency-key': key } });
  const body = (await res.json()) as { ids?: string[]; error?: { code: string } };
  return { status: res.status, ids: body.ids, code: body.error?.code, retryAfter: res.headers.get('retry-after') };
}

/** The next unkeyed ID of a counter tag, as a number. */
async function nextUnkeyed(url: string, tag: string, query = ''): Promise<string> {
  const res = await fetch(`${url}/v1/ids/${tag}?count=1${query}`);
  const body = (await res.json()) as { ids: string[] };
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.ids[0];
}

describe('a retry consumes nothing', () => {
  const names = testNames();
  let child: ChildNode;
  let local: LocalNode;
  let urls: string[];

  before(async () => {
    local = await startLocalNode(names);
    child = await spawnNode(names);
    urls = [local.url, child.url];
  });
  after(async () => {
    await Promise.allSettled([child?.stop(), local?.close()]);
    await cleanup(names);
  });

  it('N replays from two processes take no ID', async () => {
    await createTag(local.url, { tag: 'replays' });
    const first = await keyed(child.url, 'replays', 'pay-1', 10);
    assert.equal(first.status, 200);
    for (let i = 0; i < 5; i++)
      assert.deepEqual((await keyed(urls[i % 2], 'replays', 'pay-1', 10)).ids, first.ids, `replay ${i}`);
    assert.equal(await nextUnkeyed(local.url, 'replays'), '11', 'only the first request’s 10 IDs were consumed');
  });

  it('a mismatching request is refused and takes nothing, whatever it asks for', async () => {
    await createTag(local.url, { tag: 'mismatch' });
    assert.equal((await keyed(local.url, 'mismatch', 'pay-1', 1)).status, 200);
    const refused = await keyed(child.url, 'mismatch', 'pay-1', 1000);
    assert.equal(refused.status, 422);
    assert.equal(refused.code, 'IDEMPOTENCY_KEY_MISMATCH');
    assert.equal(await nextUnkeyed(local.url, 'mismatch'), '2');
  });

  it('20 concurrent requests under one key, over two processes, take one request’s IDs and all get its answer', async () => {
    await createTag(local.url, { tag: 'burst' });
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => keyed(urls[i % 2], 'burst', `burst-${round}`, 5)),
      );
      for (const a of answers) {
        assert.equal(a.status, 200, `round ${round}: ${a.code}`);
        assert.deepEqual(a.ids, answers[0].ids, `round ${round}: one answer`);
      }
    }
    assert.equal(await nextUnkeyed(child.url, 'burst'), '26', 'five keys of 5 IDs were consumed');
  });

  it('a rule tag with max_counter 9 keeps serving through one request and 12 retries of it', async () => {
    await createTag(local.url, { tag: 'small-rule', mode: 'rule', template: 'R{counter:1}', max_counter: 9 });
    const first = await keyed(local.url, 'small-rule', 'once', 1, '&app=shop');
    assert.equal(first.status, 200);
    for (let i = 0; i < 12; i++)
      assert.deepEqual((await keyed(urls[i % 2], 'small-rule', 'once', 1, '&app=shop')).ids, first.ids, `retry ${i}`);
    const next = await nextUnkeyed(child.url, 'small-rule', '&app=shop');
    assert.notEqual(next, first.ids?.[0]);
    assert.match(next, /^R\d$/, 'the period still serves');
  });

  it('a take that fails leaves the key free: the retry is a first request', async () => {
    await createTag(local.url, { tag: 'switched' });
    const patch = async (enabled: boolean) =>
      assert.equal(
        (
          await fetch(`${local.url}/v1/admin/tags/switched`, {
            method: 'PATCH',
            headers: adminHeaders,
            body: JSON.stringify({ enabled }),
          })
        ).status,
        200,
      );
    await patch(false);
    await waitFor(
      'both processes to see the tag disabled',
      async () =>
        (await Promise.all(urls.map((u) => keyed(u, 'switched', 'probe', 1)))).every((a) => a.code === 'TAG_DISABLED'),
      20_000,
    );
    const refused = await keyed(local.url, 'switched', 'pay-1', 3);
    assert.equal(refused.code, 'TAG_DISABLED');
    await patch(true);
    await waitFor(
      'both processes to see the tag enabled',
      async () =>
        (await Promise.all(urls.map((u) => fetch(`${u}/v1/ids/switched?count=1`)))).every((r) => r.status === 200),
      20_000,
    );
    const retry = await keyed(child.url, 'switched', 'pay-1', 3);
    assert.equal(retry.status, 200, retry.code);
    assert.equal(retry.ids?.length, 3);
    assert.deepEqual((await keyed(local.url, 'switched', 'pay-1', 3)).ids, retry.ids);
  });

  it('a process killed mid-burst of keyed requests leaves no key with two answers and no ID answered twice', async () => {
    await createTag(local.url, { tag: 'killed' });
    const victim = await spawnNode(names);
    const keys: string[] = [];
    const firstTry = new Map<string, string[]>();
    // 20 clients send keyed requests until the victim is dead; it is killed once 50 were
    // answered: the others' requests are in flight (some taken, some kept, some neither) when it dies.
    let killed: Promise<void> | undefined;
    let dead = false;
    const client = async () => {
      while (!dead) {
        const k = `k-${keys.length}`;
        keys.push(k);
        const a = await keyed(victim.url, 'killed', k, 2).catch(() => undefined);
        if (a?.status === 200 && a.ids) firstTry.set(k, a.ids);
        if (firstTry.size >= 50 && killed === undefined) killed = victim.kill().then(() => void (dead = true));
      }
    };
    await Promise.all(Array.from({ length: 20 }, client));
    await killed;
    assert.ok(firstTry.size < keys.length, `the kill came mid-burst (${firstTry.size} of ${keys.length} answered)`);
    const owner = new Map<string, string>();
    for (const k of keys) {
      let a = await keyed(urls[k.length % 2], 'killed', k, 2);
      // A claim of the dead process holds its key until it expires; the retry then takes anew.
      for (let i = 0; a.code === 'IDEMPOTENCY_KEY_IN_FLIGHT' && i < 40; i++) {
        await new Promise((r) => setTimeout(r, Number(a.retryAfter ?? 1) * 1000));
        a = await keyed(urls[k.length % 2], 'killed', k, 2);
      }
      assert.equal(a.status, 200, `${k}: ${a.code}`);
      const before = firstTry.get(k);
      if (before) assert.deepEqual(a.ids, before, `${k}: its retry gets the answer the dead process gave`);
      assert.deepEqual(
        (await keyed(urls[1 - (k.length % 2)], 'killed', k, 2)).ids,
        a.ids,
        `${k}: one answer from either process`,
      );
      for (const id of a.ids ?? []) {
        assert.equal(owner.get(id), undefined, `${id} answered under ${owner.get(id)} and ${k}`);
        owner.set(id, k);
      }
    }
    // Every key took its 2 IDs once; the dead process lost at most the IDs of the 20 requests in
    // flight when it died; the retries and their checks took nothing.
    const consumed = Number(await nextUnkeyed(local.url, 'killed')) - 1;
    assert.ok(
      consumed <= 2 * keys.length + 2 * 20,
      `${consumed} IDs consumed for ${keys.length} keys of 2 IDs and at most 20 requests lost`,
    );
  });
});

describe('a request that never comes back between take and record', () => {
  const names = testNames();
  let nodes: LocalNode[];

  before(async () => {
    nodes = [await startLocalNode(names), await startLocalNode(names)];
    await createTag(nodes[0].url, { tag: 'stalled' });
  });
  after(async () => {
    await Promise.allSettled(nodes.map((n) => n.close()));
    await cleanup(names);
  });

  it('holds its key until its claim expires, then the retry takes anew, and the late record never overwrites', async () => {
    const [a, b] = nodes.map(
      (n) =>
        new IdempotencyKeys(new IdempotencyRecords(n.rt.segments, n.rt.keys), {
          maxKeys: 100,
          claimMs: 1500,
          waitMs: 100,
        }),
    );
    const tag = await nodes[0].rt.ids.prepare({ tag: 'stalled', as: 'ids', count: 1 });
    const fp = fingerprintOf({ count: 2, shape: 'ids' });
    const take = (n: LocalNode) => async () => n.rt.ids.issue({ tag: 'stalled', as: 'ids', count: 2 });
    let resume: () => void = () => undefined;
    let stalledIds: string[] = [];
    const stalled = a.issue(tag, 'late', fp, 2, async () => {
      stalledIds = await take(nodes[0])();
      await new Promise<void>((r) => (resume = r));
      return stalledIds;
    });
    await waitFor('the stalled request to take', async () => stalledIds.length === 2, 10_000);
    const busy = await b.issue(tag, 'late', fp, 2, take(nodes[1])).then(
      () => assert.fail('answered while another request held the key'),
      (e: unknown) => e,
    );
    assert.ok(busy instanceof IdmintError && busy.code === 'IDEMPOTENCY_KEY_IN_FLIGHT', String(busy));
    assert.equal(busy.status, 409);
    assert.ok(
      busy.retryAfter !== undefined && busy.retryAfter >= 1 && busy.retryAfter <= 2,
      `Retry-After ${busy.retryAfter}`,
    );
    let retry: string[] | undefined;
    await waitFor(
      'the claim to expire and the retry to be served',
      async () => (retry = await b.issue(tag, 'late', fp, 2, take(nodes[1])).catch(() => undefined)) !== undefined,
      10_000,
    );
    assert.notDeepEqual(retry, stalledIds, 'the retry took IDs of its own: the stalled ones are a gap');
    resume();
    assert.deepEqual(await stalled, retry, 'the late request is given the key’s one answer, not its own IDs');
    assert.deepEqual(await a.issue(tag, 'late', fp, 2, take(nodes[0])), retry);
  });
});
