// suite: cluster
// Switching Tinyid clients to idmint, end to end against real MySQL and Redis: Tinyid's tables
// are created from its published DDL in a scratch database and filled in its shape, the import
// runs, then two idmint processes are called exactly as Tinyid clients call a Tinyid server
// (nextId, nextIdSimple, nextSegmentId, nextSegmentIdSimple with bizType and the token string
// from tiny_id_token). The right token is accepted, a wrong or missing one gets Tinyid's code 5,
// every ID lies above the old max_id, test_odd (delta 2, remainder 1) stays odd, and segments
// handed to clients never overlap IDs answered over nextId or idmint's own HTTP route.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type mysql from 'mysql2/promise';
import { idsOfSegment, type TinyidSegment } from '../../src/core/tinyid.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, startLocalNode } from '../../tools/node.js';
import { dropDb, oldDb, TINYID_DDL } from '../../tools/old-systems.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const TOKEN_ERR = '{"data":null,"code":5,"message":"token is error"}';
// Tokens as Tinyid's db.sql examples store them: one per bizType.
const TEST_TOKEN = '0f673adf80504e2eaa552f5d791b644c';
const ODD_TOKEN = '4d9b3fbd1c3b4c9e9f0b54b8d8e0a9a7';
const TEST_MAX = 8000000000123n;
const ODD_MAX = 5000000001n;

async function call(url: string, path: string, init?: RequestInit): Promise<{ status: number; body: string }> {
  const r = await fetch(url + path, init);
  return { status: r.status, body: await r.text() };
}

