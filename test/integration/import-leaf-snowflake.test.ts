// suite: cluster
// Importing Leaf's snowflake mode, against real MySQL and Redis: the tag the import creates
// (admin route and command line) answers Leaf's own route `/api/snowflake/get/<tag>` with IDs
// above every ID Leaf's SnowflakeIDGenImpl could have issued at the same moment, whatever
// its worker id and sequence, with a Leaf clock up to the allowance ahead; a dry run writes
// nothing, a re-run changes nothing, and a name idmint holds below Leaf is refused whole.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_CLOCK_SKEW_MS, LEAF_TWEPOCH_MS } from '../../src/core/import-plan-snowflake.js';
import { cleanup, testEnv, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { runTsx } from '../../tools/child.js';

type Json = Record<string, unknown>;

/** Leaf's ID: (ms - twepoch) << (worker + seq bits) | worker << seq bits | seq (10 and 12 bits by default). */
function leafId(twepoch: number, ms: number, worker: number, seq: number, workerBits = 10, seqBits = 12): bigint {
  return (BigInt(ms - twepoch) << BigInt(workerBits + seqBits)) | (BigInt(worker) << BigInt(seqBits)) | BigInt(seq);
}

async function importVia(url: string, body: Json): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${url}/v1/admin/import`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

async function leafRoute(url: string, tag: string): Promise<bigint> {
  const res = await fetch(`${url}/api/snowflake/get/${tag}`);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return BigInt(text);
}

describe('import from Leaf snowflake', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  const cli = (...args: string[]) =>
    runTsx(['src/cli.ts', 'import', 'leaf-snowflake', ...args], { env: { ...process.env, ...testEnv(names) } });

  before(async () => {
    node = await startLocalNode(names);
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('a dry run answers the plan and writes nothing', async () => {
    const r = await importVia(node.url, { system: 'leaf-snowflake', tag: 'lsf', dry_run: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const [t] = r.body.tags as Json[];
    assert.equal(t.action, 'create');
    assert.equal(t.mode, 'snowflake');
    assert.equal((t.snowflake as Json).epoch_ms, LEAF_TWEPOCH_MS - DEFAULT_CLOCK_SKEW_MS - 1);
    const fork = await importVia(node.url, {
      system: 'leaf-snowflake',
      tag: 'lsf',
      twepoch: 1_600_000_000_000,
      layout: '41/8/14',
      clock_skew_ms: 1000,
      dry_run: true,
    });
    assert.equal(fork.status, 200, JSON.stringify(fork.body));
    const l = (fork.body.tags as Json[])[0].snowflake as Json;
    assert.deepEqual([l.epoch_ms, l.time_bits, l.worker_bits, l.seq_bits], [1_600_000_000_000 - 1001, 41, 8, 14]);
    const res = await fetch(`${node.url}/v1/admin/tags/lsf`, { headers: adminHeaders });
    assert.equal(res.status, 404);
  });

  it("creates a tag whose IDs on Leaf's route lie above Leaf's of the same moment a day ahead; a re-run changes nothing", async () => {
    const r = await importVia(node.url, { system: 'leaf-snowflake', tag: 'lsf' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body.tags as Json[])[0].action, 'create');
    const before = Date.now();
    const ids: bigint[] = [];
    for (let i = 0; i < 50; i++) ids.push(await leafRoute(node.url, 'lsf'));
    // Leaf's largest ID with its clock a day ahead of the moment the requests started.
    const leafMax = leafId(LEAF_TWEPOCH_MS, before + DEFAULT_CLOCK_SKEW_MS, 1023, 4095);
    for (const id of ids) assert.ok(id > leafMax, `${id} is not above Leaf's ${leafMax}`);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'not increasing');
    const again = await importVia(node.url, { system: 'leaf-snowflake', tag: 'lsf' });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal((again.body.tags as Json[])[0].action, 'unchanged');
    assert.ok((await leafRoute(node.url, 'lsf')) > ids[ids.length - 1]);
  });

  it("the command line takes a fork's twepoch, layout and clock-skew allowance; --dry-run writes nothing", async () => {
    const twepoch = Date.UTC(2021, 4, 1);
    const dry = await cli(
      '--tag',
      'fork',
      '--twepoch',
      String(twepoch),
      '--layout',
      '41/8/14',
      '--clock-skew',
      '2h',
      '--dry-run',
    );
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(
      dry.stdout,
      /dry run \(nothing written\): import from leaf-snowflake, 1 tag\(s\)\n {2}create {4}snowflake fork: old max \d+; epoch 2021-04-30T21:59:59\.999Z, layout 41\/8\/14/,
    );
    assert.equal((await fetch(`${node.url}/v1/admin/tags/fork`, { headers: adminHeaders })).status, 404);
    const r = await cli(
      '--tag',
      'fork',
      '--twepoch',
      String(twepoch),
      '--layout',
      '41/8/14',
      '--clock-skew',
      '2h',
      '--json',
    );
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { tags: { action: string; snowflake: Json }[] };
    assert.equal(report.tags[0].action, 'create');
    assert.deepEqual([report.tags[0].snowflake.worker_bits, report.tags[0].snowflake.seq_bits], [8, 14]);
    const before = Date.now();
    const id = await leafRoute(node.url, 'fork');
    assert.ok(
      id > leafId(twepoch, before + 2 * 3_600_000, 255, 16383, 8, 14),
      `${id} is not above the fork's Leaf IDs`,
    );
  });

  it('refuses a name idmint serves below Leaf (its default epoch), over HTTP and the command line, and writes nothing', async () => {
    await createTag(node.url, { tag: 'old', mode: 'snowflake' });
    const r = await importVia(node.url, { system: 'leaf-snowflake', tag: 'old' });
    assert.equal(r.status, 400);
    assert.match(
      String((r.body.error as Json).message),
      /import refused, nothing was written: tag "old" exists in idmint as a snowflake tag \(epoch 2020-01-01/,
    );
    const c = await cli('--tag', 'old');
    assert.equal(c.status, 2);
    assert.match(c.stderr, /import under another --tag/);
    const bad = await cli('--tag', 'x', '--layout', '41-10-12');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--layout must be Leaf's <time bits>\/<worker bits>\/<sequence bits>/);
    const wrong = await importVia(node.url, { system: 'leaf-snowflake', tag: 'x', mysql: 'mysql://a@b/c' });
    assert.equal(wrong.status, 400);
    assert.match(String((wrong.body.error as Json).message), /mysql: not a field of an import from leaf-snowflake/);
    assert.equal((await fetch(`${node.url}/v1/admin/tags/x`, { headers: adminHeaders })).status, 404);
  });
});
