// suite: cluster
// Importing from Leaf, Tinyid and id_server against real MySQL and Redis: each old system's
// tables are created in a scratch database from its published DDL and filled with rows in its
// shape; after the import every ID idmint hands out (HTTP, Leaf's route, UDP for rules) lies
// above every ID the old system could have handed out, no ID twice, interleaving kept. A dry
// run writes nothing, a re-run changes nothing, a tag idmint serves below the old counter is
// raised (its buffered segment abandoned), a mode clash or a Lua file of another shape
// refuses the whole import. For id_server, what its counter table cannot tell is covered
// too: saves that lag what a node handed out (id_step x batch_save, a margin, failed saves
// read from its log), rows shared by app names (or rule names) that differ only in case, rows
// of a clock that ran ahead.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { periodOf, periodStart } from '../../src/core/period.js';
import { cleanup, mysqlUrlFor, testEnv, testNames } from '../../tools/env.js';
import { dropDb, ID_SERVER_DDL, LEAF_DDL, oldDb, TINYID_DDL } from '../../tools/old-systems.js';
import { adminHeaders, createTag, fetchIds, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { freePort, runTsx } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';
import { waitFor } from '../helpers/fault-load.js';

type Json = Record<string, unknown>;
type Report = {
  dry_run: boolean;
  tags: {
    tag: string;
    action: string;
    counter_floor?: string;
    floors: { shard: number; scope: string; counter: string }[];
    tokens_added: number;
    notes: string[];
  }[];
};

async function importVia(url: string, body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/import`, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Json };
}

async function mustImport(url: string, body: Json): Promise<Report> {
  const r = await importVia(url, body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as unknown as Report;
}

async function tagStatus(url: string, tag: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/tags/${tag}`, { headers: adminHeaders });
  return { status: res.status, body: (await res.json()) as Json };
}

// A zone where the day is not about to end, so the test's period stays the import's.
const ZONE = ['UTC', 'Asia/Shanghai', 'America/New_York'].find((z) => {
  const h = Number(new Intl.DateTimeFormat('en-US', { timeZone: z, hour: 'numeric', hourCycle: 'h23' }).format(Date.now()));
  return h >= 1 && h <= 22;
})!;

function assertAbove(ids: readonly bigint[], floor: bigint, what: string): void {
  assert.equal(new Set(ids).size, ids.length, `${what}: an ID twice`);
  for (const id of ids) assert.ok(id > floor, `${what}: ${id} is not above ${floor}`);
}

