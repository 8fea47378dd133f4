// suite: cluster
// Importing from Leaf against real MySQL and Redis: Leaf's table is created in a scratch
// database from its published DDL and filled with rows in its shape; after the import every ID
// idmint hands out lies above Leaf's max_id. A dry run writes nothing, a re-run changes
// nothing, a tag idmint serves below the old counter is raised (its buffered segment abandoned,
// an order: node tag's block in process memory too), the command line prints a large report
// whole, and a mode clash refuses the whole import.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { dropDb, LEAF_DDL, oldDb } from '../../tools/old-systems.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { runTsx } from '../../tools/child.js';
import { assertAbove, importVia, mustImport, type Report, tagStatus } from '../helpers/import-calls.js';

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
    for (const r of ROWS)
      await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', r);
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
    for (const [tag] of ROWS)
      assert.equal((await tagStatus(node.url, tag)).status, 404, `${tag} was created by a dry run`);
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
    assert.deepEqual(
      await Promise.all(ROWS.map(async ([tag]) => (await tagStatus(node.url, tag)).body.incarnation)),
      epochs,
    );
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
    assertAbove(
      [...(await fetchIds(node.url, 'legacy', 20)), ...(await fetchIds(node.url, 'legacy', 1))],
      500n,
      'legacy after the raise',
    );
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
    const rows = Array.from({ length: 1500 }, (_, i) => [
      `bulk_${i}`,
      String(1_000_000 + i),
      1000,
      `bulk tag ${i} `.repeat(8),
    ]);
    await leaf.c.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ?', [rows]);
    try {
      const r = await runTsx(['src/cli.ts', 'import', 'leaf', '--mysql', leaf.url, '--dry-run', '--json'], {
        env: { ...process.env, ...testEnv(names) },
      });
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
