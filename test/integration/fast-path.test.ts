// suite: single — request handling in front of the router; the takes under it run on the cluster in api.test.ts
// The single-ID fast path in front of Fastify's router: it answers exactly as the route does
// (status, headers, body, metrics) and declines, writing nothing and taking no ID, whenever
// the router has anything to decide.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/api/app.js';
import { fastIdPath } from '../../src/api/http/fast-path.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** A request and a response that records what is written. */
function exchange(url: string, method = 'GET', headers: Record<string, string> = {}) {
  const req = { method, url, headers } as unknown as IncomingMessage;
  const out: { status?: number; headers?: Record<string, unknown>; body?: string } = {};
  const res = {
    writeHead(status: number, h: Record<string, unknown>) {
      out.status = status;
      out.headers = h;
      return this;
    },
    end(body: string) {
      out.body = body;
    },
  } as unknown as ServerResponse;
  return { req, res, out };
}

/** The exchange's answer, once its response was ended (a take through a coalescer answers later). */
async function answered(x: ReturnType<typeof exchange>): Promise<ReturnType<typeof exchange>['out']> {
  await waitFor('the answer', () => x.out.body !== undefined, 5000, 5);
  return x.out;
}

const httpCount = (metrics: string) =>
  Number(
    /idmint_http_request_duration_seconds_count\{route="\/v1\/id\/:tag",method="GET",status="200"\} (\d+)/.exec(
      metrics,
    )?.[1] ?? 0,
  );

