// suite: single — runs the soak command, which starts its own idmint on the default servers
// The soak run (npm run soak, scripts/soak) for a quarter of a minute: it prints a progress line
// per sample, its Markdown summary and the verdict line, writes the samples as JSON and the
// chart as SVG, exits 0 when the verdict passes, 1 when it fails, 3 when the run is too short to
// judge the memory (a quarter of a minute usually is), finds no duplicate and no order
// violation, and leaves neither its database nor its Redis keys behind.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { runTsx } from '../../tools/child.js';
import { mysqlUrlFor, testRedis } from '../../tools/env.js';
import { poolOptions } from '../../src/store/mysql/pool.js';

const dir = mkdtempSync(join(tmpdir(), 'idmint-soak-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('soak', () => {
  it('runs for --minutes 0.25, prints the verdict, writes the JSON and the SVG, and cleans up', async () => {
    const out = join(dir, 'soak.json');
    const r = await runTsx(['scripts/soak/run.ts', '--minutes', '0.25', '--out', out], { timeoutMs: 60000 });
    const lines = r.stdout.split('\n');
    const why = `exit ${r.status}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`;

    const progress = lines.filter((l) =>
      /^soak \d+:\d\d {2}RSS [\d.]+ MB \([\d.]+ with V8's pages whole\) {2}heap /.test(l),
    );
    assert.ok(progress.length >= 10, why);
    const verdictLine = lines.find((l) => l.startsWith('soak verdict: '));
    assert.ok(verdictLine, why);
    assert.match(
      verdictLine,
      /^soak verdict: (PASS|FAIL|too short to judge): RSS with V8's pages whole plateau [\d.]+ MB .*, RSS plateau [\d.]+ MB \(slope [-+][\d.]+ MB\/min, shown, not judged\), 0 duplicates in [\d,]+ IDs, 0 order violations in [\d,]+ ordered answers, /,
    );
    const outcome = /^soak verdict: (PASS|FAIL|too short to judge)/.exec(verdictLine)![1];
    assert.equal(r.status, { PASS: 0, FAIL: 1, 'too short to judge': 3 }[outcome], why);
    assert.match(r.stdout, /\| series \| after warm-up \| plateau \| min \| max \| slope per min \|/);
    assert.match(r.stdout, /\| heap committed by V8, all spaces \(MB\) \| [\d.]+ \|/);
    assert.match(r.stdout, /\| external memory, Buffers and ArrayBuffers \(MB\) \| [\d.]+ \|/);
    assert.match(r.stdout, /\| RSS with V8's heap pages counted whole \(MB\) \| [\d.]+ \|/);
    assert.match(r.stdout, /\| V8's heap pages, resident \(MB\) \| [\d.]+ \|/);
    assert.match(r.stdout, /\| V8's heap pages, mapped \(MB\) \| [\d.]+ \|/);
    assert.match(r.stdout, /\| soak-rule-node \| [\d,]+ \| [\d,]+ \| 0 \|/);

    const json = JSON.parse(readFileSync(out, 'utf8')) as {
      samples: {
        t: number;
        rssMb: number;
        heapPeakMb: number;
        heapCommittedMb: number;
        externalMb: number;
        v8ResidentMb: number;
        v8MappedMb: number;
        wholeMb: number;
        handles: number;
        latency: Record<string, { n: number }>;
      }[];
      tags: { tag: string; ids: string; duplicates: string }[];
      verdict: { ok: boolean; outcome: string; checks: { orderChecked: number; orderViolations: number } };
    };
    assert.equal(json.samples.length, progress.length);
    for (const s of json.samples) {
      assert.ok(s.rssMb > 10 && s.heapPeakMb > 1 && s.handles > 0, JSON.stringify(s));
      assert.ok(s.heapCommittedMb > 1 && s.externalMb > 0, JSON.stringify(s));
      // The server's heap pages are found, resident no more than mapped, and counted whole.
      assert.ok(s.v8MappedMb > 1 && s.v8ResidentMb > 0 && s.v8ResidentMb <= s.v8MappedMb, JSON.stringify(s));
      assert.ok(s.wholeMb >= s.rssMb * 0.9, JSON.stringify(s));
    }
    // Every transport answered.
    for (const kind of ['http single', 'http batch', 'ws take', 'udp get', 'grpc next', 'grpc take'])
      assert.ok(
        json.samples.some((s) => s.latency[kind].n > 0),
        kind,
      );
    assert.deepEqual(
      json.tags.map((t) => t.tag),
      ['soak-seg-global', 'soak-seg-node', 'soak-snowflake', 'soak-rule-global', 'soak-rule-node'],
    );
    for (const t of json.tags) {
      assert.ok(BigInt(t.ids) > 0n, t.tag);
      assert.equal(t.duplicates, '0', t.tag);
    }
    assert.ok(json.verdict.checks.orderChecked > 0);
    assert.equal(json.verdict.checks.orderViolations, 0);
    assert.equal(json.verdict.ok, r.status === 0);
    assert.equal(json.verdict.outcome, { 0: 'pass', 1: 'fail', 3: 'tooShort' }[r.status ?? -1]);

    const svg = readFileSync(out.replace(/\.json$/, '.svg'), 'utf8');
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.ok((svg.match(/<path d="M/g) ?? []).length >= 2, 'RSS and heap lines');
    assert.match(svg, /<\/svg>\n$/);

    // Its database and keys are gone.
    const started = /database (idmint_t_[0-9a-f]+), Redis prefix (t[0-9a-f]+)/.exec(r.stdout);
    assert.ok(started, why);
    const conn = await mysql.createConnection({ ...poolOptions(mysqlUrlFor(started[1])), database: undefined });
    try {
      const [rows] = await conn.query('SHOW DATABASES LIKE ?', [started[1]]);
      assert.equal((rows as unknown[]).length, 0, `${started[1]} still exists`);
    } finally {
      await conn.end();
    }
    const redis = testRedis();
    try {
      const keys = [...(await redis.keys(`${started[2]}:*`)), ...(await redis.keys(`{${started[2]}}:*`))];
      assert.deepEqual(keys, []);
    } finally {
      redis.disconnect();
    }
  });
});
