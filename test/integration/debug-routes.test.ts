// suite: single — reads the keys it checks with a single-server Redis client on REDIS_URL
// The test-mode debug routes (src/api/http/routes/debug.ts) against real Redis and MySQL: refused
// outside test mode (config and routes) and without the admin token; a clock shifted back past
// CLOCK_MAX_BACK_MS answers CLOCK_BACKWARDS until real time catches up, then issues above
// everything before; a lease made to expire is fenced: the key is gone, the process answers
// 503 until it holds a lease again, and every ID after it lies above the old lease's horizon.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Node } from '../../src/process/serve.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { PRESETS, decode } from '../../src/core/snowflake-layout.js';
import { Keys } from '../../src/store/redis/keys.js';
import { REDIS_URL, cleanup, testEnv, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const show = (v: unknown): string => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x));
const TTL = 3000;
const MARGIN = 500;
const SF = PRESETS.snowflake;
const msOf = (id: bigint) => decode(SF, id).timestamp.getTime();

interface Outcome {
  readonly status: number;
  readonly ids?: bigint[];
  readonly code?: string;
  readonly retryAfter?: string | null;
}

async function take(url: string, tag: string, count: number): Promise<Outcome> {
  const r = await fetch(`${url}/v1/ids/${tag}?count=${count}`, { signal: AbortSignal.timeout(10000) });
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  if (r.status === 200) return { status: 200, ids: body.ids!.map(BigInt) };
  return { status: r.status, code: body.error?.code, retryAfter: r.headers.get('retry-after') };
}

/** Requests until one is answered with IDs; every refusal on the way must be a coded 503. */
async function served(
  url: string,
  tag: string,
  count: number,
  withinMs: number,
): Promise<{ ok: Outcome; refusals: string[] }> {
  const refusals: string[] = [];
  const until = Date.now() + withinMs;
  for (;;) {
    const o = await take(url, tag, count);
    if (o.status === 200) return { ok: o, refusals };
    assert.equal(o.status, 503, show(o));
    assert.ok(o.code === 'UNAVAILABLE' || o.code === 'LEASE_LOST' || o.code === 'CLOCK_BACKWARDS', show(o));
    refusals.push(o.code!);
    assert.ok(Date.now() < until, `not served within ${withinMs} ms: ${refusals.join(',')}`);
    await sleep(100);
  }
}