describe('import from Leaf', () => {
  const names = testNames();
  const db = `${names.db}_leaf`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let leaf: { url: string; c: mysql.Connection };
  const ROWS: [string, string, number, string | null][] = [
    ['order', '4503599627370000', 2000, 'orders'],
    ['user', '123456789012', 1000, null],
    ['pay.v2', '1000', 100, 'payments'],
  ];

  before(async () => {
    node = await startLocalNode(names);
    leaf = await oldDb(db, [LEAF_DDL]);
    for (const r of ROWS) await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', r);
  });
  after(async () => {
    await leaf?.c.end();
    await node?.close();
    await dropDb(db);
    await cleanup(names);
  });

  it('a dry run prints the plan and writes nothing', async () => {
    const r = await mustImport(node.url, { system: 'leaf', mysql: leaf.url, dry_run: true });
    assert.equal(r.dry_run, true);
    assert.deepEqual(
      r.tags.map((t) => [t.tag, t.action, t.counter_floor]),
      [
        ['order', 'create', '4503599627370000'],
        ['pay.v2', 'create', '1000'],
        ['user', 'create', '123456789012'],
      ],
    );
    for (const [tag] of ROWS) assert.equal((await tagStatus(node.url, tag)).status, 404, `${tag} was created by a dry run`);
  });

  it('creates a segment tag per biz_tag whose IDs lie above max_id; a re-run changes nothing', async () => {
    const r = await mustImport(node.url, { system: 'leaf', mysql: leaf.url });
    assert.deepEqual(
      r.tags.map((t) => t.action),
      ['create', 'create', 'create'],
    );
    for (const [tag, maxId, step, description] of ROWS) {
      const t = (await tagStatus(node.url, tag)).body;
      assert.equal(t.mode, 'segment');
      assert.equal(t.step, step);
      assert.equal(t.description, description ?? '');
      const ids = await fetchIds(node.url, tag, 300);
      assertAbove(ids, BigInt(maxId), tag);
      // Leaf's own route, which Leaf clients call.
      const res = await fetch(`${node.url}/api/segment/get/${tag}`);
      assert.equal(res.status, 200);
      assert.ok(BigInt(await res.text()) > ids[ids.length - 1]);
    }
    const epochs = await Promise.all(ROWS.map(async ([tag]) => (await tagStatus(node.url, tag)).body.incarnation));
    const again = await mustImport(node.url, { system: 'leaf', mysql: leaf.url });
    assert.deepEqual(
      again.tags.map((t) => t.action),
      ['unchanged', 'unchanged', 'unchanged'],
    );
    assert.deepEqual(await Promise.all(ROWS.map(async ([tag]) => (await tagStatus(node.url, tag)).body.incarnation)), epochs);
    assertAbove(await fetchIds(node.url, 'order', 50), BigInt(ROWS[0][1]), 'order after the re-run');
  });

  it('raises a tag idmint serves below the old counter, abandoning the segment Redis holds', async () => {
    await createTag(node.url, { tag: 'legacy', mode: 'segment', step: 1000 });
    const before = await fetchIds(node.url, 'legacy', 10);
    assert.deepEqual(
      before,
      Array.from({ length: 10 }, (_, i) => BigInt(i + 1)),
    );
    // Redis now holds the rest of the segment 1..1000; Leaf handed out up to 499.
    await leaf.c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('legacy', 500, 200)");
    const r = await mustImport(node.url, { system: 'leaf', mysql: leaf.url });
    assert.equal(r.tags.find((t) => t.tag === 'legacy')!.action, 'raise');
    assertAbove([...(await fetchIds(node.url, 'legacy', 20)), ...(await fetchIds(node.url, 'legacy', 1))], 500n, 'legacy after the raise');
    const again = await mustImport(node.url, { system: 'leaf', mysql: leaf.url });
    assert.ok(again.tags.every((t) => t.action === 'unchanged'));
  });

  it('raises an order: node tag, whose block sits in the process memory', async () => {
    await createTag(node.url, { tag: 'legacy_node', mode: 'segment', order: 'node', node_block: 100, step: 1000 });
    const one = async () => {
      const res = await fetch(`${node.url}/v1/id/legacy_node`);
      const b = (await res.json()) as { id: string };
      assert.equal(res.status, 200, JSON.stringify(b));
      return BigInt(b.id);
    };
    for (let i = 1n; i <= 5n; i++) assert.equal(await one(), i);
    await leaf.c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('legacy_node', 50, 10)");
    const r = await mustImport(node.url, { system: 'leaf', mysql: leaf.url });
    assert.equal(r.tags.find((t) => t.tag === 'legacy_node')!.action, 'raise');
    const after = [await one(), await one(), ...(await fetchIds(node.url, 'legacy_node', 20)), await one()];
    assertAbove(after, 50n, 'legacy_node after the raise');
  });

  it('the command line prints a large report whole before it exits', async () => {
    const rows = Array.from({ length: 1500 }, (_, i) => [`bulk_${i}`, String(1_000_000 + i), 1000, `bulk tag ${i} `.repeat(8)]);
    await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ?', [rows]);
    try {
      const r = await runTsx(['src/cli.ts', 'import', 'leaf', '--mysql', leaf.url, '--dry-run', '--json'], { env: { ...process.env, ...testEnv(names) } });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(r.stdout.length > 256 * 1024, `a report of ${r.stdout.length} bytes`);
      const report = JSON.parse(r.stdout) as Report;
      assert.equal(report.tags.filter((t) => t.tag.startsWith('bulk_') && t.action === 'create').length, 1500);
    } finally {
      await leaf.c.query("DELETE FROM leaf_alloc WHERE biz_tag LIKE 'bulk\\_%'");
    }
  });

  it('refuses a name idmint has with another mode, and writes nothing of the import', async () => {
    await createTag(node.url, { tag: 'clash', mode: 'snowflake' });
    await leaf.c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('clash', 10, 10), ('fresh', 77, 10)");
    const r = await importVia(node.url, { system: 'leaf', mysql: leaf.url });
    assert.equal(r.status, 400);
    assert.match(JSON.stringify(r.body), /tag \\"clash\\" exists in idmint as a snowflake tag/);
    assert.equal((await tagStatus(node.url, 'fresh')).status, 404);
    await leaf.c.query("DELETE FROM leaf_alloc WHERE biz_tag IN ('clash', 'fresh')");
  });
});