describe('the single-ID fast path', () => {
  const names = testNames();
  let node: LocalNode;
  let closing = false;
  let fast: ReturnType<typeof fastIdPath>;

  before(async () => {
    node = await startLocalNode(names, { LOG_LEVEL: 'error' });
    await createTag(node.url, { tag: 'n', order: 'node', node_block: 100 });
    await createTag(node.url, { tag: 'g' });
    await createTag(node.url, { tag: 'full', max_id_limit: 1 });
    await createTag(node.url, { tag: 'sf', mode: 'snowflake' });
    await createTag(node.url, {
      tag: 'r',
      mode: 'rule',
      order: 'node',
      template: 'R"{app}\\{counter:6}',
      min_counter: 1,
      max_counter: 999_999,
      reset_seconds: 0,
    });
    await createTag(node.url, {
      tag: 'rg',
      mode: 'rule',
      order: 'global',
      template: '{app}-{counter:6}',
      min_counter: 1,
      max_counter: 999_999,
      reset_seconds: 0,
    });
    await createTag(node.url, { tag: 't', order: 'node' });
    const tok = await fetch(`${node.url}/v1/admin/tags/t/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{}',
    });
    assert.equal(tok.status, 201);
    fast = fastIdPath({
      ids: node.rt.ids,
      metrics: node.rt.metrics,
      log: node.rt.log,
      requestId: () => 'req-test',
      open: () => !closing,
    });
    // The first request of a tag reads its definition and fills the block through the router.
    for (const tag of ['n', 'g', 'full', 'sf']) assert.equal((await fetch(`${node.url}/v1/id/${tag}`)).status, 200);
  });

  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('answers a cached node-order tag itself, as the route would', () => {
    const a = exchange('/v1/id/n');
    assert.equal(fast(a.req, a.res), true);
    assert.equal(a.out.status, 200);
    assert.deepEqual(a.out.headers, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': a.out.body!.length,
    });
    const first = BigInt((JSON.parse(a.out.body!) as { id: string }).id);
    const b = exchange('/v1/id/n', 'GET', { accept: 'text/plain' });
    assert.equal(fast(b.req, b.res), true);
    assert.equal(b.out.headers!['content-type'], 'text/plain; charset=utf-8');
    assert.equal(BigInt(b.out.body!), first + 1n);
  });

  it('answers a cached global-order tag through its coalescer, errors as the router does', async () => {
    const a = exchange('/v1/id/g');
    assert.equal(fast(a.req, a.res), true);
    const out = await answered(a);
    assert.equal(out.status, 200);
    assert.deepEqual(out.headers, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': out.body!.length,
    });
    assert.match(out.body!, /^\{"id":"\d+"\}$/);
    // The tag's one ID is gone: the same 409 as through the router.
    const b = exchange('/v1/id/full');
    assert.equal(fast(b.req, b.res), true);
    const refused = await answered(b);
    const viaRouter = await fetch(`${node.url}/v1/id/full?`);
    assert.equal(refused.status, viaRouter.status);
    assert.equal(refused.status, 409);
    assert.deepEqual(
      JSON.parse(refused.body!).error.code,
      ((await viaRouter.json()) as { error: { code: string } }).error.code,
    );
    assert.equal(refused.headers!['content-type'], viaRouter.headers.get('content-type'));
  });

  it("answers a snowflake tag with a lease at hand, increasing on the route's IDs", async () => {
    const viaRouter = BigInt(((await (await fetch(`${node.url}/v1/id/sf?`)).json()) as { id: string }).id);
    const a = exchange('/v1/id/sf');
    assert.equal(fast(a.req, a.res), true);
    assert.equal(a.out.status, 200);
    const id = BigInt(JSON.parse(a.out.body!).id);
    assert.ok(id > viaRouter, `${id} follows ${viaRouter}`);
    const decoded = (await (await fetch(`${node.url}/v1/decode/sf/${id}`)).json()) as { worker_id: number };
    assert.equal(decoded.worker_id, node.rt.leases.held()[0].workerId, "issued under this process's lease");
    const b = exchange('/v1/id/sf');
    assert.equal(fast(b.req, b.res), true);
    assert.ok(BigInt(JSON.parse(b.out.body!).id) > id);
  });

  it('answers an order-node rule with its app and salt, escaped as JSON', async () => {
    // A request through the router refreshes the cached definition (kept TAG_CACHE_MS).
    const first = ((await (await fetch(`${node.url}/v1/id/r?app=web&salt=`)).json()) as { id: string }).id;
    // An old definition is served while it is read again; the fast path waits for the new read.
    await waitFor('the definition read again', () => node.rt.registry.peek('r') !== undefined, 5000, 5);
    const n0 = Number(first.slice(-6));
    const want = (k: number) => `R"web\\${String(n0 + k).padStart(6, '0')}`;
    const a = exchange('/v1/id/r?app=web');
    assert.equal(fast(a.req, a.res), true);
    assert.deepEqual(JSON.parse(a.out.body!), { id: want(1) });
    assert.equal(a.out.headers!['content-length'], a.out.body!.length);
    const viaRouter = (await (await fetch(`${node.url}/v1/id/r?app=web&x=`)).json()) as { error?: { code: string } };
    assert.equal(
      viaRouter.error?.code,
      'INVALID_ARGUMENT',
      'an unknown parameter: declined, and the router refuses it',
    );
    const b = exchange('/v1/id/r?salt=s1&app=web');
    assert.equal(fast(b.req, b.res), true);
    assert.deepEqual(JSON.parse(b.out.body!), { id: want(2) });
    for (const url of [
      '/v1/id/r',
      '/v1/id/r?app=',
      '/v1/id/r?app=w%20b',
      '/v1/id/r?app=web&app=x',
      '/v1/id/r?app=web&count=2',
      '/v1/id/n?app=web',
    ]) {
      const x = exchange(url);
      assert.equal(fast(x.req, x.res), false, `${url} declines`);
      assert.deepEqual(x.out, {});
    }
    const c = exchange('/v1/id/r?app=web');
    assert.equal(fast(c.req, c.res), true);
    assert.deepEqual(JSON.parse(c.out.body!), { id: want(3) }, 'declined requests took no counter');
  });

  it("answers an order-global rule through the coalescer of its app's counter, in step with the router", async () => {
    const counter = (id: string) => Number(id.slice(-6));
    const cold = exchange('/v1/id/rg?app=api');
    assert.equal(fast(cold.req, cold.res), false, 'no counter source for this app yet: the router creates it');
    const first = ((await (await fetch(`${node.url}/v1/id/rg?app=api&salt=`)).json()) as { id: string }).id;
    const a = exchange('/v1/id/rg?app=api');
    assert.equal(fast(a.req, a.res), true);
    const out = await answered(a);
    assert.equal(out.status, 200);
    assert.equal(out.headers!['content-length'], out.body!.length);
    const id = (JSON.parse(out.body!) as { id: string }).id;
    assert.match(id, /^api-\d{6}$/);
    assert.equal(counter(id), counter(first) + 1, "the next value of the app's counter");
    const other = exchange('/v1/id/rg?app=web');
    assert.equal(fast(other.req, other.res), false, "another app's counter is a source of its own");
    const next = ((await (await fetch(`${node.url}/v1/id/rg?app=api&salt=`)).json()) as { id: string }).id;
    assert.equal(counter(next), counter(id) + 1, 'the router continues after it');
  });

  it('declines without writing or taking an ID whenever the router has to decide', () => {
    const cases: [string, string, Record<string, string>][] = [
      ['/v1/id/n?key=1', 'GET', {}],
      ['/v1/id/n?', 'GET', {}],
      ['/v1/id/n', 'POST', {}],
      ['/v1/ids/n', 'GET', {}],
      ['/v1/id/n/x', 'GET', {}],
      ['/v1/id/%6E', 'GET', {}],
      ['/v1/id/' + 'x'.repeat(65), 'GET', {}],
      ['/v1/id/n', 'GET', { authorization: 'Bearer x' }],
      ['/v1/id/n', 'GET', { 'x-idmint-token': 'x' }],
      ['/v1/id/missing', 'GET', {}],
      ['/v1/id/t', 'GET', {}],
    ];
    const before = exchange('/v1/id/n');
    assert.equal(fast(before.req, before.res), true);
    for (const [url, method, headers] of cases) {
      const x = exchange(url, method, headers);
      assert.equal(fast(x.req, x.res), false, `${method} ${url} ${JSON.stringify(headers)} declines`);
      assert.deepEqual(x.out, {}, 'nothing written');
    }
    closing = true;
    const c = exchange('/v1/id/n');
    assert.equal(fast(c.req, c.res), false, 'declines while closing (the router answers 503)');
    closing = false;
    const next = exchange('/v1/id/n');
    assert.equal(fast(next.req, next.res), true);
    assert.equal(
      BigInt(JSON.parse(next.out.body!).id),
      BigInt(JSON.parse(before.out.body!).id) + 1n,
      'no ID was taken by a declined request',
    );
  });

  it('gives over HTTP the same answer as the router, and counts it in the metrics', async () => {
    const m0 = httpCount(await (await fetch(`${node.url}/metrics`)).text());
    const viaFast = await fetch(`${node.url}/v1/id/n`);
    const viaRouter = await fetch(`${node.url}/v1/id/n?`); // a query string: the router serves it
    for (const r of [viaFast, viaRouter]) {
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    }
    const [a, b] = [await viaFast.json(), await viaRouter.json()] as { id: string }[];
    assert.deepEqual(Object.keys(a), ['id']);
    assert.deepEqual(Object.keys(b), ['id']);
    assert.equal(BigInt(b.id), BigInt(a.id) + 1n);
    const textFast = await fetch(`${node.url}/v1/id/n`, { headers: { accept: 'text/plain' } });
    const textRouter = await fetch(`${node.url}/v1/id/n?`, { headers: { accept: 'text/plain' } });
    assert.equal(textFast.headers.get('content-type'), textRouter.headers.get('content-type'));
    assert.match(await textFast.text(), /^\d+$/);
    assert.match(await textRouter.text(), /^\d+$/);
    const m1 = httpCount(await (await fetch(`${node.url}/metrics`)).text());
    assert.equal(m1 - m0, 4, 'every answer is in the latency histogram, fast or not');
    // A tag with tokens is refused by the router, as without the fast path: as a missing tag.
    const refused = await fetch(`${node.url}/v1/id/t`);
    assert.equal(refused.status, 404);
  });

  it('serves the first request of a tag from the sources warmed when its definition was read', async () => {
    await createTag(node.url, { tag: 'wn', order: 'node', node_block: 100 });
    await createTag(node.url, { tag: 'wg' });
    await createTag(node.url, { tag: 'wsf', mode: 'snowflake' });
    // Reading the definitions asks for no ID; it warms their sources (the lease this process
    // holds is taken up; a node-order block is still fetched by the first request needing it).
    for (const tag of ['wn', 'wg', 'wsf']) await node.rt.ids.reads.access(tag, undefined);
    assert.deepEqual(node.rt.ids.reads.cachedSources('wn')?.segments, 1, "the node-order tag's source is cached");
    const g = exchange('/v1/id/wg');
    assert.equal(fast(g.req, g.res), true, 'the first request of an order-global tag goes through its coalescer');
    assert.equal((await answered(g)).status, 200);
    const n = exchange('/v1/id/wn');
    assert.equal(fast(n.req, n.res), false, 'no block yet: declined, and nothing taken');
    assert.deepEqual(n.out, {});
    const s = exchange('/v1/id/wsf');
    assert.equal(
      fast(s.req, s.res),
      true,
      'the first request of a snowflake tag is served under the lease already held',
    );
    assert.equal(s.out.status, 200);
  });

  it('drops the sources of an old epoch once the new definition is read', async () => {
    await createTag(node.url, { tag: 'ep', order: 'node', node_block: 100 });
    assert.equal((await fetch(`${node.url}/v1/id/ep`)).status, 200);
    const before = node.rt.ids.reads.cachedSources('ep');
    assert.equal(before?.segments, 1);
    const del = await fetch(`${node.url}/v1/admin/tags/ep`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    assert.ok(del.ok, `delete: ${del.status}`);
    assert.equal((await fetch(`${node.url}/v1/id/ep`)).status, 404);
    assert.equal(node.rt.ids.reads.cachedSources('ep'), undefined, 'a deleted tag keeps no sources');
    await createTag(node.url, { tag: 'ep', order: 'node', node_block: 100 });
    assert.equal((await fetch(`${node.url}/v1/id/ep`)).status, 200);
    const after = node.rt.ids.reads.cachedSources('ep');
    assert.ok(
      after !== undefined && after.epoch > before!.epoch,
      `a new epoch: ${JSON.stringify(after)} after ${JSON.stringify(before)}`,
    );
    assert.equal(after.segments, 1, "only the new epoch's source is kept");
  });

  it("answers in front of the app's own route: it stands in for everything the app puts on it", () => {
    assert.equal(node.app!.preRouter, true);
  });

  it('is off with PRE_ROUTER=0', async () => {
    const rt: Runtime = Object.assign(Object.create(node.rt) as Runtime, {
      config: { ...node.rt.config, preRouter: false },
    });
    const app = await buildApp(rt);
    try {
      await app.ready();
      assert.equal(app.preRouter, false);
    } finally {
      await app.close();
    }
  });

  it('is off in an app extended by its embedder, whose hooks run for every request of the route', async () => {
    let seen = 0;
    const app = await buildApp(node.rt, {
      extend: (a) => {
        a.addHook('onRequest', function countRequests(_req, _reply, done) {
          seen++;
          done();
        });
      },
    });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      assert.equal(app.preRouter, false);
      const port = (app.server.address() as { port: number }).port;
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`http://127.0.0.1:${port}/v1/id/n`)).status, 200);
      assert.equal(seen, 3, 'the hook ran for every request of the hottest route');
    } finally {
      await app.close();
    }
  });
});
