// suite: cluster
// MySQL comes back behind (restored from a backup, failed over to a replica that missed the
// last allocations): its high-water marks lie below what Redis has already installed. Under
// load, a segment tag's and a rule counter's mark is set back by a million IDs with step
// 1000; the next refill raises it above Redis's value in its own transaction, so the tag
// serves again after at most one or two refused allocations instead of a thousand. Checked:
// no duplicate, no order violation, the warning (tag, shard, MySQL and Redis values), the
// metric, the tag's admin view. And a worker-id space MySQL forgot while Redis still holds it
// is recorded again by the next lease acquire, so a later Redis loss is still guarded.
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { poolOptions } from '../../src/store/mysql/pool.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, fetchIds, spawnNode, type ChildNode } from '../../tools/node.js';
import { eachLine } from '../../tools/child.js';
import {
  Load,
  answered,
  assertClientOrder,
  assertNoDuplicates,
  assertOnlyCleanUnavailable,
  assertRealTimeOrder,
  counter,
  now,
  waitFor,
  type Rec,
} from '../helpers/fault-load.js';

const STEP = 1000;
const START = 3_000_000;
const SETBACK = 1_000_000;

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [k: string]: unknown;
}

/** idmint_counter_regressions_total of one (tag, kind) at a node, 0 when absent. */
async function regressionsMetric(url: string, tag: string, kind: string): Promise<number> {
  // With the admin token: the open page leaves out series whose tag label names no public tag
  // (a worker-id space's "ws<bits>" among them).
  const text = await (await fetch(`${url}/metrics`, { headers: adminHeaders })).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('idmint_counter_regressions_total{') && l.includes(`tag="${tag}"`) && l.includes(`kind="${kind}"`),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The longest time (ms) from `since` during which no request got its IDs. */
function longestGap(recs: readonly Rec[], since: number, until: number): number {
  const dones = answered(recs)
    .map((r) => r.done)
    .filter((d) => d >= since)
    .sort((a, b) => a - b);
  let gap = 0;
  let prev = since;
  for (const d of [...dones, until]) {
    gap = Math.max(gap, d - prev);
    prev = d;
  }
  return gap;
}

describe('MySQL comes back behind Redis', () => {
  const names = testNames();
  let node: ChildNode;
  let db: mysql.Pool;
  const lines: LogLine[] = [];

  const maxIdOf = async (tag: string, scope: string): Promise<number> =>
    Number(
      (
        await db.query<RowDataPacket[]>(
          'SELECT max_id FROM idmint_counters WHERE tag = ? AND shard = 0 AND scope = ?',
          [tag, scope],
        )
      )[0][0]?.max_id ?? 0,
    );

  /** Sets the counter back by SETBACK, as a restore would; returns the value it had. */
  async function setBack(tag: string, scope: string): Promise<number> {
    const c = await db.getConnection();
    try {
      await c.beginTransaction();
      const [rows] = await c.query<RowDataPacket[]>(
        'SELECT max_id FROM idmint_counters WHERE tag = ? AND shard = 0 AND scope = ? FOR UPDATE',
        [tag, scope],
      );
      const m = Number(rows[0].max_id);
      await c.query('UPDATE idmint_counters SET max_id = ? WHERE tag = ? AND shard = 0 AND scope = ?', [
        m - SETBACK,
        tag,
        scope,
      ]);
      await c.commit();
      return m;
    } finally {
      c.release();
    }
  }

  before(async () => {
    node = await spawnNode(names, { NODE_ID: 'regress-node', REFILL_WAIT_MS: '3000' });
    eachLine(node.proc, [], (line) => {
      if (line.startsWith('{')) lines.push(JSON.parse(line) as LogLine);
    });
    db = mysql.createPool({ ...poolOptions(names.mysqlUrl), connectionLimit: 2 });
    const fixed = { step: STEP, min_step: STEP, max_step: STEP };
    await createTag(node.url, { tag: 'seg', mode: 'segment', ...fixed });
    await createTag(node.url, {
      tag: 'rul',
      mode: 'rule',
      template: '{counter}',
      min_counter: 1,
      max_counter: 999_999_999,
      reset_seconds: 0,
      ...fixed,
    });
    await createTag(node.url, { tag: 'sf', mode: 'snowflake' });
    // Start the counters high enough to be set back by a million.
    for (const [tag, scope] of [
      ['seg', ''],
      ['rul', 'a/0'],
    ]) {
      await db.query('INSERT INTO idmint_counters (tag, shard, scope, max_id, step) VALUES (?, 0, ?, ?, ?)', [
        tag,
        scope,
        START,
        STEP,
      ]);
    }
  });

  after(async () => {
    await node?.stop();
    await db?.end();
    await cleanup(names).catch(() => undefined);
  });

  async function underLoad(t: TestContext, tag: string, scope: string, kind: string, query: string): Promise<void> {
    const load = new Load(
      Array.from({ length: 4 }, (_, i) => ({
        name: `${tag}-c${i}`,
        tag,
        url: () => node.url,
        count: counter(11 + i, 20),
        query,
      })),
    );
    try {
      // Serving from the raised start, several segments in.
      await waitFor('five segments served', async () => (await maxIdOf(tag, scope)) >= START + 5 * STEP, 30000);
      const atSetback = now();
      const linesAtSetback = lines.length;
      const before = await setBack(tag, scope);
      const from = before - SETBACK;
      await waitFor(
        'five segments above the set-back mark',
        async () => (await maxIdOf(tag, scope)) >= before + 5 * STEP,
        60000,
      );
      const end = now();
      const recs = await load.stop();

      // The promises hold throughout.
      const ids = assertNoDuplicates(recs, tag);
      assertClientOrder(recs, tag);
      assert.ok(assertRealTimeOrder(recs, tag) > 100, 'the real-time order check had answers to compare');
      assertOnlyCleanUnavailable(recs, { what: tag });
      assert.ok(ids > 5 * STEP, `${ids} IDs served`);
      const servedBefore = answered(recs)
        .filter((r) => r.done < atSetback)
        .flatMap((r) => r.ids);
      assert.ok(servedBefore.length > 0);

      // At most two allocations refused by the install fence after the set-back: one raised
      // allocation serves at once (a refill already in flight may still lose).
      const refused = lines.slice(linesAtSetback).filter((l) => l.tag === tag && l.installed === 'stale');
      // Requests barely wait: a thousand refused allocations would take seconds.
      const gap = longestGap(recs, atSetback, end);
      t.diagnostic(
        `${tag}: ${refused.length} refused after the set-back; longest wait ${gap.toFixed(0)} ms; five segments above it after ${(end - atSetback).toFixed(0)} ms`,
      );
      assert.ok(
        refused.length <= 2,
        `${refused.length} allocations refused after the set-back (${SETBACK / STEP} without the raise)`,
      );
      assert.ok(gap < 2500, `no request was answered for ${gap.toFixed(0)} ms after the set-back`);

      // The warning names the tag, shard, MySQL's and Redis's values.
      const warns = lines
        .slice(linesAtSetback)
        .filter((l) => l.tag === tag && l.level === 40 && /MySQL high-water mark was behind/.test(l.msg));
      assert.ok(warns.length >= 1 && warns.length <= 2, `${warns.length} regression warnings`);
      assert.equal(warns[0].shard, 0);
      assert.equal(warns[0].mysql, from);
      const redisValue = Number(warns[0].redis);
      assert.ok(
        redisValue > from + SETBACK - 2 * STEP && redisValue <= before,
        `Redis value ${redisValue} is what Redis had installed (MySQL had ${before})`,
      );
      if (scope !== '') assert.equal(warns[0].scope, scope);
      // Counted, and shown on the tag's admin view.
      assert.equal(await regressionsMetric(node.url, tag, kind), warns.length);
      const res = await fetch(`${node.url}/v1/admin/tags/${tag}`, { headers: adminHeaders });
      const view = (await res.json()) as { state: { counter_regression?: Record<string, unknown> } };
      const last = warns[warns.length - 1];
      assert.deepEqual(
        { ...view.state.counter_regression, at: undefined },
        {
          at: undefined,
          shard: 0,
          ...(scope ? { scope } : {}),
          from: String(last.mysql),
          to: String(last.redis),
          node: 'regress-node',
          count: warns.length,
        },
      );
      assert.ok(Date.parse(String(view.state.counter_regression?.at)) > Date.now() - 120_000);
      // MySQL's mark is above everything Redis installed again.
      assert.ok((await maxIdOf(tag, scope)) > before);
    } finally {
      await load.stop();
    }
  }

  it('a segment tag set back by a million serves again after at most two refused allocations', async (t) => {
    await underLoad(t, 'seg', '', 'segment', '');
  });

  it('a rule counter of the current period set back by a million never reissues a counter', async (t) => {
    await underLoad(t, 'rul', 'a/0', 'rule', '&app=a');
  });

  it('a worker-id space MySQL lost while Redis holds it is recorded again', async () => {
    assert.equal((await fetchIds(node.url, 'sf', 1)).length, 1);
    const spaces = async () =>
      (await db.query<RowDataPacket[]>('SELECT worker_bits FROM idmint_worker_spaces'))[0].map((r) =>
        Number(r.worker_bits),
      );
    const [bits] = await spaces();
    assert.ok(bits > 0, 'the first lease recorded its space');
    // MySQL restored from a backup taken before the space was first used.
    await db.query('DELETE FROM idmint_worker_spaces');
    // A process that starts now finds the space in Redis (no guard to wait out).
    const second = await spawnNode(names, { NODE_ID: 'regress-node-2' });
    try {
      assert.equal((await fetchIds(second.url, 'sf', 1)).length, 1);
      await waitFor('the space recorded again', async () => (await spaces()).includes(bits), 5000);
      await waitFor(
        'the warning',
        () =>
          second.output.some((l) => l.includes('"level":40') && l.includes('MySQL had no record of a worker-id space')),
        5000,
      );
      assert.equal(await regressionsMetric(second.url, `ws${bits}`, 'worker_space'), 1);
    } finally {
      await second.stop();
    }
  });
});