describe('import from Tinyid (command line)', () => {
  const names = testNames();
  const db = `${names.db}_tinyid`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let tiny: { url: string; c: mysql.Connection };
  const TOKEN = '0f673adf80504e2eaa552f5d791b644c';

  before(async () => {
    node = await startLocalNode(names);
    tiny = await oldDb(db, TINYID_DDL);
    await tiny.c.query(`INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES
      ('test', 1, 8000000000123, 100000, 1, 0, 80000001), ('test_odd', 1, 5000000001, 100000, 2, 1, 50001)`);
    await tiny.c.query(`INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, 'test', '1'), (?, 'test_odd', '1'), ('second-token', 'test', 'ops')`, [
      TOKEN,
      TOKEN,
    ]);
  });
  after(async () => {
    await tiny?.c.end();
    await node?.close();
    await dropDb(db);
    await cleanup(names);
  });

  const cli = (...args: string[]) => runTsx(['src/cli.ts', 'import', 'tinyid', '--mysql', tiny.url, ...args], { env: { ...process.env, ...testEnv(names) } });

  it('refuses a command line without the old database, and an unreadable one, with exit code 2', async () => {
    const usage = await runTsx(['src/cli.ts', 'import', 'tinyid', '--dry-run'], { env: { ...process.env, ...testEnv(names) } });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /import tinyid needs --mysql/);
    const missing = await runTsx(['src/cli.ts', 'import', 'tinyid', '--mysql', mysqlUrlFor(`${db}_none`)], { env: { ...process.env, ...testEnv(names) } });
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(missing.stderr, /import refused, nothing was written: cannot connect to Tinyid's database .*Unknown database/);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const r = await cli('--dry-run');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /dry run \(nothing written\)/);
    assert.match(r.stdout, /create\s+segment test: old max 8000000000123, first counter above 8000000000123; 2 token\(s\) added/);
  });

  it('creates the tags above max_id with delta/remainder kept and the tokens as client tokens; a re-run changes nothing', async () => {
    assert.equal((await tagStatus(node.url, 'test')).status, 404, 'the dry run wrote nothing');
    const r = await cli('--json');
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as Report;
    assert.deepEqual(
      report.tags.map((t) => [t.tag, t.action, t.tokens_added]),
      [
        ['test', 'create', 2],
        ['test_odd', 'create', 1],
      ],
    );
    const refused = await fetch(`${node.url}/v1/ids/test?count=1`);
    assert.equal(refused.status, 404, 'the tag takes only its Tinyid tokens (and looks missing to others)');
    const withToken = async (tag: string, token: string, n: number) => {
      const res = await fetch(`${node.url}/v1/ids/${tag}?count=${n}`, { headers: { 'x-idmint-token': token } });
      const body = (await res.json()) as { ids: string[] };
      assert.equal(res.status, 200, JSON.stringify(body));
      return body.ids.map(BigInt);
    };
    assertAbove([...(await withToken('test', TOKEN, 400)), ...(await withToken('test', 'second-token', 400))], 8000000000123n, 'test');
    const odd = await withToken('test_odd', TOKEN, 400);
    assertAbove(odd, 5000000001n, 'test_odd');
    for (const id of odd) assert.equal(id % 2n, 1n, `test_odd handed out ${id}`);
    const again = await cli('--json');
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual(
      (JSON.parse(again.stdout) as Report).tags.map((t) => [t.action, t.tokens_added]),
      [
        ['unchanged', 0],
        ['unchanged', 0],
      ],
    );
  });

  it('a re-run does not bring back a token revoked in idmint', async () => {
    const list = (await (await fetch(`${node.url}/v1/admin/tags/test/tokens`, { headers: adminHeaders })).json()) as { tokens: { id: number; name: string }[] };
    const second = list.tokens.find((t) => t.name === 'tinyid-3')!;
    const del = await fetch(`${node.url}/v1/admin/tags/test/tokens/${second.id}`, { method: 'DELETE', headers: { authorization: adminHeaders.authorization } });
    assert.equal(del.status, 204);
    const r = await cli('--json');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout) as Report).tags.map((t) => t.tokens_added),
      [0, 0],
    );
    const res = await fetch(`${node.url}/v1/ids/test?count=1`, { headers: { 'x-idmint-token': 'second-token' } });
    assert.equal(res.status, 404);
  });
});

