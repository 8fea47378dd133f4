// suite: cluster
// An import raising a tag that two processes serve under load, against real MySQL and Redis:
// every ID asked for after the import returned lies above the old maximum, none twice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { cleanup, testNames } from '../../tools/env.js';
import { dropDb, LEAF_DDL, oldDb } from '../../tools/old-systems.js';
import { createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';
import { assertAbove, mustImport } from '../helpers/import-calls.js';

describe('import raising a tag two processes serve under load', () => {
  const names = testNames();
  const db = `${names.db}_leafload`;
  const nodes: ChildNode[] = [];
  let leaf: { url: string; c: mysql.Connection };

  before(async () => {
    nodes.push(
      ...(await Promise.all([spawnNode(names, { NODE_ID: 'imp-a' }), spawnNode(names, { NODE_ID: 'imp-b' })])),
    );
    leaf = await oldDb(db, [LEAF_DDL]);
  });
  after(async () => {
    await leaf?.c.end();
    for (const n of nodes) await n.stop().catch(() => undefined);
    await dropDb(db);
    await cleanup(names);
  });

  it('every ID asked for after the import returned lies above the old maximum, none twice', {
    timeout: 60000,
  }, async () => {
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
    assert.ok(
      later.length > 20 && answers.length - later.length > 20,
      `${answers.length - later.length} answers before, ${later.length} after`,
    );
    assertAbove(
      later.flatMap((a) => a.ids),
      100000n,
      'after the import',
    );
  });
});
