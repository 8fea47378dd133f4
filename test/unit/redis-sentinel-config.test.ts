// REDIS_SENTINELS / REDIS_SENTINEL_MASTER / REDIS_SENTINEL_PASSWORD and redis+sentinel:// entries
// of REDIS_URLS: parsed into sentinels, master name and credentials; every inconsistent
// combination refused with a message naming the variables.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseSentinelUrl } from '../../src/core/redis-sentinel.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    return e.problems;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('REDIS_SENTINELS', () => {
  it('is off by default', () => {
    const c = loadConfig({});
    assert.deepEqual(c.redisSentinels, []);
    assert.equal(c.redisSentinelMaster, '');
    assert.equal(c.redisSentinelPassword, '');
  });

  it('reads the sentinels, the master name and the sentinels password', () => {
    const c = loadConfig({
      REDIS_SENTINELS: ' 127.0.0.1:26379, s2.internal:26380,[::1]:26381',
      REDIS_SENTINEL_MASTER: 'idmint-main',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      REDIS_URL: 'redis://:master-secret@ignored:1/2',
    });
    assert.deepEqual(c.redisSentinels, [
      { host: '127.0.0.1', port: 26379 },
      { host: 's2.internal', port: 26380 },
      { host: '::1', port: 26381 },
    ]);
    assert.equal(c.redisSentinelMaster, 'idmint-main');
    assert.equal(c.redisSentinelPassword, 'sentinel-secret');
    assert.equal(
      c.redisUrl,
      'redis://:master-secret@ignored:1/2',
      'REDIS_URL is kept for the master credentials and database',
    );
  });

  it('refuses one without the other', () => {
    assert.match(
      problems({ REDIS_SENTINELS: '127.0.0.1:26379' }).join(';'),
      /REDIS_SENTINELS is set without REDIS_SENTINEL_MASTER/,
    );
    assert.match(
      problems({ REDIS_SENTINEL_MASTER: 'm' }).join(';'),
      /REDIS_SENTINEL_MASTER is set without REDIS_SENTINELS/,
    );
  });

  it('refuses a cluster next to sentinels, TLS, bad entries and names, and a lone sentinel password', () => {
    assert.match(
      problems({
        REDIS_SENTINELS: '127.0.0.1:26379',
        REDIS_SENTINEL_MASTER: 'm',
        REDIS_CLUSTER_NODES: '127.0.0.1:7101',
      }).join(';'),
      /REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set/,
    );
    assert.match(
      problems({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_URL: 'rediss://h:1' }).join(';'),
      /TLS to a Sentinel group/,
    );
    const p = problems({ REDIS_SENTINELS: '127.0.0.1:26379,host', REDIS_SENTINEL_MASTER: 'm' });
    assert.equal(p.length, 1, p.join(';'));
    assert.match(p[0], /^REDIS_SENTINELS entries are host:port.*"host"/);
    assert.match(
      problems({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_MASTER: 'a b' }).join(';'),
      /REDIS_SENTINEL_MASTER must match/,
    );
    assert.match(
      problems({ REDIS_SENTINEL_PASSWORD: 'x' }).join(';'),
      /REDIS_SENTINEL_PASSWORD is set but no Redis is found through sentinels/,
    );
  });
});

describe('redis+sentinel:// in REDIS_URLS', () => {
  it('accepts a named server found through sentinels', () => {
    const url = 'redis+sentinel://:p%40ss@127.0.0.1:26379,127.0.0.1:26380/other/3';
    const c = loadConfig({ REDIS_URLS: `b=${url}`, REDIS_SENTINEL_PASSWORD: 's' });
    assert.equal(c.redisUrls.b, url);
    assert.deepEqual(parseSentinelUrl(url), {
      sentinels: [
        { host: '127.0.0.1', port: 26379 },
        { host: '127.0.0.1', port: 26380 },
      ],
      master: 'other',
      password: 'p@ss',
      db: 3,
    });
    assert.deepEqual(parseSentinelUrl('redis+sentinel://u:p@h:1/m'), {
      sentinels: [{ host: 'h', port: 1 }],
      master: 'm',
      username: 'u',
      password: 'p',
      db: 0,
    });
  });

  it('names what is wrong with a bad one', () => {
    for (const [bad, why] of [
      ['redis+sentinel://127.0.0.1:26379', /master's name/],
      ['redis+sentinel://127.0.0.1/m', /host:port/],
      ['redis+sentinel:///m', /no sentinel/],
      ['redis+sentinel://h:1/m/x', /database number/],
      ['redis+sentinel://h:1/m/1/2', /database number/],
    ] as const) {
      const p = problems({ REDIS_URLS: `b=${bad}` });
      assert.equal(p.length, 1, p.join(';'));
      assert.match(p[0], /^REDIS_URLS entry "b" is not a valid Sentinel URL/);
      assert.match(p[0], why, p[0]);
    }
  });
});
