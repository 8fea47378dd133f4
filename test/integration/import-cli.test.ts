// suite: cluster
// The import command line as an operator runs it, against real MySQL and Redis: its report
// piped into `head -1` (the reader goes away: no EPIPE crash, the import written, exit 0); an
// import killed between retiring a tag's Redis state and writing MySQL (the tag's requests
// name the unfinished import and the command that finishes it; running it again does);
// id_server logs read line by line whatever their size, with progress; the zone required for
// dated rules, validated, and printed; --trust-log passed on; --help.
import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { once } from 'node:events';
import mysql from 'mysql2/promise';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { dropDb, ID_SERVER_DDL, ID_SERVER_README_RULE, LEAF_DDL, oldDb } from '../../tools/old-systems.js';
import { adminHeaders, createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { runToEnd, runTsx, startTsx } from '../../tools/child.js';

type Report = {
  tags: {
    tag: string;
    action: string;
    time_zone?: string;
    floors: { shard: number; scope: string; counter: string }[];
  }[];
  notes: string[];
};

describe('import command line', () => {
  const names = testNames();
  const leafDb = `${names.db}_leaf`;
  const idsDb = `${names.db}_ids`;
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let leaf: { url: string; c: mysql.Connection };
  let ids: { url: string; c: mysql.Connection };
  let dir: string;
  const env = (extra: Record<string, string> = {}) => ({ ...process.env, ...testEnv(names, extra) });

  before(async () => {
    // A request follows a retired tag for 1 s before it answers (REFILL_WAIT_MS).
    node = await startLocalNode(names, { REFILL_WAIT_MS: '1000' });
    leaf = await oldDb(leafDb, [LEAF_DDL]);
    ids = await oldDb(idsDb, [ID_SERVER_DDL]);
    dir = await mkdtemp(join(tmpdir(), 'idmint-import-cli-'));
    await writeFile(join(dir, 'o2o.lua'), ID_SERVER_README_RULE);
    await writeFile(
      join(dir, 'config.json'),
      JSON.stringify({ id_step: 1, id_offset: 0, rules: [{ name: 'o2o', lua_file: 'o2o.lua', batch_save: 10 }] }),
    );
  });
  after(async () => {
    await leaf?.c.end();
    await ids?.c.end();
    await node?.close();
    await dropDb(leafDb);
    await dropDb(idsDb);
    await rm(dir, { recursive: true, force: true });
    await cleanup(names);
  });

  it('--help lists every option and exits 0', async () => {
    const r = await runTsx(['src/cli.ts', 'import', '--help'], { env: env() });
    assert.equal(r.status, 0, r.stderr);
    for (const o of [
      '--time-zone',
      '--trust-log',
      '--idserver-log',
      '--twepoch',
      '--layout',
      '--clock-skew',
      'leaf-snowflake',
    ])
      assert.ok(r.stdout.includes(o), o);
  });

  it('a report piped into head -1 ends with exit 0, no EPIPE stack, and the import written', async () => {
    // A report far larger than a pipe's buffer: most of it is written after head has gone.
    const rows = Array.from({ length: 2500 }, (_, i) => [`pipe${i}`, String(1000 + i), 100, 'piped']);
    await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ?', [rows]);
    const cmd = `set -o pipefail; "${process.execPath}" --import tsx src/cli.ts import leaf --mysql '${leaf.url}' --json | head -1`;
    const r = await runToEnd('bash', ['-c', cmd], { env: env(), timeoutMs: 120_000 });
    assert.equal(r.stdout, '{\n');
    assert.doesNotMatch(r.stderr, /EPIPE|Error|\n\s+at /, r.stderr);
    assert.equal(r.status, 0, r.stderr);
    assert.ok((await fetchIds(node.url, 'pipe2499', 1))[0] > 3499n);
    await leaf.c.query("DELETE FROM leaf_alloc WHERE biz_tag LIKE 'pipe%'");
  });

  it('an import killed after retiring a tag leaves it answering which import to finish and how; running it again finishes it', async () => {
    await createTag(node.url, { tag: 'kil' });
    assert.ok((await fetchIds(node.url, 'kil', 5))[4] < 1000n);
    await leaf.c.query("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('kil', 5000000, 1000, '')");
    const args = ['src/cli.ts', 'import', 'leaf', '--mysql', leaf.url];
    const paused = startTsx(args, { name: 'import', env: env({ TEST_MODE: '1', IMPORT_PAUSE_AFTER_RETIRE: '1' }) });
    try {
      await paused.waitForLine((l) => l.includes('import paused after retiring'), 60_000);
    } finally {
      await paused.kill();
    }
    const res = await fetch(`${node.url}/api/segment/get/kil`);
    const body = await res.text();
    assert.equal(res.status, 503, body);
    assert.match(
      body,
      /tag \\"kil\\" is held by an import from leaf \(started [^)]+\) that retired the tag's Redis state and has not written/,
    );
    assert.match(body, /finish it by running the same import again: idmint import leaf --mysql mysql:\/\//);
    assert.doesNotMatch(body, /moving to another Redis server/);
    const again = await runTsx(args, { env: env() });
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /raise\s+segment kil: old max 5000000/);
    const after = await fetch(`${node.url}/api/segment/get/kil`);
    assert.equal(after.status, 200, await after.clone().text());
    assert.ok(BigInt(await after.text()) > 5_000_000n);
  });

  const idServer = (...extra: string[]) =>
    runTsx(
      [
        'src/cli.ts',
        'import',
        'id_server',
        '--config',
        join(dir, 'config.json'),
        '--mysql',
        ids.url,
        '--json',
        '--dry-run',
        ...extra,
      ],
      {
        env: env(),
        timeoutMs: 180_000,
      },
    );

  it('requires the zone of a dated rule (no default), validates it, and prints the zone used', async () => {
    const none = await idServer();
    assert.equal(none.status, 2, none.stdout);
    assert.match(none.stderr, /rule "o2o" .*--time-zone/);
    const bad = await idServer('--time-zone', 'Mars/Olympus');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /"Mars\/Olympus" is not a known IANA time zone/);
    const ok = await idServer('--time-zone', 'asia/shanghai');
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as Report).tags[0].time_zone, 'Asia/Shanghai');
    const text = await runTsx(
      [
        'src/cli.ts',
        'import',
        'id_server',
        '--config',
        join(dir, 'config.json'),
        '--mysql',
        ids.url,
        '--time-zone',
        'Asia/Shanghai',
        '--dry-run',
      ],
      {
        env: env(),
      },
    );
    assert.match(text.stdout, /create\s+rule\s+o2o: old max [^\n]*, zone Asia\/Shanghai/);
  });

  it("reads a log of over a million lines line by line, reporting progress, and counts its last line's save", async () => {
    const log = join(dir, 'id_server.log');
    const out = createWriteStream(log);
    const filler = '2026-11-27 10:00:00,info,recv request from 10.0.0.7:5123\n'.repeat(10_000);
    for (let i = 0; i < 110; i++) if (!out.write(filler)) await once(out, 'drain');
    const now = Math.floor(Date.now() / 1000);
    out.end(
      `2026-11-27 10:00:01,warn,db failed thread:1402 errno:2006 sql:replace into counter set rule_name='o2o',app_name='deep',node_offset=0,counter=4321,update_time=${now}\n`,
    );
    await once(out, 'close');
    const r = await idServer('--time-zone', 'UTC', '--idserver-log', log);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /id_server\.log: 1000000 lines read/);
    const floors = (JSON.parse(r.stdout) as Report).tags[0].floors.filter((f) => f.scope.startsWith('deep/'));
    assert.ok(floors.length > 0, r.stdout);
    for (const f of floors) assert.ok(Number(f.counter) > 4321, JSON.stringify(f));
    const missing = await idServer(
      '--time-zone',
      'UTC',
      '--idserver-log',
      join(dir, 'nope.log'),
      '--idserver-log',
      dir,
    );
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /cannot read [^\n]*nope\.log: ENOENT.*cannot read [^\n]*: EISDIR/);
  });

  it('--trust-log applies a floor a log line raises to max_counter; without it the line refuses the import, named', async () => {
    const log = join(dir, 'forged.log');
    const now = Math.floor(Date.now() / 1000);
    await writeFile(
      log,
      `2026-11-27 10:00:01,debug,exec sql:replace into counter set rule_name='o2o',app_name='mall',node_offset=0,counter=9990,update_time=${now}\n`,
    );
    const highest = (r: { stdout: string }) =>
      Math.max(
        0,
        ...(JSON.parse(r.stdout) as Report).tags[0].floors
          .filter((f) => f.scope.startsWith('mall/'))
          .map((f) => Number(f.counter)),
      );
    const plain = await idServer('--time-zone', 'UTC', '--idserver-log', log);
    assert.equal(plain.status, 2, plain.stdout);
    assert.match(
      plain.stderr,
      /forged\.log:1: a save of app "mall" at counter 9990 reaches max_counter 9999 .*--trust-log/,
    );
    const trusted = await idServer('--time-zone', 'UTC', '--idserver-log', log, '--trust-log');
    assert.equal(trusted.status, 0, trusted.stderr);
    assert.ok(highest(trusted) >= 9990, trusted.stdout);
  });

  it('the admin route takes trust_log and requires time_zone for a dated rule', async () => {
    const body = {
      system: 'id_server',
      mysql: ids.url,
      dry_run: true,
      config_json: JSON.stringify({
        id_step: 1,
        id_offset: 0,
        rules: [{ name: 'o2o', lua_file: 'o2o.lua', batch_save: 10 }],
      }),
      lua_files: {
        'o2o.lua':
          'function min_counter()\n  return 0\nend\nfunction max_counter()\n  return 9999\nend\nfunction reset_seconds()\n  return 86400\nend\nfunction create_id(counter,now,salt)\n  local seq = counter:generate_counter()\n  return string.format("%01d%02d%02d%04d",now:year()%10,now:month(),now:day(),seq)\nend\n',
      },
      idserver_log: `2026-11-27 10:00:01,debug,exec sql:replace into counter set rule_name='o2o',app_name='mall',node_offset=0,counter=9990,update_time=${Math.floor(Date.now() / 1000)}`,
    };
    const post = async (extra: Record<string, unknown>) => {
      const res = await fetch(`${node.url}/v1/admin/import`, {
        method: 'POST',
        headers: adminHeaders,
        body: JSON.stringify({ ...body, ...extra }),
      });
      return { status: res.status, body: (await res.json()) as Report & { error?: { message: string } } };
    };
    const none = await post({});
    assert.equal(none.status, 400);
    assert.match(none.body.error!.message, /rule "o2o" .*time_zone/);
    const untrusted = await post({ time_zone: 'UTC' });
    assert.equal(untrusted.status, 400);
    assert.match(
      untrusted.body.error!.message,
      /idserver_log:1: a save of app "mall" at counter 9990 reaches max_counter 9999 .*trust_log/,
    );
    const trusted = await post({ time_zone: 'UTC', trust_log: true });
    assert.equal(trusted.status, 200, JSON.stringify(trusted.body));
    assert.equal(trusted.body.tags[0].time_zone, 'UTC');
    assert.ok(trusted.body.tags[0].floors.some((f) => f.scope.startsWith('mall/') && Number(f.counter) >= 9990));
  });
});
