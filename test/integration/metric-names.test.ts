// suite: single — metric names on /metrics, no Redis key layout involved
// Every metric the alert rules (deploy/prometheus/idmint-rules.yml) and the Grafana dashboard
// (deploy/grafana/idmint.json) name is one a real idmint node exports: the PromQL is parsed for
// metric names (functions, label matchers and lists, ranges, keywords and strings stripped;
// histograms' _bucket/_sum/_count are looked up as exposed), then a node with a tag of each
// mode serves IDs (MySQL set back behind Redis once, as a restore would) and /metrics must
// hold every name.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { parse } from 'yaml';
import { poolOptions } from '../../src/store/mysql/pool.js';
import { cleanup, testNames, testRedis } from '../../tools/env.js';
import { IdsClient } from '../../tools/grpc-client.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';

const ROOT = new URL('../../', import.meta.url);

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'and',
  'or',
  'unless',
  'inf',
  'nan',
]);

/** Metric names in a PromQL expression. */
export function metricNames(expr: string): string[] {
  let e = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // strings (label values, label_replace arguments)
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  e = e
    .replace(/\$\w+/g, '') // Grafana variables
    .replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:ms|[smhdwy])?\b/gi, ' '); // numbers and durations (offset 15m)
  const names = new Set<string>();
  for (const m of e.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?/g)) {
    if (m[1]) continue; // a function
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

function ruleExprs(): string[] {
  const doc = parse(readFileSync(new URL('deploy/prometheus/idmint-rules.yml', ROOT), 'utf8')) as {
    groups: { rules: { expr: string }[] }[];
  };
  return doc.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

function dashboardExprs(): string[] {
  const d = JSON.parse(readFileSync(new URL('deploy/grafana/idmint.json', ROOT), 'utf8')) as {
    panels: { targets?: { expr: string }[] }[];
    templating: { list: { type: string; definition?: string }[] };
  };
  const exprs = d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  // label_values(metric, label): the metric only.
  for (const v of d.templating.list) {
    const m = /^label_values\(\s*([^,]+),/.exec(v.definition ?? '');
    if (v.type === 'query') exprs.push(m ? m[1] : (v.definition ?? ''));
  }
  return exprs;
}

describe('metric names in the PromQL parser', () => {
  it('strips functions, labels, ranges, keywords and strings', () => {
    assert.deepEqual(
      metricNames(
        'histogram_quantile(0.99, sum by (route, le) (rate(idmint_x_bucket{instance=~"$instance"}[$__rate_interval])))',
      ),
      ['idmint_x_bucket'],
    );
    assert.deepEqual(metricNames('max by (worker_bits) (a_b) / on (worker_bits) max by (worker_bits) (c) > 0.8'), [
      'a_b',
      'c',
    ]);
    assert.deepEqual(metricNames('min by (tag) (x) < 7 * 86400 unless on (tag) y unless on (tag) z offset 15m'), [
      'x',
      'y',
      'z',
    ]);
    assert.deepEqual(metricNames('predict_linear(min by (tag) (r)[6h:5m], 14 * 86400) < 0'), ['r']);
    assert.deepEqual(metricNames('sum(increase(e{event="lost"}[10m])) > 0'), ['e']);
  });
});

describe('every metric the alert rules and the dashboard name is exported', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    node = await startLocalNode(names, { GRPC_PORT: String(await freePort()) });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('finds each name on /metrics of a node serving every mode', { timeout: 60000 }, async () => {
    const url = node.url;
    await createTag(url, { tag: 'seg', step: 100, min_step: 100, max_step: 100, max_id_limit: '100000' });
    await createTag(url, {
      tag: 'rl',
      mode: 'rule',
      template: 'R{yyyy}{MM}{dd}{HH}-{counter:6}',
      min_counter: 0,
      max_counter: 999_999,
      reset_seconds: 3600,
      step: 100,
      min_step: 100,
      max_step: 100,
    });
    await createTag(url, { tag: 'sf', mode: 'snowflake', preset: 'jssafe' });
    await fetchIds(url, 'seg', 250);
    // MySQL set back below what Redis installed (a restore): the next refills raise it and
    // count idmint_counter_regressions_total.
    const db = await mysql.createConnection(poolOptions(names.mysqlUrl));
    try {
      await db.query("UPDATE idmint_counters SET max_id = 0 WHERE tag = 'seg'");
    } finally {
      await db.end();
    }
    await fetchIds(url, 'seg', 300);
    assert.equal((await fetch(`${url}/v1/ids/rl?count=20&app=shop`)).status, 200);
    await fetchIds(url, 'sf', 5);
    const grpc = new IdsClient(node.grpcPort!);
    try {
      assert.equal((await grpc.next({ tag: 'seg', count: 3 })).length, 3);
    } finally {
      grpc.close();
    }
    assert.equal((await fetch(`${url}/v1/id/no-such-tag`)).status, 404);
    // The segment hash as another Redis master would have left it (its identity in rid and in
    // the name of the fast-end field): the next take abandons it.
    const r = testRedis();
    try {
      const key = node.rt.keys.segment('seg', 1, 0);
      const other = 'ffffffffffffffffffffffffffffffffffffffff';
      const fields = await r.hgetall(key);
      const fast = Object.keys(fields).filter((f) => f.startsWith('fe:'));
      assert.equal(fast.length, 1, `one fast-end field (${Object.keys(fields).join(' ')})`);
      await r.multi().hdel(key, fast[0]).hset(key, 'rid', other, `fe:${other}`, fields[fast[0]]).exec();
    } finally {
      r.disconnect();
    }
    await fetchIds(url, 'seg', 10);
    assert.equal((await fetch(`${url}/readyz`)).status, 200);

    const text = await (await fetch(`${url}/metrics`)).text();
    const exported = new Set([...text.matchAll(/^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{| )/gm)].map((m) => m[1]));
    const named = new Map<string, string>();
    for (const [where, exprs] of [
      ['rules', ruleExprs()],
      ['dashboard', dashboardExprs()],
    ] as const) {
      assert.ok(exprs.length > 5, `${where}: expressions found`);
      for (const e of exprs) for (const n of metricNames(e)) named.set(n, `${where}: ${e.trim()}`);
    }
    assert.ok(named.size >= 20, [...named.keys()].join(', '));
    const missing = [...named].filter(([n]) => !exported.has(n)).map(([n, where]) => `${n} (${where})`);
    assert.deepEqual(missing, [], `named but not exported:\n${missing.join('\n')}`);
  });
});
