// suite: single — the campaign runs its own private Redis and MariaDB
// The chaos campaign (scripts/chaos) in small: its checker catches what it must on synthetic
// records (a duplicate, global and per-process order violations, failures without a code),
// and a ~20 s campaign with 2 idmint processes and a few faults finds none in idmint. The
// campaign's seed (its faults and clients) is new each run and printed; CHAOS_SEED=<n> replays one.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import {
  Checker,
  problems,
  summaryLine,
  type InstanceSpan,
  type KillSpan,
  type Report,
} from '../../scripts/chaos/checker.js';
import { toRuns, type Rec } from '../../scripts/chaos/recorder.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SEED = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 1e6);
const MODES = { global: ['g'], perProcess: ['n', 's'], rule: ['r'] };
const INSTANCES: InstanceSpan[] = [
  { slot: 0, n: 0, spawnAt: 0, deadAt: 5000 },
  { slot: 0, n: 1, spawnAt: 6000 },
  { slot: 1, n: 0, spawnAt: 0 },
];
const KILL: KillSpan = { kind: 'kill', slot: 0, start: 5000, end: 7000, upAt: 7000 };

let seq = 0;
function ok(tag: string, slot: number, t0: number, t1: number, ids: number[]): Rec {
  return { c: `c${seq++}`, p: 'hb', tag, slot, t0, t1, n: ids.length, r: toRuns(ids.map(BigInt)) };
}

function check(recs: Rec[], faults: KillSpan[] = [KILL]): Report {
  const c = new Checker(MODES, INSTANCES, faults);
  for (const r of recs) c.add(r);
  return c.finish();
}

describe('chaos checker', () => {
  it('passes clean records, including concurrent answers out of order', () => {
    const r = check([
      ok('g', 0, 0, 100, [1, 2, 3]),
      ok('g', 1, 150, 300, [10, 11]),
      // Sent before the answer above arrived: it may hold lower IDs.
      ok('g', 0, 120, 320, [5, 6]),
      ok('n', 0, 0, 100, [100]),
      ok('n', 1, 50, 90, [1]), // another process
      ok('n', 0, 6500, 6600, [50]), // a new instance of slot 0 starts its own order
      ok('s', 1, 0, 10, [7]),
      { c: 'u', p: 'udp', tag: 'r', app: 'a1', slot: 0, t0: 0, t1: 5, n: 1, s: ['X-1'] },
      { c: 'u', p: 'udp', tag: 'r', app: 'a2', slot: 0, t0: 0, t1: 5, n: 1, s: ['X-1'] }, // another app's counter
      { c: 'e', p: 'hs', tag: 'g', slot: 1, t0: 0, t1: 5, n: 1, err: 'UNAVAILABLE' },
      { c: 'e', p: 'udp', tag: 'r', slot: 1, t0: 0, t1: 5, n: 1, err: 'UNAVAILABLE' },
      { c: 'e', p: 'hs', tag: 'g', slot: 0, t0: 5100, t1: 5200, n: 1, tr: 'ECONNREFUSED' },
    ]);
    assert.equal(problems(r), 0, JSON.stringify(r));
    assert.equal(r.ids, 13);
    assert.deepEqual(r.failures, { UNAVAILABLE: 2, KILLED: 1 });
    assert.equal(r.orderChecked, 2, 'the two later answers of tag g were compared');
    assert.match(
      summaryLine(r),
      /^chaos: 13 IDs checked in 9 answers, 0 duplicates, 0 order violations .*failed requests 3 \(UNAVAILABLE 2, KILLED 1\), faults injected 1 \(kill 1\)$/,
    );
  });

  it('catches a duplicate, numeric and rule', () => {
    const r = check([
      ok('g', 0, 0, 10, [1, 2, 3]),
      ok('s', 1, 0, 10, [900]),
      ok('s', 0, 0, 10, [900]),
      ok('g', 1, 0, 10, [3, 4]),
    ]);
    assert.equal(r.duplicates, 2, JSON.stringify(r.examples));
    assert.equal(r.orderViolations, 0);
    const rule = check([
      { c: 'a', p: 'udp', tag: 'r', app: 'a1', slot: 0, t0: 0, t1: 5, n: 1, s: ['X-1'] },
      { c: 'b', p: 'hs', tag: 'r', app: 'a1', slot: 1, t0: 0, t1: 5, n: 1, s: ['X-1'] },
    ]);
    assert.equal(rule.duplicates, 1);
    assert.ok(problems(rule) > 0);
  });

  it('catches a global order violation across processes', () => {
    const r = check([ok('g', 0, 0, 100, [50]), ok('g', 1, 101, 200, [40])]);
    assert.equal(r.orderViolations, 1, JSON.stringify(r.examples));
    assert.equal(r.duplicates, 0);
    assert.match(r.examples[0], /order \(g\)/);
  });

  it('catches a per-process order violation, but not across processes or instances', () => {
    const r = check([ok('n', 1, 0, 100, [50]), ok('n', 1, 101, 200, [40])]);
    assert.equal(r.orderViolations, 1);
    assert.equal(check([ok('n', 1, 0, 100, [50]), ok('n', 0, 101, 200, [40])]).orderViolations, 0, 'other process');
    assert.equal(check([ok('n', 0, 0, 100, [50]), ok('n', 0, 6500, 6600, [40])]).orderViolations, 0, 'other instance');
    assert.equal(check([ok('s', 0, 0, 100, [5, 4])]).orderViolations, 1, 'an answer that is not ascending');
  });

  it('counts failures without a code', () => {
    const r = check([
      { c: 'x', p: 'hs', tag: 'g', slot: 1, t0: 0, t1: 5, n: 1, tr: 'ECONNRESET' }, // no kill of slot 1
      { c: 'x', p: 'hs', tag: 'g', slot: 1, t0: 0, t1: 5, n: 1, err: 'SOMETHING' },
      { c: 'x', p: 'hs', tag: 'g', slot: 1, t0: 0, t1: 5, n: 1, bad: 'HTTP 502 without an error code' },
    ]);
    assert.equal(r.uncoded, 3);
    assert.ok(problems(r) === 3);
  });
});

