// suite: single — metrics, OpenAPI, Bull Board and health routes, no Redis key layout involved
// The operations surface: Prometheus metrics, OpenAPI, Bull Board behind the admin token,
// liveness and readiness.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';

describe('operations endpoints', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    await createTag(url, { tag: 'm1', step: 100, min_step: 10 });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('counts issued IDs, requests, refills and errors in /metrics', async () => {
    await fetchIds(url, 'm1', 250);
    await fetch(`${url}/v1/id/m1`);
    await fetch(`${url}/v1/id/no-such-tag`);
    const r = await fetch(`${url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/plain/);
    const text = await r.text();
    const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
    assert.equal(value(/^idmint_ids_issued_total\{tag="m1",mode="segment"\} (\d+)$/m), 251);
    assert.ok(
      value(
        /^idmint_http_request_duration_seconds_count\{route="\/v1\/id\/:tag",method="GET",status="200"\} (\d+)$/m,
      ) >= 1,
    );
    assert.equal(value(/^idmint_errors_total\{transport="http",code="TAG_NOT_FOUND"\} (\d+)$/m), 1);
    assert.ok(
      value(/^idmint_refill_duration_seconds_count\{result="current"\} (\d+)$/m) >= 1,
      'the cold refill was timed',
    );
    assert.ok(
      value(/^idmint_segments_allocated_total\{tag="m1"\} (\d+)$/m) >= 2,
      'a cold segment of 100 and at least one refill for 251 IDs',
    );
    const remaining = value(/^idmint_segment_remaining\{tag="m1"\} (\d+)$/m);
    const view = (await (
      await fetch(`${url}/v1/admin/tags/m1`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as {
      state: { shards: { current: { remaining: number } }[] };
    };
    assert.equal(remaining, view.state.shards[0].current.remaining, 'the gauge reads the live segment');
    assert.match(text, /^idmint_queue_jobs\{queue="refill",state="waiting"\} \d+$/m);
    assert.match(text, /^idmint_process_cpu_user_seconds_total /m);
  });

  it('describes every public route in OpenAPI, from the validating schemas', async () => {
    const r = await fetch(`${url}/docs/json`);
    assert.equal(r.status, 200);
    const doc = (await r.json()) as {
      openapi: string;
      paths: Record<string, Record<string, { parameters?: { name: string; schema?: { maximum?: number } }[] }>>;
    };
    assert.match(doc.openapi, /^3\./);
    for (const p of [
      '/v1/id/{tag}',
      '/v1/ids/{tag}',
      '/v1/decode/{tag}/{id}',
      '/api/segment/get/{tag}',
      '/api/snowflake/get/{tag}',
      '/v1/admin/tags',
      '/v1/admin/tags/{tag}',
      '/v1/admin/workers',
      '/healthz',
      '/readyz',
    ]) {
      assert.ok(doc.paths[p], `OpenAPI lacks ${p}`);
    }
    const count = doc.paths['/v1/ids/{tag}'].get.parameters?.find((x) => x.name === 'count');
    assert.equal(count?.schema?.maximum, 10000, 'the documented bound is the validated one');
    const page = await fetch(`${url}/docs/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /swagger/i);
  });

  it('serves Bull Board only with the admin token (header or cookie)', async () => {
    assert.equal((await fetch(`${url}/admin/queues`)).status, 401);
    assert.equal(
      (await fetch(`${url}/admin/queues`, { headers: { authorization: 'Bearer wrong-token' } })).status,
      401,
    );
    assert.equal(
      (await fetch(`${url}/admin/queues`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status,
      200,
    );
    const api = await fetch(`${url}/admin/queues/api/queues`, { headers: { cookie: `idmint_admin=${ADMIN_TOKEN}` } });
    assert.equal(api.status, 200);
    const body = (await api.json()) as { queues: { name: string }[] };
    const queueNames = body.queues.map((q) => q.name);
    assert.ok(queueNames.includes('refill'), queueNames.join(','));
    assert.ok(queueNames.includes('janitor'), queueNames.join(','));
    assert.ok(
      queueNames.some((n) => n.startsWith('lease.')),
      queueNames.join(','),
    );
  });

  it('answers liveness and readiness', async () => {
    const h = await fetch(`${url}/healthz`);
    assert.equal(h.status, 200);
    const r = await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(r.status, 200);
    assert.deepEqual(((await r.json()) as { checks: Record<string, string> }).checks, {
      redis: 'ok',
      mysql: 'ok',
      lease: 'ok',
    });
    // A snowflake tag makes readiness need a valid lease of its width: the check takes it.
    await createTag(url, { tag: 'sf-ready', mode: 'snowflake', preset: 'jssafe' });
    const held = async () =>
      (
        (await (
          await fetch(`${url}/v1/admin/workers`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        ).json()) as {
          this_node: { leases: { worker_bits: number; valid: boolean }[] };
        }
      ).this_node.leases;
    assert.ok(!(await held()).some((l) => l.worker_bits === 6), 'no lease of width 6 before the check');
    const ready = await fetch(`${url}/readyz`);
    assert.equal(ready.status, 200, JSON.stringify(await ready.clone().json()));
    assert.ok(
      (await held()).some((l) => l.worker_bits === 6 && l.valid),
      'the readiness check took the lease',
    );
  });
});
