// bench:bulk-single's command line: the bulk share idmint runs with (--bulk-share,
// BULK_SHARE_PERCENT) and the name a run is recorded under, so a run at another share never
// replaces the default's latest; the bulk consumer's transport (--consumer) names it too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readBulkSingleOptions } from '../../bench/bulk/options.js';
import { DEFAULT_BULK_SHARE_PERCENT } from '../../src/config.js';

test('as it ships, a run uses the default bulk share and records as bulk-single', () => {
  const o = readBulkSingleOptions(['--seconds', '5', '--pin'], {});
  assert.equal(o.bulkShare, DEFAULT_BULK_SHARE_PERCENT);
  assert.equal(o.bench, 'bulk-single');
  assert.equal(readBulkSingleOptions(['--bulk-share', String(DEFAULT_BULK_SHARE_PERCENT)], {}).bench, 'bulk-single');
});

test('another share, from the flag or the environment, records under a name of its own', () => {
  assert.deepEqual(
    [readBulkSingleOptions(['--bulk-share', '2'], {})].map((o) => [o.bulkShare, o.bench]),
    [[2, 'bulk-single-share2']],
  );
  const env = readBulkSingleOptions([], { BULK_SHARE_PERCENT: '10' });
  assert.deepEqual([env.bulkShare, env.bench], [10, 'bulk-single-share10']);
  // An empty one is the default, as idmint reads it.
  assert.equal(readBulkSingleOptions([], { BULK_SHARE_PERCENT: '' }).bench, 'bulk-single');
  // The flag wins over the environment.
  assert.equal(readBulkSingleOptions(['--bulk-share', '3'], { BULK_SHARE_PERCENT: '10' }).bulkShare, 3);
});

test('a share out of 1 to 100, or not whole, is refused', () => {
  for (const bad of ['0', '101', '2.5', 'x']) {
    assert.throws(() => readBulkSingleOptions(['--bulk-share', bad], {}), /--bulk-share/);
    assert.throws(() => readBulkSingleOptions([], { BULK_SHARE_PERCENT: bad }), /BULK_SHARE_PERCENT/);
  }
});

test('a share of its own is refused with several processes, the bulk consumer apart or node flags', () => {
  for (const other of [['--processes', '2'], ['--bulk-apart'], ['--node-flag=--trace-gc']]) {
    assert.throws(() => readBulkSingleOptions(['--bulk-share', '2', ...other], {}), /one serving process/);
    // The default share goes with each, under that run's own name.
    assert.doesNotThrow(() => readBulkSingleOptions(other, {}));
  }
  assert.equal(readBulkSingleOptions(['--bulk-apart'], {}).bench, 'bulk-single-apart');
  assert.equal(readBulkSingleOptions(['--processes', '2'], {}).bench, 'bulk-single-p2');
  assert.equal(readBulkSingleOptions(['--node-flag=--trace-gc'], {}).bench, 'bulk-single-node-flags');
});

test('a gRPC bulk consumer records beside the websocket one of the same setup', () => {
  assert.equal(readBulkSingleOptions([], {}).consumer, 'ws');
  const named = (args: string[]) => {
    const o = readBulkSingleOptions(args, {});
    return [o.consumer, o.bench];
  };
  assert.deepEqual(named(['--consumer', 'ws']), ['ws', 'bulk-single']);
  assert.deepEqual(named(['--consumer', 'grpc']), ['grpc', 'bulk-single-grpc']);
  assert.deepEqual(named(['--consumer', 'grpc-ids']), ['grpc-ids', 'bulk-single-grpc-ids']);
  assert.deepEqual(named(['--consumer', 'grpc', '--bulk-apart']), ['grpc', 'bulk-single-apart-grpc']);
  assert.deepEqual(named(['--consumer', 'grpc', '--bulk-share', '2']), ['grpc', 'bulk-single-share2-grpc']);
  for (const bad of ['http', 'GRPC', ''])
    assert.throws(() => readBulkSingleOptions(['--consumer', bad], {}), /--consumer takes one of ws, grpc, grpc-ids/);
});