describe('import from id_server', () => {
  const names = testNames();
  const db = `${names.db}_ids`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let ids: { url: string; c: mysql.Connection };
  let dir: string;
  const README_RULE = `function min_counter()
    return 0
end
function max_counter()
    return 9999
end
function reset_seconds()
    return 86400
end
function create_id(counter,now,salt)
    local seq = counter:generate_counter()
    local new_id = string.format("%01d%02d%02d%04d",now:year()%10 ,now:month(),now:day(),seq)
    return new_id
end
`;
  const TASK_RULE = README_RULE.replace('return 9999', 'return 999999')
    .replace('string.format("%01d%02d%02d%04d",now:year()%10 ,', 'string.format("O%s%02d%02d%02d%06d",salt,now:year()%100 ,')
    .replace('%04d",', '%06d",');

  before(async () => {
    const udpPort = await freePort();
    node = Object.assign(await startLocalNode(names, { UDP_PORT: String(udpPort) }), { udpPort });
    ids = await oldDb(db, [ID_SERVER_DDL]);
    dir = await mkdtemp(join(tmpdir(), 'idmint-import-'));
    await writeFile(join(dir, 'o2o.lua'), README_RULE);
    await writeFile(join(dir, 'task.lua'), TASK_RULE);
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({
        service_port: 1200,
        id_step: 2,
        id_offset: 1,
        rules: [
          { name: 'o2o', lua_file: 'o2o.lua', batch_save: 100 },
          { name: 'task', lua_file: 'task.lua', batch_save: 100 },
        ],
      }),
    );
    const now = Math.floor(Date.now() / 1000);
    // Two days before today began: under no zone id_server could have run in can that
    // period's IDs carry a date idmint still writes.
    const prev = Math.floor(periodStart(periodOf(Date.now(), ZONE, 86400), ZONE, 86400) / 1000) - 2 * 86400 - 60;
    // Two nodes (offsets 0 and 1) saved counters of app "shop" today; "blog" was busy two days ago.
    await ids.c.query(
      `INSERT INTO counter (node_offset, counter, update_time, rule_name, app_name) VALUES
      (0, 4200, ?, 'o2o', 'shop'), (1, 4501, ?, 'o2o', 'shop'), (0, 9000, ?, 'o2o', 'blog'), (1, 121, ?, 'o2o', 'blog'),
      (1, 70000, ?, 'task', 'shop')`,
      [now - 30, now - 5, prev, now - 10, now - 20],
    );
  });
  after(async () => {
    await ids?.c.end();
    await node?.close();
    await dropDb(db);
    await rm(dir, { recursive: true, force: true });
    await cleanup(names);
  });

  // The admin route takes the files in the body; the command line reads them from disk.
  const body = async (extra: Json = {}) => ({
    system: 'id_server',
    mysql: ids.url,
    time_zone: ZONE,
    ...extra,
    config_json: await readFile(join(dir, 'config.json'), 'utf8'),
    lua_files: { 'o2o.lua': await readFile(join(dir, 'o2o.lua'), 'utf8'), 'task.lua': await readFile(join(dir, 'task.lua'), 'utf8') },
  });

  it('refuses a Lua file of another shape, naming file and line, and writes nothing', async () => {
    await writeFile(join(dir, 'task.lua'), TASK_RULE.replace('    local seq', '    if salt == "" then salt = "x" end\n    local seq'));
    const r = await importVia(node.url, await body());
    assert.equal(r.status, 400);
    assert.match(String((r.body.error as Json).message), /: task\.lua:11: create_id: not understood: "if salt/);
    assert.equal((await tagStatus(node.url, 'o2o')).status, 404);
    await writeFile(join(dir, 'task.lua'), TASK_RULE);
  });

  it('a dry run writes nothing (admin route, and the command line reading the files from disk)', async () => {
    const r = await mustImport(node.url, await body({ dry_run: true }));
    assert.deepEqual(
      r.tags.map((t) => [t.tag, t.action]),
      [
        ['o2o', 'create'],
        ['task', 'create'],
      ],
    );
    const cli = await runTsx(
      ['src/cli.ts', 'import', 'id_server', '--config', join(dir, 'config.json'), '--mysql', ids.url, '--time-zone', ZONE, '--dry-run'],
      {
        env: { ...process.env, ...testEnv(names) },
      },
    );
    assert.equal(cli.status, 0, cli.stderr);
    // Above each saved counter + id_step x batch_save (2 x 100): blog 321, shop 4701.
    assert.match(
      cli.stdout,
      // Today's period, and tomorrow's where a zone ahead of this one could already date IDs so.
      new RegExp(
        `create\\s+rule\\s+o2o: old max shop:4501 blog:121, zone ${ZONE}; counters blog/\\d+ above sequence 161, shop/\\d+ above sequence 2351, blog/\\d+ \\(every case\\) above sequence 161, shop/\\d+ \\(every case\\) above sequence 2351`,
      ),
    );
    assert.equal((await tagStatus(node.url, 'o2o')).status, 404);
  });

  it('continues each (rule, app) counter of the current period above every saved one plus what a node hands out before its next save lands, over HTTP and UDP', async () => {
    const r = await mustImport(node.url, await body());
    assert.deepEqual(
      r.tags.map((t) => [t.tag, t.action]),
      [
        ['o2o', 'create'],
        ['task', 'create'],
      ],
    );
    const o2o = (await tagStatus(node.url, 'o2o')).body;
    assert.equal(o2o.template, '{year%10}{MM}{dd}{counter:4}');
    assert.equal(o2o.time_zone, ZONE);
    const get = async (rule: string, app: string, n: number, salt = '') => {
      const res = await fetch(`${node.url}/v1/ids/${rule}?count=${n}&app=${app}${salt ? `&salt=${salt}` : ''}`);
      const b = (await res.json()) as { ids: string[] };
      assert.equal(res.status, 200, JSON.stringify(b));
      return b.ids;
    };
    const udp = await UdpClient.open();
    try {
      const viaUdp: string[] = [];
      for (let i = 0; i < 30; i++) {
        const a = await udp.request(node.udpPort!, { action: 'get', rule_name: 'o2o', app_name: 'shop', seq: String(i) });
        assert.equal(a.code, 0, JSON.stringify(a));
        viaUdp.push(String(a.data));
      }
      const shop = [...(await get('o2o', 'shop', 200)), ...viaUdp];
      assert.equal(new Set(shop).size, shop.length);
      for (const id of shop) {
        assert.equal(id.length, 9);
        const counter = Number(id.slice(5));
        // A node saves 4501 and keeps handing out counters up to it and, until its next save
        // (4501 + id_step x batch_save) lands, beyond: a kill -9 leaves the row that far behind.
        assert.ok(counter > 4501 + 2 * 100, `o2o/shop counter ${counter} is not above 4701`);
        assert.equal(counter % 2, 1, `id_offset 1 of id_step 2 keeps counters odd (${id})`);
      }
      // The 9000 of two days ago does not hold today's counter back; today's 121 does.
      const blog = await get('o2o', 'blog', 20);
      assert.ok(
        blog.every((id) => Number(id.slice(5)) > 321 && Number(id.slice(5)) < 9000),
        blog.join(' '),
      );
      const task = await get('task', 'shop', 20, 'u1');
      assert.ok(
        task.every((id) => id.startsWith('Ou1') && Number(id.slice(-6)) > 70200),
        task.join(' '),
      );
    } finally {
      udp.close();
    }
    const again = await mustImport(node.url, await body());
    assert.deepEqual(
      again.tags.map((t) => t.action),
      ['unchanged', 'unchanged'],
    );
  });

  it('raises a rule whose counter lies below a node that saved later, abandoning the segment Redis holds', async () => {
    // idmint holds blog's segment from 122 on (its first IDs came above 121); a node saved 5001 later.
    await ids.c.query("UPDATE counter SET counter = 5001, update_time = ? WHERE node_offset = 1 AND rule_name = 'o2o' AND app_name = 'blog'", [
      Math.floor(Date.now() / 1000),
    ]);
    const r = await mustImport(node.url, await body());
    assert.deepEqual(
      r.tags.map((t) => [t.tag, t.action]),
      [
        ['o2o', 'raise'],
        ['task', 'unchanged'],
      ],
    );
    assert.deepEqual([...new Set(r.tags[0].floors.map((f) => `${f.shard} ${f.scope.split('/')[0]}`))], ['0 blog', '-1 blog']);
    const res = await fetch(`${node.url}/v1/ids/o2o?count=50&app=blog`);
    const b = (await res.json()) as { ids: string[] };
    assert.equal(res.status, 200, JSON.stringify(b));
    assert.ok(
      b.ids.every((id) => Number(id.slice(5)) > 5201),
      b.ids.join(' '),
    );
    const again = await mustImport(node.url, await body());
    assert.deepEqual(
      again.tags.map((t) => t.action),
      ['unchanged', 'unchanged'],
    );
  });
});

