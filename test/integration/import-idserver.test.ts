// suite: cluster
// Importing from id_server against real MySQL and Redis: its counter table is created in a
// scratch database from its published DDL, its config.json and Lua rules written to disk; a Lua
// file of another shape refuses the whole import naming file and line, a dry run writes nothing
// (admin route and command line), each (rule, app) counter of the current period continues
// above every saved one plus what a node hands out before its next save, over HTTP and UDP, and
// a rule below a node that saved later is raised, its buffered segment abandoned.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { periodOf, periodStart } from '../../src/core/period.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { dropDb, ID_SERVER_DDL, ID_SERVER_README_RULE, oldDb } from '../../tools/old-systems.js';
import { startLocalNode } from '../../tools/node.js';
import { freePort, runTsx } from '../../tools/child.js';
import { UdpClient } from '../../tools/udp-client.js';
import { importVia, type Json, mustImport, tagStatus, ZONE } from '../helpers/import-calls.js';

describe('import from id_server', () => {
  const names = testNames();
  const db = `${names.db}_ids`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let ids: { url: string; c: mysql.Connection };
  let dir: string;
  const TASK_RULE = ID_SERVER_README_RULE.replace('return 9999', 'return 999999')
    .replace(
      'string.format("%01d%02d%02d%04d",now:year()%10 ,',
      'string.format("O%s%02d%02d%02d%06d",salt,now:year()%100 ,',
    )
    .replace('%04d",', '%06d",');

  before(async () => {
    const udpPort = await freePort();
    node = Object.assign(await startLocalNode(names, { UDP_PORT: String(udpPort) }), { udpPort });
    ids = await oldDb(db, [ID_SERVER_DDL]);
    dir = await mkdtemp(join(tmpdir(), 'idmint-import-'));
    await writeFile(join(dir, 'o2o.lua'), ID_SERVER_README_RULE);
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
    lua_files: {
      'o2o.lua': await readFile(join(dir, 'o2o.lua'), 'utf8'),
      'task.lua': await readFile(join(dir, 'task.lua'), 'utf8'),
    },
  });

  it('refuses a Lua file of another shape, naming file and line, and writes nothing', async () => {
    await writeFile(
      join(dir, 'task.lua'),
      TASK_RULE.replace('    local seq', '    if salt == "" then salt = "x" end\n    local seq'),
    );
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
        '--dry-run',
      ],
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
        const a = await udp.request(node.udpPort!, {
          action: 'get',
          rule_name: 'o2o',
          app_name: 'shop',
          seq: String(i),
        });
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
    await ids.c.query(
      "UPDATE counter SET counter = 5001, update_time = ? WHERE node_offset = 1 AND rule_name = 'o2o' AND app_name = 'blog'",
      [Math.floor(Date.now() / 1000)],
    );
    const r = await mustImport(node.url, await body());
    assert.deepEqual(
      r.tags.map((t) => [t.tag, t.action]),
      [
        ['o2o', 'raise'],
        ['task', 'unchanged'],
      ],
    );
    assert.deepEqual(
      [...new Set(r.tags[0].floors.map((f) => `${f.shard} ${f.scope.split('/')[0]}`))],
      ['0 blog', '-1 blog'],
    );
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
