// Configuration from the environment: defaults, one message per bad variable naming it,
// overrides, and a frozen result.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, type Config } from '../../src/config.js';

/** Defaults of docs/CONFIG.md (adminToken and nodeId are generated). */
const DEFAULTS: Partial<Config> = {
  port: 8080,
  host: '0.0.0.0',
  udpPort: 8081,
  grpcPort: 8082,
  redisUrl: 'redis://127.0.0.1:6379',
  redisPrefix: 'idmint',
  mysqlUrl: 'mysql://root@127.0.0.1:3306/idmint',
  adminTokenGenerated: true,
  logLevel: 'info',
  logFormat: 'auto',
  refillWaitMs: 3000,
  redisCommandTimeoutMs: 1000,
  mysqlQueryTimeoutMs: 2000,
  shutdownDrainMs: 3000,
  refillConcurrency: 4,
  tagCacheMs: 1000,
  coalesceMax: 100_000,
  coalescePipeline: 4,
  coalesceHold: 32,
  coalesceHoldRtt: 1,
  coalesceLingerMs: 2,
  leaseTtlMs: 15_000,
  leaseMarginMs: 1000,
  janitorEveryMs: 30_000,
  clockMaxBackMs: 10,
  advertiseAddr: '',
  demoTag: '',
  serveHttp: true,
  metricsToken: '',
  revealProtectedTags: false,
  grpcMaxBufferedBytes: 64 * 1024 * 1024,
};

/** The fields of c named in want. */
function pick(c: Config, want: Partial<Config>): Partial<Config> {
  return Object.fromEntries(Object.keys(want).map((k) => [k, c[k as keyof Config]]));
}