describe('chaos campaign, 20 s', () => {
  it('finds no duplicate, no order violation, no failure without a code', { timeout: 300_000 }, async (t) => {
    assert.ok(
      Number.isSafeInteger(SEED) && SEED >= 0,
      `CHAOS_SEED must be a whole number, got ${process.env.CHAOS_SEED}`,
    );
    const seed = SEED;
    t.diagnostic(`seed ${seed} (CHAOS_SEED=${seed} replays it)`);
    const out = mkdtempSync(join(tmpdir(), 'idmint-chaos-'));
    try {
      const args = [
        '--import',
        'tsx',
        'scripts/chaos/run.ts',
        '--duration',
        '20',
        '--servers',
        '2',
        '--clients',
        '2',
        '--seed',
        String(seed),
        '--out',
        out,
      ];
      const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const killer = setTimeout(() => child.kill('SIGINT'), 280_000);
      const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      clearTimeout(killer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      const what = `seed ${seed} (CHAOS_SEED=${seed} replays it): ${line}\n${stderr.split('\n').slice(-30).join('\n')}`;
      const m =
        /^chaos: (\d+) IDs checked in (\d+) answers, (\d+) duplicates, (\d+) order violations \((\d+) ordered pairs checked\), failed requests \d+.*, faults injected (\d+)/.exec(
          line,
        );
      assert.ok(m, `no summary line: ${what}`);
      const [ids, answers, dups, violations, pairs, faults] = m.slice(1).map(Number);
      assert.equal(dups, 0, what);
      assert.equal(violations, 0, what);
      assert.equal(code, 0, `exit code ${code}: ${what}`);
      assert.ok(ids > 10_000 && answers > 100, `too little load: ${what}`);
      assert.ok(pairs > 100, `the order checks had too little to compare: ${what}`);
      assert.ok(faults >= 3, `too few faults: ${what}`);
      const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as Report;
      assert.equal(report.uncoded, 0, what);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
