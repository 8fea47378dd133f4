// suite: cluster
// Importing from Tinyid through the command line against real MySQL and Redis: Tinyid's tables
// are created in a scratch database from its published DDL and filled with rows in its shape; a
// command line without the old database or with an unreadable one exits with 2, a dry run
// writes nothing, the tags are created above max_id with delta/remainder kept and the tokens as
// client tokens, and a re-run changes nothing, nor brings back a token revoked in idmint.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { cleanup, mysqlUrlFor, testEnv, testNames } from '../../tools/env.js';
import { dropDb, oldDb, TINYID_DDL } from '../../tools/old-systems.js';
import { adminHeaders, startLocalNode } from '../../tools/node.js';
import { runTsx } from '../../tools/child.js';
import { assertAbove, type Report, tagStatus } from '../helpers/import-calls.js';

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
    await tiny.c.query(
      `INSERT INTO tiny_id_token (token, biz_type, remark) VALUES (?, 'test', '1'), (?, 'test_odd', '1'), ('second-token', 'test', 'ops')`,
      [TOKEN, TOKEN],
    );
  });
  after(async () => {
    await tiny?.c.end();
    await node?.close();
    await dropDb(db);
    await cleanup(names);
  });

  const cli = (...args: string[]) =>
    runTsx(['src/cli.ts', 'import', 'tinyid', '--mysql', tiny.url, ...args], {
      env: { ...process.env, ...testEnv(names) },
    });

  it('refuses a command line without the old database, and an unreadable one, with exit code 2', async () => {
    const usage = await runTsx(['src/cli.ts', 'import', 'tinyid', '--dry-run'], {
      env: { ...process.env, ...testEnv(names) },
    });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /import tinyid needs --mysql/);
    const missing = await runTsx(['src/cli.ts', 'import', 'tinyid', '--mysql', mysqlUrlFor(`${db}_none`)], {
      env: { ...process.env, ...testEnv(names) },
    });
    assert.equal(missing.status, 2, missing.stderr);
    assert.match(
      missing.stderr,
      /import refused, nothing was written: cannot connect to Tinyid's database .*Unknown database/,
    );
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const r = await cli('--dry-run');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /dry run \(nothing written\)/);
    assert.match(
      r.stdout,
      /create\s+segment test: old max 8000000000123, first counter above 8000000000123; 2 token\(s\) added/,
    );
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
    assertAbove(
      [...(await withToken('test', TOKEN, 400)), ...(await withToken('test', 'second-token', 400))],
      8000000000123n,
      'test',
    );
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
    const list = (await (await fetch(`${node.url}/v1/admin/tags/test/tokens`, { headers: adminHeaders })).json()) as {
      tokens: { id: number; name: string }[];
    };
    const second = list.tokens.find((t) => t.name === 'tinyid-3')!;
    const del = await fetch(`${node.url}/v1/admin/tags/test/tokens/${second.id}`, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
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
