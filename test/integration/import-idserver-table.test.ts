// suite: cluster
// Importing from id_server against real MySQL and Redis, for what its counter table cannot
// tell: saves that lag what a node handed out (id_step x batch_save, a margin, failed saves read
// from its log), rows shared by app names (or rule names) that differ only in case, rows of a
// clock that ran ahead, an old max_counter in a long comment, and the operator's margin and
// floors.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { periodOf, periodStart } from '../../src/core/period.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { dropDb, ID_SERVER_DDL, oldDb } from '../../tools/old-systems.js';
import { startLocalNode } from '../../tools/node.js';
import { runTsx } from '../../tools/child.js';
import { importVia, type Json, mustImport, tagStatus, ZONE } from '../helpers/import-calls.js';

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
  const CONFIG = JSON.stringify({
    id_step: 2,
    id_offset: 0,
    rules: [{ name: 'ord', lua_file: 'ord.lua', batch_save: 100 }],
  });
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
    const [rows] = await ids.c.query<mysql.RowDataPacket[]>(
      "SELECT app_name, counter FROM counter WHERE rule_name = 'ord' AND app_name = 'test'",
    );
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
    assert.match(
      notes,
      /counter table row \(rule "ord", app "fast", node_offset 0, counter 3000, update_time \d+\) was saved after the import's time/,
    );
    assert.match(notes, /1 saved counter\(s\) left out: under any zone id_server could have run in/);
  });

  it('holds a row saved under another case of the rule name for the rule (the table compares rule names without case)', async () => {
    const [rows] = await ids.c.query<mysql.RowDataPacket[]>(
      "SELECT rule_name FROM counter WHERE rule_name = 'ord' AND app_name = 'renamed'",
    );
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
    await writeFile(
      join(dir, 'id_server.log'),
      `2026-01-01 10:00:01,warn,db failed thread:1 errno:2013 sql:${save('blog', 600, now)}\n`,
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
    const usage = await runTsx(
      ['src/cli.ts', 'import', 'id_server', '--config', 'c.json', '--mysql', ids.url, '--floor', 'ord'],
      {
        env: { ...process.env, ...testEnv(names) },
      },
    );
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--floor needs <rule>=<counter>/);
  });
});
