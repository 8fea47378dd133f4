// bench:udp's command line: where the run's own redis-server runs (--redis-cpu).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readUdpOptions } from '../../bench/udp/options.js';

test('--pin puts the run’s Redis beside the servers on CPU 1 unless --redis-cpu says otherwise', () => {
  assert.equal(readUdpOptions(['--pin']).redisCpu, 1);
  assert.equal(readUdpOptions(['--pin', '--redis-cpu', '0']).redisCpu, 0);
  assert.equal(readUdpOptions(['--pin', '--redis-cpu', 'any']).redisCpu, 'any');
});

test('without --pin the run’s Redis is left to the scheduler, and pinning it alone is refused', () => {
  assert.equal(readUdpOptions([]).redisCpu, 'any');
  assert.equal(readUdpOptions(['--redis-cpu', 'any']).redisCpu, 'any');
  assert.throws(() => readUdpOptions(['--redis-cpu', '1']), /needs --pin/);
});

test('--redis-cpu takes 0, 1 or any', () => {
  for (const bad of ['2', 'one', '']) {
    assert.throws(() => readUdpOptions(['--pin', '--redis-cpu', bad]), /--redis-cpu/);
  }
});
