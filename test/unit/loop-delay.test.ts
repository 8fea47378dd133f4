import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { pausesBetween, readLoop } from '../../bench/bulk/loop-delay.js';

test('readLoop: the garbage collection pauses of a real registry, summed over every kind, and the delay less the sampling interval', async () => {
  const register = new Registry();
  collectDefaultMetrics({ register, prefix: 'idmint_' });
  // Garbage until the registry's collector has seen a pause (prom-client observes them as they end).
  let kept: unknown[] = [];
  let scrape = readLoop(await register.metrics(), 'registry');
  const start = scrape.gc;
  for (let round = 0; scrape.gc.count === 0; round++) {
    assert.ok(round < 1000, 'no garbage collection was observed');
    for (let i = 0; i < 100_000; i++) kept.push({ i, s: `garbage ${i}` });
    kept = [];
    await new Promise((resolve) => setImmediate(resolve));
    scrape = readLoop(await register.metrics(), 'registry');
  }
  assert.ok(scrape.gc.seconds > start.seconds);
  const text = await register.metrics();
  const kinds = text.split('\n').filter((l) => l.startsWith('idmint_nodejs_gc_duration_seconds_count{'));
  assert.equal(
    scrape.gc.count,
    kinds.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0),
  );
  const delay = readLoop(
    [
      'idmint_nodejs_eventloop_lag_p99_seconds 0.0125',
      'idmint_nodejs_eventloop_lag_max_seconds 0.004',
      '# TYPE idmint_nodejs_gc_duration_seconds histogram',
      'idmint_nodejs_gc_duration_seconds_sum{kind="minor"} 0.5',
      'idmint_nodejs_gc_duration_seconds_count{kind="minor"} 3',
      'idmint_nodejs_gc_duration_seconds_sum{kind="major"} 0.25',
      'idmint_nodejs_gc_duration_seconds_count{kind="major"} 1',
    ].join('\n'),
    'text',
  );
  assert.deepEqual(delay, { delay: { p99: 2.5, max: 0 }, gc: { count: 4, seconds: 0.75 } });
});

test('readLoop: no pause yet is none; a scrape without the histogram is an error that names it', () => {
  const loop = 'idmint_nodejs_eventloop_lag_p99_seconds 0.01\nidmint_nodejs_eventloop_lag_max_seconds 0.01';
  const none = readLoop(`${loop}\n# TYPE idmint_nodejs_gc_duration_seconds histogram`, 'http://x');
  assert.deepEqual(none.gc, { count: 0, seconds: 0 });
  assert.throws(() => readLoop(loop, 'http://x'), /http:\/\/x\/metrics has no idmint_nodejs_gc_duration_seconds$/);
});

test('pausesBetween: pauses a second and the loop held, ms a second', () => {
  assert.deepEqual(pausesBetween({ count: 10, seconds: 1 }, { count: 30, seconds: 1.0625 }, 4), {
    perS: 5,
    msPerS: 15.625,
  });
});