/** The problems an environment is refused with (fails when it is accepted). */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected ConfigError, got ${String(e)}`);
    assert.equal(e.name, 'ConfigError');
    for (const p of e.problems) assert.ok(e.message.includes(p), 'the message lists every problem');
    return e.problems;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    assert.deepEqual(pick(c, DEFAULTS), DEFAULTS);
    assert.ok(c.adminToken.length >= 16, 'a generated token is long');
    assert.ok(c.nodeId.includes(`-${process.pid}-`), c.nodeId);
    assert.match(c.nodeId, /^[A-Za-z0-9_.-]{1,100}$/);
    const other = loadConfig({});
    assert.notEqual(other.adminToken, c.adminToken, 'each process generates its own token');
    assert.notEqual(other.nodeId, c.nodeId, 'each process has its own node id');
  });

  it('treats empty variables as unset', () => {
    const c = loadConfig({
      PORT: '',
      UDP_PORT: '',
      REDIS_URL: '',
      MYSQL_URL: '',
      REDIS_PREFIX: '',
      LOG_LEVEL: '',
      ADMIN_TOKEN: '',
      DEMO_TAG: '',
      REFILL_WAIT_MS: '',
    });
    assert.equal(c.port, 8080);
    assert.equal(c.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(c.adminTokenGenerated, true);
    assert.equal(c.refillWaitMs, 3000);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      UDP_PORT: '0',
      REDIS_URL: 'rediss://r.example:6380/2',
      REDIS_PREFIX: 'my.app-1',
      MYSQL_URL: 'mariadb://u:p%40ss@db:3307/ids_db',
      ADMIN_TOKEN: 'secret-token-of-24-chars',
      NODE_ID: 'node-a',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
      REFILL_WAIT_MS: '10',
      REFILL_CONCURRENCY: '0',
      TAG_CACHE_MS: '60000',
      COALESCE_MAX: '10000000',
      COALESCE_PIPELINE: '1',
      COALESCE_HOLD: '0',
      COALESCE_HOLD_RTT: '3',
      COALESCE_LINGER_MS: '7',
      DEMO_TAG: 'demo',
      LEASE_TTL_MS: '30000',
      LEASE_MARGIN_MS: '9999',
      CLOCK_MAX_BACK_MS: '0',
      ADVERTISE_ADDR: 'ids-1.internal:9000',
      REDIS_COMMAND_TIMEOUT_MS: '250',
      MYSQL_QUERY_TIMEOUT_MS: '60000',
    });
    const want: Partial<Config> = {
      port: 9000,
      host: '127.0.0.1',
      udpPort: 0,
      redisUrl: 'rediss://r.example:6380/2',
      redisPrefix: 'my.app-1',
      mysqlUrl: 'mariadb://u:p%40ss@db:3307/ids_db',
      adminToken: 'secret-token-of-24-chars',
      adminTokenGenerated: false,
      nodeId: 'node-a',
      logLevel: 'debug',
      logFormat: 'json',
      refillWaitMs: 10,
      refillConcurrency: 0,
      tagCacheMs: 60000,
      coalesceMax: 10_000_000,
      coalescePipeline: 1,
      coalesceHold: 0,
      coalesceHoldRtt: 3,
      coalesceLingerMs: 7,
      demoTag: 'demo',
      leaseTtlMs: 30_000,
      leaseMarginMs: 9999,
      clockMaxBackMs: 0,
      advertiseAddr: 'ids-1.internal:9000',
      serveHttp: true,
      redisCommandTimeoutMs: 250,
      mysqlQueryTimeoutMs: 60_000,
    };
    assert.deepEqual(pick(c, want), want);
    assert.equal(loadConfig({ PORT: ' 81 ' }).port, 81, 'surrounding blanks are tolerated');
  });

  it('reads named Redis servers from REDIS_URLS, REDIS_URL being "default"', () => {
    const c = loadConfig({
      REDIS_URL: 'redis://r0:6379',
      REDIS_URLS: ' a=redis://r1:6379 , b-2=rediss://u:p@r2:6380/1,',
    });
    assert.deepEqual(c.redisUrls, {
      default: 'redis://r0:6379',
      a: 'redis://r1:6379',
      'b-2': 'rediss://u:p@r2:6380/1',
    });
    assert.deepEqual(loadConfig({}).redisUrls, { default: 'redis://127.0.0.1:6379' });
    for (const [bad, why] of [
      ['a', /name=redis/],
      ['=redis://x', /name=redis/],
      ['A=redis://x', /name=redis/],
      ['a=http://x', /"a" is not a redis/],
      ['default=redis://x', /must not name "default"/],
      ['a=redis://x,a=redis://y', /names "a" twice/],
    ] as const) {
      assert.throws(
        () => loadConfig({ REDIS_URLS: bad }),
        (e: unknown) => e instanceof ConfigError && why.test(e.message) && /REDIS_URLS/.test(e.message),
        bad,
      );
    }
  });

  it('reads the metrics token and the exposure setting', () => {
    const c = loadConfig({ METRICS_TOKEN: 'scrape-secret', REVEAL_PROTECTED_TAGS: '1' });
    assert.deepEqual([c.metricsToken, c.revealProtectedTags], ['scrape-secret', true]);
    assert.equal(loadConfig({ REVEAL_PROTECTED_TAGS: 'false' }).revealProtectedTags, false);
  });

  it('names the variable in the message for each bad value', () => {
    const cases: [name: string, value: string][] = [
      ['METRICS_TOKEN', 'short'],
      ['REVEAL_PROTECTED_TAGS', 'yes'],
      ['PORT', 'abc'],
      ['PORT', '-1'],
      ['PORT', '1.5'],
      ['PORT', '65536'],
      ['PORT', '0x50'],
      ['PORT', '8080a'],
      ['UDP_PORT', 'x'],
      ['UDP_PORT', '70000'],
      ['REDIS_URL', 'http://127.0.0.1:6379'],
      ['REDIS_URL', 'not a url'],
      ['REDIS_URL', '127.0.0.1:6379'],
      ['MYSQL_URL', 'postgres://root@h/db'],
      ['MYSQL_URL', '::'],
      ['MYSQL_URL', 'mysql://root@h/'],
      ['MYSQL_URL', 'mysql://root@h/my-db'],
      ['MYSQL_URL', 'mysql://root@h:3306'],
      ['REDIS_PREFIX', 'a b'],
      ['REDIS_PREFIX', 'x'.repeat(33)],
      ['REDIS_PREFIX', '{p}'],
      ['LOG_LEVEL', 'verbose'],
      ['LOG_LEVEL', 'INFO'],
      ['LOG_FORMAT', 'text'],
      ['LOG_FORMAT', 'JSON'],
      ['ADMIN_TOKEN', 'short'],
      ['ADMIN_TOKEN', '1234567'],
      ['ADMIN_TOKEN', '123456789012345'],
      ['VIEWER_TOKEN', '123456789012345'],
      ['ADMIN_AUTH_MAX_FAILURES', '0'],
      ['ADMIN_AUTH_WINDOW_MS', '999'],
      ['DEMO_TAG', 'bad tag'],
      ['DEMO_TAG', 'x'.repeat(65)],
      ['REFILL_WAIT_MS', '9'],
      ['REFILL_WAIT_MS', '60001'],
      ['REFILL_WAIT_MS', 'soon'],
      ['REFILL_CONCURRENCY', '65'],
      ['REFILL_CONCURRENCY', '-2'],
      ['REDIS_COMMAND_TIMEOUT_MS', '49'],
      ['REDIS_COMMAND_TIMEOUT_MS', '60001'],
      ['REDIS_COMMAND_TIMEOUT_MS', 'fast'],
      ['MYSQL_QUERY_TIMEOUT_MS', '99'],
      ['MYSQL_QUERY_TIMEOUT_MS', '60001'],
      ['TAG_CACHE_MS', '49'],
      ['TAG_CACHE_MS', '60001'],
      ['COALESCE_MAX', '0'],
      ['COALESCE_MAX', '10000001'],
      ['COALESCE_PIPELINE', '0'],
      ['COALESCE_PIPELINE', '65'],
      ['COALESCE_HOLD', '-1'],
      ['COALESCE_HOLD', '100001'],
      ['NODE_ID', 'a b'],
      ['NODE_ID', 'x'.repeat(101)],
      ['NODE_ID', 'node/1'],
      ['LEASE_TTL_MS', '2999'],
      ['LEASE_TTL_MS', '600001'],
      ['LEASE_MARGIN_MS', '99'],
      ['LEASE_MARGIN_MS', '5000'],
      ['CLOCK_MAX_BACK_MS', '5001'],
      ['CLOCK_MAX_BACK_MS', '-1'],
    ];
    for (const [name, value] of cases) {
      const p = problems({ [name]: value });
      assert.ok(p[0].startsWith(`${name} `), `${name}=${value}: "${p[0]}" does not name the variable first`);
      // Nothing else is blamed (a second message may only be the TTL/margin cross-check).
      for (const q of p) assert.ok(q.includes(name), `${name}=${value}: unrelated problem "${q}"`);
      assert.ok(p.length <= 2, `${name}=${value}: ${JSON.stringify(p)}`);
    }
    assert.equal(cases.length, 60);
  });

  it('checks the lease margin against the TTL', () => {
    assert.deepEqual(problems({ LEASE_TTL_MS: '3000', LEASE_MARGIN_MS: '1000' }), [
      'LEASE_MARGIN_MS (1000) must be below a third of LEASE_TTL_MS (3000)',
    ]);
    assert.equal(loadConfig({ LEASE_TTL_MS: '3000', LEASE_MARGIN_MS: '999' }).leaseMarginMs, 999);
  });

  it('quotes the bad value back', () => {
    assert.match(problems({ PORT: 'abc' })[0], /"abc"/);
    assert.match(problems({ PORT: '70000' })[0], /70000/);
    assert.match(problems({ LOG_LEVEL: 'verbose' })[0], /"verbose"/);
    assert.match(problems({ REDIS_URL: 'http://x' })[0], /"http:\/\/x"/);
  });

  it('reports every bad variable at once', () => {
    const p = problems({
      PORT: 'abc',
      REDIS_URL: 'http://x',
      LOG_LEVEL: 'loud',
      ADMIN_TOKEN: 'short',
      COALESCE_MAX: '0',
    });
    assert.deepEqual(p.map((s) => s.split(' ')[0]).sort(), [
      'ADMIN_TOKEN',
      'COALESCE_MAX',
      'LOG_LEVEL',
      'PORT',
      'REDIS_URL',
    ]);
  });

  it('never puts the admin token into a message', () => {
    const e = problems({ ADMIN_TOKEN: 's3cr3t' });
    assert.ok(!e.join(' ').includes('s3cr3t'));
  });

  it('applies overrides on top of the environment', () => {
    const c = loadConfig({ PORT: '9000', LOG_LEVEL: 'debug' }, { serveHttp: false, port: 1234, refillConcurrency: 0 });
    assert.equal(c.serveHttp, false);
    assert.equal(c.port, 1234);
    assert.equal(c.refillConcurrency, 0);
    assert.equal(c.logLevel, 'debug');
  });

  it('still refuses a bad environment when overrides are given', () => {
    assert.throws(() => loadConfig({ PORT: 'abc' }, { port: 1 }), ConfigError);
  });

  it('is frozen', () => {
    const c = loadConfig({});
    assert.ok(Object.isFrozen(c));
    assert.throws(() => {
      (c as { port: number }).port = 1;
    }, TypeError);
    assert.equal(c.port, 8080);
  });
});