describe('import from id_server: what its counter table cannot tell', () => {
  const names = testNames();
  const db = `${names.db}_idsgap`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let ids: { url: string; c: mysql.Connection };
  let dir: string;
  // The limit was raised to 999999; the old definition stayed behind in a long comment.
  const ORD_RULE = `function min_counter()
    return 0
end
function max_counter()
    return 999999
end
--[[ before the limit was raised
function max_counter()
    return 9999
end
--]]
function reset_seconds()
    return 86400
end
function create_id(counter,now,salt)
    local seq = counter:generate_counter()
    local new_id = string.format("%01d%02d%02d%06d",now:year()%10 ,now:month(),now:day(),seq)
    return new_id
end
`;
  const CONFIG = JSON.stringify({ id_step: 2, id_offset: 0, rules: [{ name: 'ord', lua_file: 'ord.lua', batch_save: 100 }] });
  const now = Math.floor(Date.now() / 1000);
  // id_server's save, as its data thread writes it.
  const save = (app: string, counter: number, at: number) =>
    `replace into counter set rule_name='ord',app_name='${app}',node_offset=0,counter=${counter},update_time=${at}`;

  before(async () => {
    node = await startLocalNode(names);
    ids = await oldDb(db, [ID_SERVER_DDL]);
    dir = await mkdtemp(join(tmpdir(), 'idmint-import-gap-'));
    await writeFile(join(dir, 'ord.lua'), ORD_RULE);
    await writeFile(join(dir, 'config.json'), CONFIG);
    const tomorrow = now + 86400;
    // Two days before today began: a period whose IDs carry no date idmint still writes.
    const yesterday = Math.floor(periodStart(periodOf(Date.now(), ZONE, 86400), ZONE, 86400) / 1000) - 2 * 86400 - 60;
    for (const q of [
      save('shop', 20000, now),
      save('test', 5000, now - 30),
      save('Test', 100, now - 5),
      save('fast', 3000, tomorrow),
      save('old', 7000, yesterday),
      // A node whose config.json spelled the rule ORD: the row stands for "ord" too.
      save('renamed', 4000, now).replace("rule_name='ord'", "rule_name='ORD'"),
    ]) {
      await ids.c.query(q);
    }
  });
  after(async () => {
    await ids?.c.end();
    await node?.close();
    await dropDb(db);
    await rm(dir, { recursive: true, force: true });
    await cleanup(names);
  });

  const body = (extra: Json = {}): Json => ({
    system: 'id_server',
    mysql: ids.url,
    time_zone: ZONE,
    config_json: CONFIG,
    lua_files: { 'ord.lua': ORD_RULE },
    ...extra,
  });
  const counters = async (app: string, n = 20): Promise<number[]> => {
    const res = await fetch(`${node.url}/v1/ids/ord?count=${n}&app=${app}`);
    const b = (await res.json()) as { ids: string[] };
    assert.equal(res.status, 200, `${app}: ${JSON.stringify(b)}`);
    return b.ids.map((id) => Number(id.slice(5)));
  };
  const allAbove = (cs: number[], floor: number, what: string) =>
    assert.ok(
      cs.every((c) => c > floor),
      `${what}: ${cs.join(' ')} not all above ${floor}`,
    );

  it("the table's primary key compares app names without case: test's and Test's saves share one row", async () => {
    const [rows] = await ids.c.query<mysql.RowDataPacket[]>("SELECT app_name, counter FROM counter WHERE rule_name = 'ord' AND app_name = 'test'");
    assert.deepEqual(
      rows.map((r) => [r.app_name, Number(r.counter)]),
      [['Test', 100]],
    );
  });

  let notes = '';
  it('imports a rule whose old max_counter sits in a long comment with the live one (999999)', async () => {
    const r = await mustImport(node.url, body());
    assert.equal(r.tags[0].action, 'create');
    notes = r.tags[0].notes.join('\n');
    assert.equal((await tagStatus(node.url, 'ord')).body.max_counter, 999999);
    // shop saved 20000, above the commented-out 9999: it keeps getting IDs today.
    assert.equal((await counters('shop', 1)).length, 1);
  });

  it('continues above the saved counter + id_step x batch_save, what a node hands out before its next save lands', async () => {
    // shop saved 20000: a node may have handed out up to 20000 + 2 x 100 before a kill -9.
    allAbove(await counters('shop'), 20200, 'shop');
    assert.match(notes, /each saved counter counts as id_step 2 x batch_save \(200 for this rule\) higher/);
  });

  it('holds the row Test/100 for every case of the name, names never seen (TEST) too', async () => {
    for (const app of ['Test', 'test', 'TEST']) allAbove(await counters(app), 300, app);
    assert.match(notes, /compares app names without case/);
  });

  it("keeps a row a node saved after the import's time (its clock ran ahead), naming it, and counts the rows of periods passed under every zone", async () => {
    // The node saved fast's 3000 tomorrow: today's counter continues above it.
    allAbove(await counters('fast'), 3200, 'fast');
    assert.match(notes, /counter table row \(rule "ord", app "fast", node_offset 0, counter 3000, update_time \d+\) was saved after the import's time/);
    assert.match(notes, /1 saved counter\(s\) left out: under any zone id_server could have run in/);
  });

  it('holds a row saved under another case of the rule name for the rule (the table compares rule names without case)', async () => {
    const [rows] = await ids.c.query<mysql.RowDataPacket[]>("SELECT rule_name FROM counter WHERE rule_name = 'ord' AND app_name = 'renamed'");
    assert.deepEqual(
      rows.map((r) => r.rule_name),
      ['ORD'],
    );
    allAbove(await counters('renamed'), 4200, 'renamed');
    assert.match(notes, /1 saved counter\(s\) of rule "ORD" count for this rule too/);
  });

  it("raises every case of an app above the saves id_server's log holds, the failed ones too", async () => {
    const log = [
      `${new Date(now * 1000).toISOString().slice(0, 19).replace('T', ' ')},info,system started`,
      `2026-01-01 10:00:00,debug,[data_thread.cpp:94]exec sql:${save('test', 4800, now - 40)}`,
      `2026-01-01 10:00:01,warn,[data_thread.cpp:98]db failed thread:140213 errno:2006 sql:${save('test', 5000, now - 30)}`,
    ].join('\n');
    const r = await mustImport(node.url, body({ idserver_log: log }));
    assert.equal(r.tags[0].action, 'raise');
    for (const app of ['test', 'TEST', 'tEsT']) allAbove(await counters(app), 5200, app);
    const again = await mustImport(node.url, body({ idserver_log: log }));
    assert.equal(again.tags[0].action, 'unchanged');
  });

  it('takes a margin and floors from the operator (command line and admin route), for an app and for every app', async () => {
    await writeFile(join(dir, 'id_server.log'), `2026-01-01 10:00:01,warn,db failed thread:1 errno:2013 sql:${save('blog', 600, now)}\n`);
    const cli = await runTsx(
      [
        'src/cli.ts',
        'import',
        'id_server',
        '--config',
        join(dir, 'config.json'),
        '--mysql',
        ids.url,
        '--time-zone',
        ZONE,
        '--margin',
        '1000',
        '--floor',
        'ord/Case=7000',
        '--floor',
        'ord=900',
        '--idserver-log',
        join(dir, 'id_server.log'),
      ],
      { env: { ...process.env, ...testEnv(names) } },
    );
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /\*\/\d+ \(every app\) above sequence 451/);
    allAbove(await counters('shop'), 21200, 'shop with a margin of 1000');
    allAbove(await counters('blog'), 1800, 'blog, from the log, with the margin');
    allAbove(await counters('CASE'), 7000, 'CASE');
    allAbove(await counters('never_seen'), 900, 'an app never seen');
    const r = await mustImport(node.url, body({ floors: { ord: 30000 }, margin: 1000 }));
    assert.equal(r.tags[0].action, 'raise');
    allAbove(await counters('another'), 30000, 'every app, from the admin route');
    const bad = await importVia(node.url, body({ floors: { 'ord/bad app': 1 } }));
    assert.equal(bad.status, 400);
    const usage = await runTsx(['src/cli.ts', 'import', 'id_server', '--config', 'c.json', '--mysql', ids.url, '--floor', 'ord'], {
      env: { ...process.env, ...testEnv(names) },
    });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--floor needs <rule>=<counter>/);
  });
});

