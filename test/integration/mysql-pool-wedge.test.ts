// suite: single — MySQL reached through a freezing proxy; nothing of it depends on the Redis topology
// A MySQL pool whose every slot is held for good: transactions whose ROLLBACK meets a peer that
// went silent (the SQL freeze proxy passes the ROLLBACK on, then nothing more either way) keep
// their connections forever, and once the pool's eight are held it hands out none again. The
// node replaces the pool within the bound, counts it, is ready again and refills again, and
// the transactions that waited on the old pool get their answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TagSpec } from '../../src/core/tag-spec.js';
import { poolOptions } from '../../src/store/mysql/pool.js';
import { cleanup, mysqlUrlFor, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { SqlFreezeProxy } from '../../tools/proxies/sql-freeze-proxy.js';
import { waitFor } from '../helpers/fault-load.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const STEP = 50;
/**
 * From the last slot taken to a pool that serves again: three failed probes, a fresh connection, a replacement (busy
 * machine: generous).
 */
const HEAL_BOUND_MS = 30_000;

const restarts = async (url: string): Promise<number> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^idmint_connection_restarts_total\{server="mysql",role="pool"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : -1;
};

describe('a MySQL pool whose every connection is held for good', () => {
  const names = testNames();
  let proxy: SqlFreezeProxy;
  let node: LocalNode;

  before(async () => {
    proxy = await SqlFreezeProxy.start(3306);
    node = await startLocalNode(names, {
      MYSQL_URL: mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/x`),
      MYSQL_QUERY_TIMEOUT_MS: '1000',
      LOG_LEVEL: 'error',
    });
    await createTag(node.url, { tag: 'w', step: STEP, min_step: STEP, max_step: STEP });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    await cleanup(names);
  });

  it('is replaced, counted and serves refills again within the bound', async () => {
    const restartsBefore = await restarts(node.url);
    const before = await fetchIds(node.url, 'w', 10);
    const limit = poolOptions(node.rt.config.mysqlUrl).connectionLimit ?? 10;
    // An update of a tag that does not exist rolls back; each ROLLBACK freezes its connection.
    const stuck: Promise<string>[] = [];
    for (let i = 0; i < limit; i++) {
      const frozen = proxy.arm({ name: `rollback ${i}`, pattern: /ROLLBACK/ });
      stuck.push(
        node.rt.tags.update({ tag: `missing-${i}` } as TagSpec).then(
          () => 'resolved',
          (err: { code?: string }) => err.code ?? 'error',
        ),
      );
      await frozen;
    }
    const wedgedAt = performance.now();
    // Not ready while wedged (its MySQL check waits in vain), ready again once replaced.
    await waitFor('the node ready', async () => (await fetch(`${node.url}/readyz`)).status === 200, HEAL_BOUND_MS);
    // Refills run again: more IDs than a segment holds, none seen before.
    const afterIds = await waitFor('refills served', () => fetchIds(node.url, 'w', 3 * STEP), HEAL_BOUND_MS);
    const healedMs = performance.now() - wedgedAt;
    assert.ok(healedMs < HEAL_BOUND_MS, `healed in ${Math.round(healedMs)} ms`);
    const all = [...before, ...afterIds];
    assert.equal(new Set(all.map(String)).size, all.length, 'no duplicate');
    // The transactions held on the old pool are answered (their connections were destroyed).
    assert.deepEqual(await Promise.all(stuck), Array(limit).fill('TAG_NOT_FOUND'));
    assert.equal(restartsBefore, 0, 'the series starts at 0');
    assert.equal(await restarts(node.url), 1, 'one episode');
  });
});
