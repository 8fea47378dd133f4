// Every metric idmint exports is described in the metrics table of docs/OPERATIONS.md: the
// registry of one process (the request, job and idempotency series, the capacity and health
// gauges) is built without stores, and each name must have a row of its own. prom-client's
// process and runtime metrics are covered by the table's `idmint_process_*`, `idmint_nodejs_*` row.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { registerCapacityMetrics } from '../../src/metrics/capacity-metrics.js';
import { registerHealthMetrics } from '../../src/metrics/health-metrics.js';
import { Metrics } from '../../src/metrics/metrics.js';

const OPERATIONS = new URL('../../docs/OPERATIONS.md', import.meta.url);

/** The metric names of the first column of the table under "## Metrics", each in backquotes. */
function documentedMetrics(): Set<string> {
  const text = readFileSync(OPERATIONS, 'utf8');
  const start = text.indexOf('\n## Metrics\n');
  assert.ok(start >= 0, 'docs/OPERATIONS.md has a "## Metrics" section');
  const section = text.slice(start + 1, text.indexOf('\n## ', start + 1));
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (first) for (const m of first.matchAll(/`(idmint_[a-z0-9_]+)`/g)) names.add(m[1]);
  }
  return names;
}

describe('docs/OPERATIONS.md metrics table', () => {
  it('has a row for every metric a process exports', () => {
    const metrics = new Metrics({ defaultMetrics: false });
    registerCapacityMetrics(metrics.registry, { capacity: async () => [], workerPools: async () => [] });
    registerHealthMetrics(metrics.registry, {
      ready: async () => true,
      redisRunIds: async () => [],
      redisMasters: () => [],
      redisServers: ['default'],
    });
    const exported = metrics.registry.getMetricsAsArray().map((m) => m.name);
    assert.ok(exported.length >= 20, `only ${exported.length} metrics registered`);
    const documented = documentedMetrics();
    const missing = exported.filter((name) => !documented.has(name));
    assert.deepEqual(missing, [], `metrics without a row in docs/OPERATIONS.md#metrics: ${missing.join(', ')}`);
  });
});