const debugPost = (url: string, path: string, body: unknown, headers: Record<string, string> = adminHeaders) =>
  fetch(`${url}/v1/debug/${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

describe('test mode is refused outside loopback', () => {
  it('TEST_MODE=1 needs a loopback HOST', () => {
    assert.throws(
      () => loadConfig({ TEST_MODE: '1', HOST: '0.0.0.0' }),
      (e: unknown) => e instanceof ConfigError && /TEST_MODE needs a loopback HOST/.test(e.message),
    );
    assert.throws(() => loadConfig({ TEST_MODE: '1' }), ConfigError, 'the default HOST 0.0.0.0 is not loopback');
    assert.throws(() => loadConfig({ TEST_MODE: 'yes', HOST: '127.0.0.1' }), /TEST_MODE must be 1 or 0/);
    assert.equal(loadConfig({ TEST_MODE: '1', HOST: '127.0.0.1' }).testMode, true);
    assert.equal(loadConfig({ HOST: '127.0.0.1' }).testMode, false);
  });
});

describe('debug routes', () => {
  const names = testNames();
  const redis = new Redis(REDIS_URL);
  const keys = new Keys(names.prefix);
  let plain: Node & { url: string };
  let node: Node & { url: string };

  before(async () => {
    plain = await startLocalNode(names, { LOG_LEVEL: 'silent' });
    node = await startLocalNode(names, {
      TEST_MODE: '1',
      LOG_LEVEL: 'silent',
      LEASE_TTL_MS: String(TTL),
      LEASE_MARGIN_MS: String(MARGIN),
    });
    await createTag(node.url, { tag: 'evt', mode: 'snowflake' });
  });

  after(async () => {
    await node?.close();
    await plain?.close();
    redis.disconnect();
    await cleanup(names);
  });

  it('do not exist outside test mode', async () => {
    assert.equal(testEnv(names).HOST, '127.0.0.1');
    for (const path of ['clock', 'lease/expire']) {
      const r = await debugPost(plain.url, path, path === 'clock' ? { offset_ms: -5000 } : {});
      assert.equal(r.status, 404, `${path} on a node without TEST_MODE`);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    }
    const ok = await take(plain.url, 'evt', 3);
    assert.equal(ok.status, 200, 'the other node still serves on its own clock');
  });

  it('need the admin token and valid bodies', async () => {
    const noToken = await debugPost(node.url, 'clock', { offset_ms: -5000 }, { 'content-type': 'application/json' });
    assert.equal(noToken.status, 401);
    const wrong = await debugPost(
      node.url,
      'clock',
      { offset_ms: -5000 },
      { ...adminHeaders, authorization: 'Bearer not-the-token' },
    );
    assert.equal(wrong.status, 401);
    assert.equal((await debugPost(node.url, 'clock', { offset_ms: 1.5 })).status, 400);
    assert.equal((await debugPost(node.url, 'clock', { offset: 10 })).status, 400);
    assert.equal((await debugPost(node.url, 'lease/expire', { worker_bits: 0 })).status, 400);
    const state = (await (await fetch(`${node.url}/v1/debug/clock`, { headers: adminHeaders })).json()) as {
      offset_ms: number;
    };
    assert.equal(state.offset_ms, 0, 'refused requests changed nothing');
  });

  it('a clock shifted back past the bound answers CLOCK_BACKWARDS, and recovers once time catches up', async () => {
    const first = await take(node.url, 'evt', 100);
    assert.equal(first.status, 200, show(first));
    const before = first.ids!.at(-1)!;

    // Within the bound (CLOCK_MAX_BACK_MS, 10 ms) the node waits instead of refusing.
    assert.equal((await debugPost(node.url, 'clock', { offset_ms: -5 })).status, 200);
    const small = await take(node.url, 'evt', 10);
    assert.equal(small.status, 200, `a 5 ms step back is waited out: ${show(small)}`);
    assert.ok(small.ids![0] > before);
    const afterSmall = small.ids!.at(-1)!;

    const shift = 1500;
    const r = await debugPost(node.url, 'clock', { offset_ms: -shift });
    assert.equal(r.status, 200);
    const body = (await r.json()) as { previous_offset_ms: number; offset_ms: number };
    assert.deepEqual([body.previous_offset_ms, body.offset_ms], [-5, -shift]);
    const shiftedAt = Date.now();
    const refused = await take(node.url, 'evt', 10);
    assert.equal(refused.status, 503, `expected CLOCK_BACKWARDS, got ${show(refused)}`);
    assert.equal(refused.code, 'CLOCK_BACKWARDS');
    assert.match(refused.retryAfter ?? '', /^[1-9]\d*$/);

    // The offset stays: the node serves again once its shifted clock passes the last ID.
    let resumed: Outcome | undefined;
    const refusals: string[] = [];
    while (Date.now() - shiftedAt < shift + 3000) {
      const o = await take(node.url, 'evt', 10);
      if (o.status === 200) {
        resumed = o;
        break;
      }
      refusals.push(o.code ?? String(o.status));
      await sleep(100);
    }
    assert.ok(resumed, `no IDs within ${shift + 3000} ms of the shift (answers: ${refusals.join(',')})`);
    assert.ok(Date.now() - shiftedAt >= shift - 50, 'served before the shifted clock caught up');
    assert.deepEqual([...new Set(refusals)], refusals.length ? ['CLOCK_BACKWARDS'] : []);
    assert.ok(resumed.ids![0] > afterSmall, `${resumed.ids![0]} is not above ${afterSmall}, issued before the shift`);
    // Its time is not before the last one's: a clock that caught up to within the bound waits for
    // the last ID's millisecond and goes on there with the next sequence.
    assert.ok(
      msOf(resumed.ids![0]) >= msOf(afterSmall),
      `${msOf(resumed.ids![0])} ms is before ${msOf(afterSmall)} ms`,
    );
    // Back on the system clock (a step forward). Leases renewed on the shifted clock end
    // earlier in real time, so the node may re-acquire and wait out its own horizon first.
    assert.equal((await debugPost(node.url, 'clock', { offset_ms: 0 })).status, 200);
    const again = await served(node.url, 'evt', 10, TTL + 2000);
    assert.ok(again.ok.ids![0] > resumed.ids!.at(-1)!);
  });

  it('a lease made to expire is fenced: the id is freed, nothing is issued under the old lease past its end', async () => {
    const warm = (await served(node.url, 'evt', 10, TTL + 2000)).ok;
    const lastBefore = warm.ids!.at(-1)!;
    const workerId = decode(SF, lastBefore).workerId;
    const space = keys.workerSpace(SF.workerBits);
    const leaseKey = `${space}w:${workerId}`;
    assert.ok((await redis.pttl(leaseKey)) > 0, 'the lease key lives in Redis');
    // The horizon the old lease may have issued up to (raised by each renewal; read before the
    // expiry, so anything the node issues under the old lease is at or below a value >= this).
    const horizon = Number(await redis.get(`${space}last:${workerId}`));
    assert.ok(horizon > Date.now(), 'the horizon lies ahead (now + TTL at the last renewal)');
    const events = async () =>
      (
        (await (await fetch(`${node.url}/v1/admin/workers`, { headers: adminHeaders })).json()) as {
          this_node: { lease_events: { acquired: number } };
        }
      ).this_node.lease_events;
    const acquiredBefore = (await events()).acquired;

    const r = await debugPost(node.url, 'lease/expire', {});
    assert.equal(r.status, 200);
    const body = (await r.json()) as { expired: { worker_bits: number; worker_id: number; key_deleted: boolean }[] };
    assert.deepEqual(body.expired, [{ worker_bits: SF.workerBits, worker_id: workerId, key_deleted: true }]);
    assert.equal(await redis.exists(leaseKey), 0, 'the lease key was deleted');

    // The next request re-acquires; the new lease starts above the old horizon, so the node
    // answers 503 until its clock passes it, and issues only above it.
    const first = await take(node.url, 'evt', 10);
    assert.equal(first.status, 503, `expected a 503 right after the expiry, got ${show(first)}`);
    assert.ok(first.code === 'UNAVAILABLE' || first.code === 'LEASE_LOST', `code ${first.code}`);
    let resumed: Outcome | undefined;
    const until = Date.now() + TTL + 3000;
    while (Date.now() < until) {
      const o = await take(node.url, 'evt', 10);
      if (o.status === 200) {
        resumed = o;
        break;
      }
      assert.equal(o.status, 503, show(o));
      await sleep(100);
    }
    assert.ok(resumed, 'the node did not serve again within a TTL');
    for (const id of resumed.ids!) {
      assert.ok(msOf(id) > horizon, `ID ${id} at ${msOf(id)} is not above the old lease's horizon ${horizon}`);
      assert.ok(id > lastBefore);
    }
    assert.ok((await events()).acquired > acquiredBefore, 'a new lease was acquired');
    assert.ok(
      (await redis.pttl(`${space}w:${decode(SF, resumed.ids![0]).workerId}`)) > 0,
      'the new lease key lives in Redis',
    );
  });
});