describe('import raising a tag two processes serve under load', () => {
  const names = testNames();
  const db = `${names.db}_leafload`;
  const nodes: ChildNode[] = [];
  let leaf: { url: string; c: mysql.Connection };

  before(async () => {
    nodes.push(...(await Promise.all([spawnNode(names, { NODE_ID: 'imp-a' }), spawnNode(names, { NODE_ID: 'imp-b' })])));
    leaf = await oldDb(db, [LEAF_DDL]);
  });
  after(async () => {
    await leaf?.c.end();
    for (const n of nodes) await n.stop().catch(() => undefined);
    await dropDb(db);
    await cleanup(names);
  });

  it('every ID asked for after the import returned lies above the old maximum, none twice', { timeout: 60000 }, async () => {
    await createTag(nodes[0].url, { tag: 'hot', mode: 'segment', step: 2000 });
    await leaf.c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('hot', 100000, 1000)");
    const answers: { start: number; ids: bigint[] }[] = [];
    let stop = false;
    let importedAt = Infinity;
    const worker = async (url: string) => {
      while (!stop) {
        const start = performance.now();
        const res = await fetch(`${url}/v1/ids/hot?count=5`);
        const b = (await res.json()) as { ids?: string[] };
        assert.equal(res.status, 200, JSON.stringify(b));
        answers.push({ start, ids: b.ids!.map(BigInt) });
      }
    };
    const load = nodes.flatMap((n) => [worker(n.url), worker(n.url), worker(n.url)]);
    await waitFor('answers before the import', () => answers.length > 20, 30_000, 10);
    const r = await mustImport(nodes[1].url, { system: 'leaf', mysql: leaf.url });
    importedAt = performance.now();
    assert.equal(r.tags[0].action, 'raise');
    // Past the segments the processes held at the import: more IDs after it than a step (2000) per process.
    await waitFor(
      'a step per process after the import',
      () => answers.filter((a) => a.start > importedAt).flatMap((a) => a.ids).length > nodes.length * 2000,
      60_000,
      10,
    );
    stop = true;
    await Promise.all(load);
    const all = answers.flatMap((a) => a.ids);
    assert.equal(new Set(all).size, all.length, 'an ID twice');
    const later = answers.filter((a) => a.start > importedAt);
    assert.ok(later.length > 20 && answers.length - later.length > 20, `${answers.length - later.length} answers before, ${later.length} after`);
    assertAbove(
      later.flatMap((a) => a.ids),
      100000n,
      'after the import',
    );
  });
});
