// suite: cluster
// The TypeScript client (idmint/client) against a real node with Redis and MySQL: HTTP IDs and
// batches, takes over the websocket in every format, the stream iterator across forced
// disconnects without a duplicate, and the built package imported from another project.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { IdmintClient, IdmintClientError } from '../../src/client/index.js';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { rejectsWith } from '../helpers/answers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

describe('TypeScript client', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let client: IdmintClient;

  before(async () => {
    node = await startLocalNode(names);
    client = new IdmintClient({ url: node.url });
    const big = { step: 2_000_000, min_step: 1000, max_step: 20_000_000 };
    await createTag(node.url, { tag: 'order', ...big });
    await createTag(node.url, { tag: 'feed', ...big });
    await createTag(node.url, { tag: 'user', layout: 'sharded', shards: 4, app_id: 2 });
    await createTag(node.url, { tag: 'evt', mode: 'snowflake' });
    await createTag(node.url, {
      tag: 'day',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}-{counter:6}',
      min_counter: 0,
      max_counter: 999999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
  });
  after(async () => {
    client.close();
    await node.close();
    await cleanup(names);
  });

  it('gets IDs and batches over HTTP', async () => {
    const a = await client.id('order');
    assert.equal(typeof a, 'bigint');
    const batch = await client.ids('order', 25_000);
    assert.equal(batch.length, 25_000);
    assertIncreasing([a, ...batch], 'ids');
    const u = await client.id('user', { key: 'alice' });
    assert.equal(u & 0xffn, 2n, 'app id in the low bits');
    const r = await client.id('day', { app: 'shop' });
    assert.match(r, /^\d{8}-\d{6}$/);
    const rs = await client.ids('day', 3, { app: 'shop' });
    assert.equal(new Set([r, ...rs]).size, 4);
    const e = await rejectsWith(client.id('nope'), IdmintClientError, 'TAG_NOT_FOUND');
    assert.equal(e.status, 404);
    assert.equal(e.transient, false);
    await rejectsWith(client.id('user'), IdmintClientError, 'INVALID_ARGUMENT');
  });

  it('takes 1,000,000 IDs over the websocket in every format, exact and unique', async () => {
    const [bin, json, ranges] = await Promise.all([
      client.take('order', 1_000_000, { format: 'binary', block: 50_000 }),
      client.take('order', 1_000_000, { format: 'json', block: 50_000 }),
      client.take('order', 1_000_000, { format: 'ranges', block: 100_000 }),
    ]);
    for (const [l, f] of [
      [bin, 'binary'],
      [json, 'json'],
      [ranges, 'ranges'],
    ] as const) {
      assert.equal(l.length, 1_000_000, f);
      assert.equal(typeof l[0], 'bigint');
      assertIncreasing(l, f);
    }
    assert.equal(new Set([...bin, ...json, ...ranges]).size, 3_000_000);
  });

  it('runs many takes at once on its socket, and takes sharded, snowflake and rule IDs', async () => {
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => client.take('order', 10_000 + i)));
    const all = many.flat();
    assert.equal(all.length, 20 * 10_000 + 190);
    assert.equal(new Set(all).size, all.length);
    const sharded = await client.take('user', 5000, { key: 'bob' });
    assertIncreasing(sharded, 'sharded');
    const sf = await client.take('evt', 50_000, { format: 'ranges' });
    const sfJson = await client.take('evt', 50_000, { format: 'json' });
    assert.ok(sfJson[0] > 10n ** 17n, 'snowflake IDs have 18+ digits');
    assertIncreasing([...sf, ...sfJson], 'snowflake');
    const rule = await client.take('day', 2000, { app: 'shop' });
    assert.equal(typeof rule[0], 'string');
    assert.equal(new Set(rule).size, 2000);
    await rejectsWith(client.take('nope', 10), IdmintClientError, 'TAG_NOT_FOUND');
    await rejectsWith(client.take('user', 10, { format: 'ranges', key: 'k' }), IdmintClientError, 'INVALID_ARGUMENT');
    // The socket survives refused takes.
    assert.equal((await client.take('order', 5)).length, 5);
  });

  it('streams across forced disconnects without yielding an ID twice', async () => {
    const stream = client.stream('feed', { prefetch: 5000, reconnectMinMs: 10 });
    const got: bigint[] = [];
    const http: bigint[] = [];
    for await (const id of stream) {
      got.push(id);
      if (got.length % 40_000 === 0) {
        // Cut every stream socket from the server side, mid-take.
        for (const s of node.app!.websocketServer.clients) s.terminate();
        http.push(...(await fetchIds(node.url, 'feed', 100)));
      }
      if (got.length === 250_000) break;
    }
    assert.ok(stream.reconnects >= 5, `reconnected ${stream.reconnects} times`);
    assertIncreasing(got, 'stream');
    assert.equal(new Set([...got, ...http]).size, got.length + http.length);
    await sleep(50);
    assert.equal(node.app!.websocketServer.clients.size <= 1, true, 'break closed the stream socket');
  });

  it('streams rule IDs as strings and ends with the error of a tag it cannot serve', async () => {
    const seen = new Set<string>();
    for await (const id of client.stream('day', { app: 'shop', prefetch: 500 })) {
      seen.add(id);
      if (seen.size === 1200) break;
    }
    assert.equal(seen.size, 1200);
    const s = client.stream('nope');
    await rejectsWith(s.next(), IdmintClientError, 'TAG_NOT_FOUND');
  });

  it('is importable from another project once built (exports and types)', async () => {
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')],
      { cwd: ROOT },
    );
    const dir = mkdtempSync(join(tmpdir(), 'idmint-consumer-'));
    try {
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(ROOT, join(dir, 'node_modules', 'idmint'), 'dir');
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
      writeFileSync(
        join(dir, 'main.ts'),
        [
          "import { IdmintClient, IdmintClientError } from 'idmint/client';",
          'const client = new IdmintClient({ url: process.env.IDMINT_URL! });',
          "const ids: bigint[] = await client.take('order', 3);",
          "const one: bigint = await client.id('order');",
          "const rule: string[] = await client.take('day', 2, { app: 'shop' });",
          'const e: typeof IdmintClientError = IdmintClientError;',
          'void e;',
          'console.log(JSON.stringify({ ids: ids.map(String), one: String(one), rule }));',
          'client.close();',
        ].join('\n'),
      );
      const tsc = [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        '--typeRoots',
        join(ROOT, 'node_modules/@types'),
        'main.ts',
      ];
      await run(process.execPath, tsc, { cwd: dir });
      writeFileSync(
        join(dir, 'main.mjs'),
        [
          "import { IdmintClient } from 'idmint/client';",
          'const client = new IdmintClient({ url: process.env.IDMINT_URL });',
          "const ids = await client.take('order', 3);",
          "const one = await client.id('order');",
          "const rule = await client.take('day', 2, { app: 'shop' });",
          'console.log(JSON.stringify({ ids: ids.map(String), one: String(one), rule }));',
          'client.close();',
        ].join('\n'),
      );
      const { stdout } = await run(process.execPath, ['main.mjs'], {
        cwd: dir,
        env: { ...process.env, IDMINT_URL: node.url },
      });
      const out = JSON.parse(stdout) as { ids: string[]; one: string; rule: string[] };
      assert.equal(out.ids.length, 3);
      assert.ok(BigInt(out.one) > BigInt(out.ids[2]));
      assert.equal(out.rule.length, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
