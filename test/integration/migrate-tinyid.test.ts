// suite: cluster
// Switching Tinyid clients to idmint, end to end against real MySQL and Redis: Tinyid's tables
// are created from its published DDL in a scratch database and filled in its shape, the import
// runs, then two idmint processes are called exactly as Tinyid clients call a Tinyid server
// (nextId, nextIdSimple, nextSegmentId, nextSegmentIdSimple with bizType and the token string
// from tiny_id_token). The right token is accepted, a wrong or missing one gets Tinyid's code 5,
// every ID lies above the old max_id, test_odd (delta 2, remainder 1) stays odd, and segments
// handed to clients never overlap IDs answered over nextId or idmint's own HTTP route. Then
// Tinyid's own rules of access: a token row reaches the biz_type its table's case-insensitive
// collation finds, a biz_type no token reaches stays closed on every transport until an
// operator opens it, and a max_id above 2^53-1 with delta 2 is refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import type mysql from 'mysql2/promise';
import { IdmintClient } from '../../src/client/index.js';
import { idsOfSegment } from '../../src/core/tinyid.js';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, startLocalNode } from '../../tools/node.js';
import { dropDb, oldDb, TINYID_DDL } from '../../tools/old-systems.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { UdpClient } from '../../tools/udp-client.js';
import { parseSimple } from '../helpers/answers.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;
type ImportAnswer = {
  tags?: { tag: string; action: string; tokens_added: number; notes: string[] }[];
  error?: { code: string; message: string };
};

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
    await tiny.c.query(
      `INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, 'test', '1'), (?, 'test_odd', '1')`,
      [TEST_TOKEN, ODD_TOKEN],
    );
  });
  after(async () => {
    await tiny?.c.end();
    await a?.close();
    await b?.close();
    await dropDb(db);
    await cleanup(names);
  });

  it('creates the Tinyid tags with order node, so that nextSegmentId serves them', async () => {
    const res = await fetch(`${a.url}/v1/admin/import`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ system: 'tinyid', mysql: tiny.url }),
    });
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
      const t = (await (await fetch(`${a.url}/v1/admin/tags/${tag}`, { headers: adminHeaders })).json()) as {
        order: string;
      };
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
    assert.match(
      (await call(a.url, `/tinyid/id/nextIdSimple?bizType=test&batchSize=3&token=${TEST_TOKEN}`)).body,
      /^\d+,\d+,\d+$/,
    );
    const jsonSeg = JSON.parse(
      (await call(b.url, `/tinyid/id/nextSegmentId?bizType=test_odd&token=${ODD_TOKEN}`)).body,
    ) as {
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
              const j = JSON.parse(
                (await call(n.url, `/tinyid/id/nextSegmentId?bizType=${tag}&token=${token}`)).body,
              ) as {
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
              for (const id of idsOfJson(
                (await call(n.url, `/tinyid/id/nextId?bizType=${tag}&batchSize=7&token=${token}`)).body,
              ))
                claim(tag, id, `nextId of node ${i}`);
              for (const id of (
                await call(n.url, `/tinyid/id/nextIdSimple?bizType=${tag}&batchSize=3&token=${token}`)
              ).body.split(','))
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

describe("Tinyid's own rules of access, imported", () => {
  const names = testNames();
  const db = `${names.db}_tinyid_access`;
  const CASE_TOKEN = 'c0ffee00c0ffee00c0ffee00c0ffee00';
  let node: LocalNode;
  let tiny: { url: string; c: mysql.Connection };
  let grpc: IdsClient;
  let udp: UdpClient;

  const importTinyid = async () => {
    const res = await fetch(`${node.url}/v1/admin/import`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ system: 'tinyid', mysql: tiny.url }),
    });
    return { status: res.status, body: (await res.json()) as ImportAnswer };
  };

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()), UDP_PORT: String(await freePort()) });
    tiny = await oldDb(db, TINYID_DDL);
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
    // tid_case: its one token row spells it TID_CASE. no_token: no token row at all. huge: a
    // max_id above 2^53-1 with delta 2.
    await tiny.c.query(
      `INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES
      ('tid_case', 1, 7000, 1000, 1, 0), ('no_token', 1, 3000, 1000, 1, 0), ('huge', 1, '9007199254740993', 1000, 2, 1)`,
    );
    await tiny.c.query(
      `INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, 'TID_CASE', 'x'), ('t', 'huge', 'x')`,
      [CASE_TOKEN],
    );
  });
  after(async () => {
    udp?.close();
    grpc?.close();
    await tiny?.c.end();
    await node?.close();
    await dropDb(db);
    await cleanup(names);
  });

  it('refuses a max_id above 2^53-1 with delta 2, as documented, and writes nothing', async () => {
    const r = await importTinyid();
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(
      r.body.error!.message,
      /tag "huge": the old maximum 9007199254740993 leaves no room below the tag's max_id_limit 9007199254740991/,
    );
    for (const tag of ['huge', 'tid_case', 'no_token']) {
      assert.equal((await fetch(`${node.url}/v1/admin/tags/${tag}`, { headers: adminHeaders })).status, 404, tag);
    }
    await tiny.c.query(`DELETE FROM tiny_id_info WHERE biz_type = 'huge'`);
    await tiny.c.query(`DELETE FROM tiny_id_token WHERE biz_type = 'huge'`);
  });

  it("attaches a token to the biz_type Tinyid's table matches it to, ignoring case as its collation does", async () => {
    // Tinyid's DDL leaves biz_type in utf8's default collation, which ignores case: Tinyid's own
    // lookup (WHERE biz_type = ?) finds tid_case for the token row's TID_CASE.
    const [cols] = await tiny.c.query<mysql.RowDataPacket[]>(
      `SELECT TABLE_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND COLUMN_NAME = 'biz_type' ORDER BY TABLE_NAME`,
      [db],
    );
    assert.deepEqual(
      cols.map((c) => c.TABLE_NAME),
      ['tiny_id_info', 'tiny_id_token'],
    );
    for (const c of cols) assert.match(String(c.COLLATION_NAME), /_ci$/, `${c.TABLE_NAME}.biz_type`);
    const [found] = await tiny.c.query<mysql.RowDataPacket[]>(
      `SELECT biz_type FROM tiny_id_info WHERE biz_type = 'TID_CASE'`,
    );
    assert.deepEqual(
      found.map((f) => f.biz_type),
      ['tid_case'],
    );

    const r = await importTinyid();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const tc = r.body.tags!.find((t) => t.tag === 'tid_case')!;
    assert.deepEqual([tc.action, tc.tokens_added], ['create', 1]);
    assert.match(
      tc.notes.join('\n'),
      /token\(s\) tinyid-1 name bizType "TID_CASE".*callers sending bizType=TID_CASE get code 5.*send bizType=tid_case/,
    );
    const nt = r.body.tags!.find((t) => t.tag === 'no_token')!;
    assert.deepEqual([nt.action, nt.tokens_added], ['create', 0]);
    assert.match(
      nt.notes.join('\n'),
      /no token in tiny_id_token reaches this biz_type, so Tinyid served it to no caller: created disabled/,
    );
    // The tag is closed to callers without the token, on Tinyid's routes and idmint's own.
    assert.deepEqual((await call(node.url, '/tinyid/id/nextIdSimple?bizType=tid_case')).body, '');
    assert.equal((await call(node.url, '/tinyid/id/nextId?bizType=tid_case&token=wrong')).body, TOKEN_ERR);
    // A protected tag answers a request without its token as a missing one (the exposure policy).
    assert.equal((await fetch(`${node.url}/v1/ids/tid_case?count=1`)).status, 404);
    const id = BigInt((await call(node.url, `/tinyid/id/nextIdSimple?bizType=tid_case&token=${CASE_TOKEN}`)).body);
    assert.ok(id > 7000n, `${id}`);
    // idmint's tag names match exactly: the spelling of the token row is told, not served.
    assert.equal((await call(node.url, `/tinyid/id/nextId?bizType=TID_CASE&token=${CASE_TOKEN}`)).body, TOKEN_ERR);
  });

  it('imports a biz_type no token reaches disabled: closed on every transport until the operator opens it', async () => {
    const r = await importTinyid();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.tags!.map((t) => [t.tag, t.action, t.tokens_added]),
      [
        ['no_token', 'unchanged', 0],
        ['tid_case', 'unchanged', 0],
      ],
    );
    assert.match(
      r.body.tags![0].notes.join('\n'),
      /no token in tiny_id_token reaches this biz_type, and idmint's tag "no_token" is disabled/,
    );
    const def = (await (await fetch(`${node.url}/v1/admin/tags/no_token`, { headers: adminHeaders })).json()) as {
      enabled: boolean;
    };
    assert.equal(def.enabled, false);

    const closed = async (token: string) => {
      const http = await fetch(`${node.url}/v1/ids/no_token?count=1`, {
        headers: token ? { 'x-idmint-token': token } : {},
      });
      assert.equal(http.status, 409);
      assert.equal(((await http.json()) as { error: { code: string } }).error.code, 'TAG_DISABLED');
      assert.equal(
        (await call(node.url, `/tinyid/id/nextId?bizType=no_token&token=${token}`)).body,
        '{"data":null,"code":6,"message":"tag \\"no_token\\" is disabled"}',
      );
      assert.equal((await call(node.url, `/tinyid/id/nextIdSimple?bizType=no_token&token=${token}`)).body, '');
      assert.equal((await call(node.url, `/tinyid/id/nextSegmentIdSimple?bizType=no_token&token=${token}`)).body, '');
      const md = IdsClient.md(token ? { 'x-idmint-token': token } : {});
      await assert.rejects(
        grpc.next({ tag: 'no_token' }, md),
        (e: { code: number }) => e.code === status.FAILED_PRECONDITION,
      );
      // Padded with a field the protocol does not echo, so the whole refusal fits (UDP.md, reply size).
      const u = await udp.request(node.udpPort!, {
        action: 'get',
        rule_name: 'no_token',
        app_name: 'a',
        ...(token ? { token } : {}),
        pad: 'x'.repeat(200),
      });
      assert.notEqual(u.code, 0);
      assert.match(String(u.message), /disabled/);
      const ws = new IdmintClient({ url: node.url, headers: token ? { 'x-idmint-token': token } : {} });
      const s = ws.stream('no_token');
      await assert.rejects(s.next(), (e: { code?: string }) => e.code === 'TAG_DISABLED');
      s.close();
      ws.close();
    };
    await closed('');

    // The operator opens it as Tinyid served its biz types: a token, then enabled.
    const made = await fetch(`${node.url}/v1/admin/tags/no_token/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"tinyid"}',
    });
    assert.equal(made.status, 201);
    const token = ((await made.json()) as { token: string }).token;
    await closed(token);
    const on = await fetch(`${node.url}/v1/admin/tags/no_token`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: '{"enabled":true}',
    });
    assert.equal(on.status, 200);
    assert.ok(BigInt((await call(node.url, `/tinyid/id/nextIdSimple?bizType=no_token&token=${token}`)).body) > 3000n);
    assert.equal((await call(node.url, '/tinyid/id/nextId?bizType=no_token')).body, TOKEN_ERR);
    // A later run leaves the operator's choice alone.
    const again = await importTinyid();
    assert.deepEqual(
      again.body.tags!.map((t) => [t.tag, t.action, t.tokens_added, t.notes.length]),
      [
        ['no_token', 'unchanged', 0, 0],
        ['tid_case', 'unchanged', 0, 1],
      ],
    );
  });
});
