// suite: cluster
// Tinyid's HTTP API (/tinyid/id/...) against real Redis and MySQL: the exact bytes Tinyid
// answers for success, a bad token, an unknown bizType, missing parameters, a batchSize over
// the limit (refused with code 6, never fewer IDs) or not a number; GET and POST with a form
// body; segments that never overlap IDs served over HTTP at the same time (two processes);
// delta/remainder from stride/offset.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idsOfSegment, type TinyidSegment } from '../../src/core/tinyid.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { parseSimple } from '../helpers/answers.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const TOKEN_ERR = '{"data":null,"code":5,"message":"token is error"}';

async function call(
  url: string,
  path: string,
  init?: RequestInit,
): Promise<{ status: number; type: string | null; body: string }> {
  const r = await fetch(url + path, init);
  return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
}

async function newToken(url: string, tag: string): Promise<string> {
  const r = await fetch(`${url}/v1/admin/tags/${tag}/tokens`, {
    method: 'POST',
    headers: adminHeaders,
    body: '{"name":"tinyid"}',
  });
  assert.equal(r.status, 201);
  return ((await r.json()) as { token: string }).token;
}

describe('Tinyid HTTP API', () => {
  const names = testNames();
  let a: LocalNode;
  let b: LocalNode;
  let url: string;
  let tok: string;
  let oddTok: string;

  before(async () => {
    a = await startLocalNode(names);
    b = await startLocalNode(names);
    url = a.url;
    await createTag(url, { tag: 'test', order: 'node', node_block: 100 });
    await createTag(url, { tag: 'seg', order: 'node', node_block: 100 });
    await createTag(url, { tag: 'load', order: 'node', node_block: 50, step: 200, min_step: 20 });
    await createTag(url, { tag: 'test_odd', order: 'node', node_block: 10, stride: 2, offset: 1 });
    await createTag(url, { tag: 'glob' });
    await createTag(url, { tag: 'open', order: 'node' });
    await createTag(url, { tag: 'day', mode: 'rule', template: '{counter:4}', max_counter: 9999 });
    await createTag(url, { tag: 'shard', layout: 'sharded', shards: 2, order: 'node' });
    tok = await newToken(url, 'test');
    oddTok = await newToken(url, 'test_odd');
  });
  after(async () => {
    await a.close();
    await b.close();
    await cleanup(names);
  });

  // Tokens are per tag in idmint; a tag's own token is what its Tinyid callers send.
  const tokenOf = async (tag: string) => newToken(url, tag);

  it("nextId and nextIdSimple: Tinyid's bytes and content types, GET and POST with a form body", async () => {
    const one = await call(url, `/tinyid/id/nextId?bizType=test&token=${tok}`);
    assert.equal(one.status, 200);
    assert.equal(one.type, 'application/json;charset=UTF-8');
    assert.equal(one.body, '{"data":[1],"code":200,"message":""}');
    assert.equal(
      (await call(url, `/tinyid/id/nextId?bizType=test&batchSize=3&token=${tok}`)).body,
      '{"data":[2,3,4],"code":200,"message":""}',
    );
    const simple = await call(url, `/tinyid/id/nextIdSimple?bizType=test&token=${tok}`);
    assert.equal(simple.type, 'text/plain;charset=UTF-8');
    assert.equal(simple.body, '5');
    assert.equal((await call(url, `/tinyid/id/nextIdSimple?bizType=test&batchSize=3&token=${tok}`)).body, '6,7,8');
    // tinyid-client POSTs; parameters may come in the form body.
    const post = await call(url, '/tinyid/id/nextId', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `bizType=test&batchSize=2&token=${tok}`,
    });
    assert.equal(post.body, '{"data":[9,10],"code":200,"message":""}');
    const postSimple = await call(url, `/tinyid/id/nextIdSimple?bizType=test&token=${tok}`, {
      method: 'POST',
      body: '',
    });
    assert.equal(postSimple.body, '11');
    // Spring binds an empty batchSize as absent, and lowers nothing below: 0 gives no IDs.
    assert.equal(
      (await call(url, `/tinyid/id/nextId?bizType=test&batchSize=&token=${tok}`)).body,
      '{"data":[12],"code":200,"message":""}',
    );
    assert.equal(
      (await call(url, `/tinyid/id/nextId?bizType=test&batchSize=0&token=${tok}`)).body,
      '{"data":[],"code":200,"message":""}',
    );
    assert.equal((await call(url, `/tinyid/id/nextIdSimple?bizType=test&batchSize=0&token=${tok}`)).body, '');
    assert.equal((await call(url, `/tinyid/id/nextIdSimple?bizType=test&batchSize=-3&token=${tok}`)).body, '');
    assert.equal(
      (await call(url, `/tinyid/id/nextId?bizType=test&batchSize=0x2&token=${tok}`)).body,
      '{"data":[13,14],"code":200,"message":""}',
    );
  });

  it('a bad token, an unknown bizType and missing parameters: code 5 "token is error", and "" from the Simple routes', async () => {
    const cases = [
      `bizType=test&token=wrong`,
      `bizType=test&token=${oddTok}`, // another tag's token
      `bizType=test`,
      `bizType=test&token=`,
      `bizType=nope&token=${tok}`,
      `bizType=${'x'.repeat(80)}&token=${tok}`,
      `token=${tok}`,
      '',
    ];
    for (const q of cases) {
      for (const r of ['nextId', 'nextSegmentId']) {
        const res = await call(url, `/tinyid/id/${r}?${q}`);
        assert.equal(res.status, 200, `${r}?${q}`);
        assert.equal(res.type, 'application/json;charset=UTF-8');
        assert.equal(res.body, TOKEN_ERR, `${r}?${q}`);
      }
      for (const r of ['nextIdSimple', 'nextSegmentIdSimple']) {
        const res = await call(url, `/tinyid/id/${r}?${q}`);
        assert.equal(res.status, 200);
        assert.equal(res.type, 'text/plain;charset=UTF-8');
        assert.equal(res.body, '', `${r}?${q}`);
      }
    }
    // A tag without client tokens is open here as on every route: any token or none.
    assert.match(
      (await call(url, '/tinyid/id/nextId?bizType=open')).body,
      /^\{"data":\[\d+\],"code":200,"message":""\}$/,
    );
    assert.match((await call(url, '/tinyid/id/nextIdSimple?bizType=open&token=anything')).body, /^\d+$/);
  });

  it("batchSize up to Tinyid's batch.size.max (100000) is served whole; above it, code 6 and no IDs; no int is Spring's 400", async () => {
    const t = await tokenOf('open');
    const started = performance.now();
    const big = await call(url, `/tinyid/id/nextId?bizType=open&batchSize=100000&token=${t}`);
    const ms = performance.now() - started;
    const parsed = JSON.parse(big.body) as { data: number[]; code: number };
    assert.equal(parsed.code, 200);
    assert.equal(parsed.data.length, 100000);
    assert.equal(new Set(parsed.data).size, 100000);
    assert.ok(ms < 10_000, `100000 IDs took ${ms.toFixed(0)} ms`);
    const simple = (await call(url, `/tinyid/id/nextIdSimple?bizType=open&batchSize=100000&token=${t}`)).body.split(
      ',',
    );
    assert.equal(simple.length, 100000);
    assert.ok(BigInt(simple[0]) > BigInt(parsed.data[99999]));
    // Tinyid would lower these to 100000 and answer code 200: never fewer IDs than asked here.
    const before = (
      JSON.parse((await call(url, `/tinyid/id/nextId?bizType=open&token=${t}`)).body) as { data: number[] }
    ).data[0];
    for (const n of ['100001', '2147483647']) {
      const over = await call(url, `/tinyid/id/nextId?bizType=open&batchSize=${n}&token=${t}`);
      assert.equal(over.status, 200);
      assert.equal(
        over.body,
        `{"data":null,"code":6,"message":"batchSize ${n} is above the largest, 100000; no IDs were handed out"}`,
      );
      const overSimple = await call(url, `/tinyid/id/nextIdSimple?bizType=open&batchSize=${n}&token=${t}`);
      assert.deepEqual([overSimple.status, overSimple.body], [200, '']);
    }
    const after = (
      JSON.parse((await call(url, `/tinyid/id/nextId?bizType=open&token=${t}`)).body) as { data: number[] }
    ).data[0];
    assert.ok(after - before < 100000, `the refused batches took IDs: ${before} then ${after}`);
    // The token is checked first, as Tinyid does: a wrong one is code 5 whatever the batchSize.
    assert.equal((await call(url, `/tinyid/id/nextId?bizType=test&batchSize=100001&token=wrong`)).body, TOKEN_ERR);
    for (const bad of ['abc', '1.5', '99999999999', '+0x10']) {
      const r = await call(url, `/tinyid/id/nextId?bizType=open&batchSize=${encodeURIComponent(bad)}&token=${t}`);
      assert.equal(r.status, 400, bad);
      const body = JSON.parse(r.body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['timestamp', 'status', 'error', 'exception', 'message', 'path']);
      assert.equal(body.status, 400);
      assert.equal(body.error, 'Bad Request');
      assert.equal(body.path, '/tinyid/id/nextId');
      assert.match(body.message as string, /NumberFormatException: For input string: "/);
      assert.equal(
        (await call(url, `/tinyid/id/nextIdSimple?bizType=open&batchSize=${encodeURIComponent(bad)}&token=${t}`))
          .status,
        400,
      );
    }
  });

  it("nextSegmentId and nextSegmentIdSimple: Tinyid's SegmentId fields and meanings", async () => {
    const t = await tokenOf('seg');
    const first = await call(url, `/tinyid/id/nextSegmentId?bizType=seg&token=${t}`);
    assert.equal(first.type, 'application/json;charset=UTF-8');
    // IDs (currentId, maxId], the next segment loaded from 20 % in, as Tinyid does.
    assert.equal(
      first.body,
      '{"data":{"maxId":100,"loadingId":20,"currentId":0,"delta":1,"remainder":0},"code":200,"message":""}',
    );
    const second = await call(url, `/tinyid/id/nextSegmentIdSimple?bizType=seg&token=${t}`);
    assert.equal(second.type, 'text/plain;charset=UTF-8');
    assert.equal(second.body, '100,120,200,1,0');
    // Refused with code 6 (and "" from the Simple route): order global, rule and sharded tags.
    for (const [tag, why] of [
      ['glob', /order global/],
      ['day', /rule tag/],
      ['shard', /sharded/],
    ] as const) {
      const tt = await tokenOf(tag);
      const r = JSON.parse((await call(url, `/tinyid/id/nextSegmentId?bizType=${tag}&token=${tt}`)).body) as {
        data: null;
        code: number;
        message: string;
      };
      assert.equal(r.code, 6, tag);
      assert.equal(r.data, null);
      assert.match(r.message, why);
      assert.equal((await call(url, `/tinyid/id/nextSegmentIdSimple?bizType=${tag}&token=${tt}`)).body, '');
    }
    // nextId serves order global tags (IDs from Redis, in order); a rule tag is refused.
    const g = await tokenOf('glob');
    assert.match(
      (await call(url, `/tinyid/id/nextId?bizType=glob&batchSize=2&token=${g}`)).body,
      /^\{"data":\[\d+,\d+\],"code":200,"message":""\}$/,
    );
    const rule = JSON.parse((await call(url, `/tinyid/id/nextId?bizType=day&token=${await tokenOf('day')}`)).body) as {
      code: number;
      message: string;
    };
    assert.equal(rule.code, 6);
    assert.equal((await call(url, `/tinyid/id/nextIdSimple?bizType=day&token=${await tokenOf('day')}`)).body, '');
    // A disabled tag: code 6 with the reason.
    await fetch(`${url}/v1/admin/tags/seg`, { method: 'PATCH', headers: adminHeaders, body: '{"enabled":false}' });
    const off = JSON.parse((await call(url, `/tinyid/id/nextSegmentId?bizType=seg&token=${t}`)).body) as {
      code: number;
      message: string;
    };
    assert.equal(off.code, 6);
    assert.match(off.message, /disabled/);
  });

  it('segments handed to Tinyid clients never overlap IDs served over HTTP at the same time (two processes)', async () => {
    // 'load' has no client tokens: open to every route.
    const owner = new Map<bigint, string>();
    const claim = (id: bigint, who: string) => {
      const prev = owner.get(id);
      if (prev !== undefined) assert.fail(`ID ${id} went to ${prev} and to ${who}`);
      owner.set(id, who);
    };
    const segments: TinyidSegment[] = [];
    await Promise.all([
      ...[a, b].map(async (n, i) => {
        for (let k = 0; k < 40; k++) {
          const s = parseSimple((await call(n.url, '/tinyid/id/nextSegmentIdSimple?bizType=load')).body);
          segments.push(s);
          for (const id of idsOfSegment(s)) claim(id, `segment ${k} of node ${i}`);
        }
      }),
      ...[a, b].map(async (n, i) => {
        for (let k = 0; k < 40; k++)
          for (const id of await fetchIds(n.url, 'load', 7, '')) claim(id, `HTTP batch of node ${i}`);
      }),
      ...[a, b].map(async (n, i) => {
        for (let k = 0; k < 40; k++) {
          const r = JSON.parse((await call(n.url, '/tinyid/id/nextId?bizType=load&batchSize=5')).body) as {
            data: number[];
          };
          for (const id of r.data) claim(BigInt(id), `nextId of node ${i}`);
        }
      }),
    ]);
    assert.equal(segments.length, 80);
    let inSegments = 0n;
    let whole = 0;
    for (const s of segments) {
      if (s.maxId - s.currentId === 50n) whole++;
      // node_block IDs, or fewer where a take spans two Redis segments (the rest is a gap).
      const width = s.maxId - s.currentId;
      assert.ok(width > 0n && width <= 50n, `segment ${s.currentId}..${s.maxId}`);
      assert.equal(s.loadingId, s.currentId + width / 5n);
      inSegments += width;
    }
    // One take from Redis: a segment is short only where one of idmint's segments ended.
    assert.ok(whole >= 60, `only ${whole} of 80 segments hold node_block IDs`);
    assert.equal(owner.size, Number(inSegments) + 80 * 7 + 80 * 5);
  });

  it('delta/remainder: a tag with stride 2 and offset 1 gives only odd IDs on every route', async () => {
    const seen = new Set<bigint>();
    const add = (id: bigint) => {
      assert.equal(id % 2n, 1n, `even ID ${id}`);
      assert.ok(!seen.has(id), `ID ${id} twice`);
      seen.add(id);
    };
    const first = await call(url, `/tinyid/id/nextSegmentId?bizType=test_odd&token=${oddTok}`);
    assert.equal(
      first.body,
      '{"data":{"maxId":21,"loadingId":5,"currentId":1,"delta":2,"remainder":1},"code":200,"message":""}',
    );
    const seg = (
      JSON.parse(first.body) as {
        data: { currentId: number; loadingId: number; maxId: number; delta: number; remainder: number };
      }
    ).data;
    for (const id of idsOfSegment({
      ...seg,
      currentId: BigInt(seg.currentId),
      loadingId: BigInt(seg.loadingId),
      maxId: BigInt(seg.maxId),
    }))
      add(id);
    for (let k = 0; k < 20; k++) {
      for (const id of (
        JSON.parse((await call(url, `/tinyid/id/nextId?bizType=test_odd&batchSize=7&token=${oddTok}`)).body) as {
          data: number[];
        }
      ).data)
        add(BigInt(id));
      for (const id of (
        await call(url, `/tinyid/id/nextIdSimple?bizType=test_odd&batchSize=3&token=${oddTok}`)
      ).body.split(','))
        add(BigInt(id));
      const s = parseSimple((await call(url, `/tinyid/id/nextSegmentIdSimple?bizType=test_odd&token=${oddTok}`)).body);
      assert.equal(s.delta, 2);
      assert.equal(s.remainder, 1);
      assert.equal(s.currentId % 2n, 1n);
      for (const id of idsOfSegment(s)) add(id);
      const r = await fetch(`${url}/v1/ids/test_odd?count=4`, { headers: { authorization: `Bearer ${oddTok}` } });
      for (const id of ((await r.json()) as { ids: string[] }).ids) add(BigInt(id));
    }
    assert.ok(seen.size > 20 * (7 + 3 + 10 + 4));
  });
});
