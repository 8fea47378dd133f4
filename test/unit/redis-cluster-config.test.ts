// REDIS_CLUSTER_NODES: seeds parsed into host and port, each bad entry named, and a REDIS_URL
// that selects a database other than 0 refused next to a cluster.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    return e.problems;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('REDIS_CLUSTER_NODES', () => {
  it('is empty by default and when blank: the default Redis is REDIS_URL', () => {
    assert.deepEqual(loadConfig({}).redisClusterNodes, []);
    assert.deepEqual(loadConfig({ REDIS_CLUSTER_NODES: ' ' }).redisClusterNodes, []);
  });

  it('reads comma-separated host:port seeds, names, IPv4 and bracketed IPv6', () => {
    const c = loadConfig({
      REDIS_CLUSTER_NODES: ' 127.0.0.1:7101, redis-a.internal:6379 ,[::1]:7003,',
      REDIS_URL: 'rediss://u:p@ignored:1',
    });
    assert.deepEqual(c.redisClusterNodes, [
      { host: '127.0.0.1', port: 7101 },
      { host: 'redis-a.internal', port: 6379 },
      { host: '::1', port: 7003 },
    ]);
    assert.ok(Object.isFrozen(c.redisClusterNodes) && Object.isFrozen(c.redisClusterNodes[0]));
    assert.equal(c.redisUrl, 'rediss://u:p@ignored:1', 'REDIS_URL is kept for credentials and TLS');
  });

  it('names every bad seed', () => {
    for (const bad of [
      '127.0.0.1',
      'host:',
      ':6379',
      'host:0',
      'host:65536',
      'host:port',
      'redis://h:1',
      '::1:7000',
      'a b:1',
    ]) {
      const p = problems({ REDIS_CLUSTER_NODES: `127.0.0.1:7101,${bad}` });
      assert.equal(p.length, 1, `${bad}: ${p.join('; ')}`);
      assert.match(p[0], /^REDIS_CLUSTER_NODES entries are host:port/);
      assert.ok(p[0].includes(`"${bad}"`), p[0]);
    }
    assert.deepEqual(problems({ REDIS_CLUSTER_NODES: ',,' }), ['REDIS_CLUSTER_NODES names no host:port']);
  });

  it('refuses a REDIS_URL database other than 0 with a cluster, and accepts /0 or none', () => {
    assert.match(
      problems({ REDIS_CLUSTER_NODES: 'h:1', REDIS_URL: 'redis://h:6379/2' })[0],
      /REDIS_URL selects database 2, but a Redis Cluster/,
    );
    assert.equal(loadConfig({ REDIS_CLUSTER_NODES: 'h:1', REDIS_URL: 'redis://h:6379/0' }).redisClusterNodes.length, 1);
    assert.equal(
      loadConfig({ REDIS_URL: 'redis://h:6379/2' }).redisClusterNodes.length,
      0,
      'a single server may use any database',
    );
    // A malformed REDIS_URL is reported once, as before.
    assert.deepEqual(
      problems({ REDIS_CLUSTER_NODES: 'h:1', REDIS_URL: 'nope' }).map((p) => p.split(' ')[0]),
      ['REDIS_URL'],
    );
  });
});