/** tinyid-client's request: POST, token and bizType in the query string, an empty form body. */
async function clientSegment(url: string, bizType: string, token: string): Promise<{ status: number; body: string }> {
  return call(url, `/tinyid/id/nextSegmentIdSimple?token=${token}&bizType=${bizType}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
  });
}

function parseSimple(text: string): TinyidSegment {
  const parts = text.split(',');
  assert.equal(parts.length, 5, `not a segment: ${JSON.stringify(text)}`);
  const [currentId, loadingId, maxId, delta, remainder] = parts;
  return { currentId: BigInt(currentId), loadingId: BigInt(loadingId), maxId: BigInt(maxId), delta: Number(delta), remainder: Number(remainder) };
}

/** The IDs of a nextId answer, read from its text (Tinyid's Longs, as JSON numbers). */
function idsOfJson(body: string): bigint[] {
  const m = /^\{"data":\[([0-9,]*)\],"code":200,"message":""\}$/.exec(body);
  assert.ok(m, `not a nextId answer: ${body}`);
  return m[1] === '' ? [] : m[1].split(',').map(BigInt);
}

describe('Tinyid clients after an import', () => {
  const names = testNames();
  const db = `${names.db}_tinyid_e2e`;
  let a: LocalNode;
  let b: LocalNode;
  let tiny: { url: string; c: mysql.Connection };

  before(async () => {
    a = await startLocalNode(names);
    b = await startLocalNode(names);
    tiny = await oldDb(db, TINYID_DDL);
    await tiny.c.query(
      `INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES
      ('test', 1, ?, 100000, 1, 0, 80000001), ('test_odd', 1, ?, 100000, 2, 1, 50001)`,
      [String(TEST_MAX), String(ODD_MAX)],
    );
    await tiny.c.query(`INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, 'test', '1'), (?, 'test_odd', '1')`, [TEST_TOKEN, ODD_TOKEN]);
  });
  after(async () => {
    await tiny?.c.end();
    await a?.close();
    await b?.close();
    await dropDb(db);
    await cleanup(names);
  });

  it('creates the Tinyid tags with order node, so that nextSegmentId serves them', async () => {
    const res = await fetch(`${a.url}/v1/admin/import`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ system: 'tinyid', mysql: tiny.url }) });
    const report = (await res.json()) as { tags: { tag: string; action: string; tokens_added: number }[] };
    assert.equal(res.status, 200, JSON.stringify(report));
    assert.deepEqual(
      report.tags.map((t) => [t.tag, t.action, t.tokens_added]),
      [
        ['test', 'create', 1],
        ['test_odd', 'create', 1],
      ],
    );
    for (const tag of ['test', 'test_odd']) {
      const t = (await (await fetch(`${a.url}/v1/admin/tags/${tag}`, { headers: adminHeaders })).json()) as { order: string };
      assert.equal(t.order, 'node', `tag ${tag}`);
    }
    // The first thing tinyid-client does after the switch: fetch a segment.
    const seg = await clientSegment(b.url, 'test', TEST_TOKEN);
    assert.equal(seg.status, 200);
    const s = parseSimple(seg.body);
    assert.ok(s.currentId >= TEST_MAX, `segment ${seg.body} starts below the old max_id ${TEST_MAX}`);
  });

  it('takes the original token of each bizType and answers code 5 to a wrong or missing one', async () => {
    const json = await call(a.url, `/tinyid/id/nextId?bizType=test&token=${TEST_TOKEN}`);
    assert.equal(json.status, 200);
    assert.equal(idsOfJson(json.body).length, 1);
    assert.match((await call(a.url, `/tinyid/id/nextIdSimple?bizType=test&batchSize=3&token=${TEST_TOKEN}`)).body, /^\d+,\d+,\d+$/);
    const jsonSeg = JSON.parse((await call(b.url, `/tinyid/id/nextSegmentId?bizType=test_odd&token=${ODD_TOKEN}`)).body) as {
      code: number;
      data: { delta: number; remainder: number };
    };
    assert.equal(jsonSeg.code, 200);
    assert.deepEqual([jsonSeg.data.delta, jsonSeg.data.remainder], [2, 1]);
    // Tinyid maps a token to its bizType: test_odd's token does not open test, nor a made-up one.
    for (const wrong of [ODD_TOKEN, 'not-a-token', '']) {
      for (const n of [a, b]) {
        assert.equal((await call(n.url, `/tinyid/id/nextId?bizType=test&token=${wrong}`)).body, TOKEN_ERR);
        assert.equal((await call(n.url, `/tinyid/id/nextSegmentId?bizType=test&token=${wrong}`)).body, TOKEN_ERR);
        const simple = await call(n.url, `/tinyid/id/nextIdSimple?bizType=test&token=${wrong}`);
        assert.deepEqual([simple.status, simple.body], [200, '']);
        const seg = await clientSegment(n.url, 'test', wrong);
        assert.deepEqual([seg.status, seg.body], [200, '']);
      }
    }
    assert.equal((await call(a.url, '/tinyid/id/nextId?bizType=test')).body, TOKEN_ERR, 'no token');
    assert.equal((await call(a.url, `/tinyid/id/nextId?bizType=test_odd&token=${TEST_TOKEN}`)).body, TOKEN_ERR);
  });

  it('every route, on both processes at once: above max_id, test_odd only odd, segments never overlap other IDs', async () => {
    const owner = new Map<string, string>();
    const claim = (tag: string, id: bigint, who: string) => {
      const floor = tag === 'test' ? TEST_MAX : ODD_MAX;
      assert.ok(id > floor, `${tag}: ${who} gave ${id}, not above the old max_id ${floor}`);
      if (tag === 'test_odd') assert.equal(id % 2n, 1n, `test_odd: ${who} gave the even ${id}`);
      const key = `${tag}:${id}`;
      const prev = owner.get(key);
      if (prev !== undefined) assert.fail(`${key} went to ${prev} and to ${who}`);
      owner.set(key, who);
    };
    const tokens: Record<string, string> = { test: TEST_TOKEN, test_odd: ODD_TOKEN };
    let segments = 0;
    const work = [];
    for (const tag of ['test', 'test_odd']) {
      const token = tokens[tag];
      for (const [i, n] of [a, b].entries()) {
        work.push(
          (async () => {
            for (let k = 0; k < 15; k++) {
              const s = parseSimple((await clientSegment(n.url, tag, token)).body);
              assert.deepEqual([s.delta, s.remainder], tag === 'test' ? [1, 0] : [2, 1]);
              for (const id of idsOfSegment(s)) claim(tag, id, `segment ${k} of node ${i}`);
              const j = JSON.parse((await call(n.url, `/tinyid/id/nextSegmentId?bizType=${tag}&token=${token}`)).body) as {
                code: number;
                data: Record<string, number>;
              };
              assert.equal(j.code, 200);
              const js = {
                currentId: BigInt(j.data.currentId),
                loadingId: BigInt(j.data.loadingId),
                maxId: BigInt(j.data.maxId),
                delta: j.data.delta,
                remainder: j.data.remainder,
              };
              for (const id of idsOfSegment(js)) claim(tag, id, `JSON segment ${k} of node ${i}`);
              segments += 2;
            }
          })(),
        );
        work.push(
          (async () => {
            for (let k = 0; k < 30; k++) {
              for (const id of idsOfJson((await call(n.url, `/tinyid/id/nextId?bizType=${tag}&batchSize=7&token=${token}`)).body))
                claim(tag, id, `nextId of node ${i}`);
              for (const id of (await call(n.url, `/tinyid/id/nextIdSimple?bizType=${tag}&batchSize=3&token=${token}`)).body.split(','))
                claim(tag, BigInt(id), `nextIdSimple of node ${i}`);
              const r = await fetch(`${n.url}/v1/ids/${tag}?count=5`, { headers: { 'x-idmint-token': token } });
              const body = (await r.json()) as { ids: string[] };
              assert.equal(r.status, 200, JSON.stringify(body));
              for (const id of body.ids) claim(tag, BigInt(id), `/v1/ids of node ${i}`);
            }
          })(),
        );
      }
    }
    await Promise.all(work);
    assert.equal(segments, 2 * 2 * 15 * 2);
    assert.ok(owner.size > 2 * 2 * 30 * (7 + 3 + 5), `only ${owner.size} IDs`);
  });
});
