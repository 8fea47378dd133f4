// suite: single — a private redis-server and a Redis connection through a proxy
// Capacity per tag in the admin API and on /metrics, read from real Redis and MySQL: ID space
// left (exact after known takes), rate and forecast for segment tags (sharded: the first shard
// to run out), rule counters against their period's end, snowflake layouts' end of time and
// worker pool usage; an idle tag never runs out. Health gauges: a process that cannot reach
// MySQL reports not ready, and a Redis restarted under the node counts a run id change.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PRESETS, runsOutAt } from '../../src/core/snowflake-layout.js';
import { shardOf } from '../../src/core/layout.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { freePort } from '../../tools/child.js';
import { TcpProxy } from '../../tools/proxies/tcp-proxy.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** count rule IDs for an app (strings, not numbers). */
async function ruleIds(url: string, tag: string, count: number, app: string): Promise<string[]> {
  const r = await fetch(`${url}/v1/ids/${tag}?count=${count}&app=${app}`);
  const json = (await r.json()) as { ids?: string[] };
  assert.equal(r.status, 200, JSON.stringify(json));
  return json.ids!;
}

async function tagView(url: string, tag: string): Promise<Json> {
  const r = await fetch(`${url}/v1/admin/tags/${tag}`, { headers: auth });
  assert.equal(r.status, 200);
  return (await r.json()) as Json;
}

/**
 * The tag's view once its counters are quiet: two reads 150 ms apart agree on every counter's
 * remaining IDs and allocated maximum (a refill still on its way from MySQL to Redis moves
 * them). Exact accounting is checked on a quiet tag; in between, a read may undercount by the
 * segment in flight (documented).
 */
async function quietView(url: string, tag: string): Promise<Json> {
  const shape = (v: Json) =>
    JSON.stringify([
      v.capacity?.remaining_ids,
      ...[...(v.capacity?.shards ?? []), ...(v.capacity?.apps ?? [])].map((c: Json) => [
        c.remaining_ids,
        c.allocated_max,
      ]),
    ]);
  let last = await tagView(url, tag);
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    await sleep(150);
    const v = await tagView(url, tag);
    if (shape(v) === shape(last)) return v;
    last = v;
  }
  return last;
}

/** The value of one sample of /metrics, or undefined when the series is absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`^${esc(name)}${labels ? esc(`{${labels}}`) : ''} (\\S+)$`, 'm').exec(text);
  if (!m) return undefined;
  return m[1] === '+Inf' ? Infinity : Number(m[1]);
}

/** Two floats agree to a relative tolerance. */
const near = (a: number, b: number, rel = 0.01) => Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-9);

describe('capacity per tag', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names);
    url = node.url;
    const small = { step: 100, min_step: 100, max_step: 100 };
    await createTag(url, { tag: 'seg', max_id_limit: '10000', ...small });
    await createTag(url, { tag: 'idle', max_id_limit: '5000', ...small });
    await createTag(url, { tag: 'sh', layout: 'sharded', shards: 4, max_id_limit: '100000000', ...small });
    await createTag(url, {
      tag: 'r',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}-{counter:4}',
      min_counter: 0,
      max_counter: 999,
      reset_seconds: 86400,
      time_zone: 'UTC',
      step: 50,
      min_step: 50,
      max_step: 50,
    });
    await createTag(url, {
      tag: 'rbig',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{mm}-{counter:9}',
      min_counter: 0,
      max_counter: 999_999_999,
      reset_seconds: 60,
      time_zone: 'UTC',
      step: 50,
      min_step: 50,
      max_step: 50,
    });
    await createTag(url, { tag: 'sf', mode: 'snowflake', preset: 'jssafe' });
    await createTag(url, {
      tag: 'rnever',
      mode: 'rule',
      template: 'N{counter:5}',
      min_counter: 0,
      max_counter: 99_999,
    });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('segment tag: remaining is the limit minus the IDs handed out, the forecast follows the rate', async () => {
    // Several requests some time apart, so MySQL's log holds allocations spread over time.
    for (let i = 0; i < 5; i++) {
      await fetchIds(url, 'seg', 500);
      await sleep(100);
    }
    const c = (await quietView(url, 'seg')).capacity;
    assert.equal(c.remaining_ids, 10000 - 2500);
    assert.equal(c.shards.length, 1);
    assert.equal(c.shards[0].limit, 10000);
    assert.ok(
      c.shards[0].allocated_max >= 2500 && c.shards[0].allocated_max <= 2700,
      String(c.shards[0].allocated_max),
    );
    assert.ok(c.rate_ids_per_second > 0, `a tag in use has a rate: ${JSON.stringify(c)}`);
    assert.ok(near(c.exhaustion_seconds, c.remaining_ids / c.rate_ids_per_second), JSON.stringify(c));
    const at = Date.parse(c.runs_out_at);
    assert.ok(Math.abs(at - (Date.now() + c.exhaustion_seconds * 1000)) < 5000, JSON.stringify(c));
  });

  it('an idle tag has its whole space and never runs out', async () => {
    const c = (await tagView(url, 'idle')).capacity;
    assert.deepEqual(
      { ...c, shards: undefined },
      { rate_ids_per_second: 0, remaining_ids: 5000, exhaustion_seconds: null, runs_out_at: null, shards: undefined },
    );
  });

  it('sharded tag: remaining adds up over shards, the tag runs out with its first shard', async () => {
    const key = 'customer-7';
    const used = shardOf(key, 4);
    for (let i = 0; i < 4; i++) {
      await fetchIds(url, 'sh', 400, `&key=${key}`);
      await sleep(100);
    }
    const c = (await quietView(url, 'sh')).capacity;
    assert.equal(c.shards.length, 4);
    const perShard = c.shards[0].limit as number;
    assert.equal(c.remaining_ids, 4 * perShard - 1600);
    assert.equal(
      c.remaining_ids,
      c.shards.reduce((a: number, s: Json) => a + s.remaining_ids, 0),
    );
    for (const s of c.shards) {
      if (s.shard === used) {
        assert.equal(s.remaining_ids, perShard - 1600);
        assert.ok(s.rate_ids_per_second > 0);
      } else {
        assert.equal(s.rate_ids_per_second, 0);
        assert.equal(s.exhaustion_seconds, null);
      }
    }
    const busy = c.shards.find((s: Json) => s.shard === used);
    assert.equal(c.exhaustion_seconds, busy.exhaustion_seconds, 'the tag runs out when its busiest shard does');
    assert.equal(c.runs_out_at, busy.runs_out_at);
  });

  it("rule tag: each app's counter in the current period, forecast against the reset", async () => {
    for (let i = 0; i < 9; i++) {
      assert.equal((await ruleIds(url, 'r', 100, 'a1')).length, 100);
      await sleep(50);
    }
    await ruleIds(url, 'r', 10, 'a2');
    const c = (await quietView(url, 'r')).capacity;
    const apps = Object.fromEntries(c.apps.map((a: Json) => [a.app, a]));
    assert.deepEqual(Object.keys(apps).sort(), ['a1', 'a2']);
    assert.equal(apps.a1.remaining_ids, 100);
    assert.equal(apps.a2.remaining_ids, 990);
    assert.equal(c.remaining_ids, 100, 'the tag shows the app closest to max_counter');
    const dayEnd = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1);
    assert.equal(c.period_ends_at, new Date(dayEnd).toISOString());
    assert.ok(Math.abs(c.period_end_seconds - (dayEnd - Date.now()) / 1000) < 60);
    // 900 IDs within a second or so: 100 left run out long before midnight.
    assert.ok(apps.a1.rate_ids_per_second > 0);
    assert.equal(c.runs_out_before_reset, true, JSON.stringify(c));
    assert.ok(c.exhaustion_seconds !== null && c.exhaustion_seconds < c.period_end_seconds);
    assert.ok(c.exhaustion_seconds <= apps.a1.exhaustion_seconds + 1e-6);

    await ruleIds(url, 'rbig', 300, 'x');
    const big = (await tagView(url, 'rbig')).capacity;
    assert.ok(big.apps[0].rate_ids_per_second > 0);
    assert.equal(big.runs_out_before_reset, false, 'a billion counter values last past a 60 s period');
    assert.equal(big.exhaustion_seconds, null);
    assert.ok(big.period_end_seconds > 0 && big.period_end_seconds <= 60);
  });

  it('rule tag that never resets: no period end, it runs out at the rate alone', async () => {
    for (let i = 0; i < 3; i++) {
      await ruleIds(url, 'rnever', 200, 'x');
      await sleep(100);
    }
    const c = (await tagView(url, 'rnever')).capacity;
    assert.equal(c.remaining_ids, 100_000 - 600);
    assert.equal(c.period_ends_at, null);
    assert.equal(c.period_end_seconds, null);
    assert.equal(c.runs_out_before_reset, true, 'with no reset, any rate runs it out');
    assert.ok(
      c.exhaustion_seconds > 0 && near(c.exhaustion_seconds, c.remaining_ids / c.rate_ids_per_second),
      JSON.stringify(c),
    );
  });

  it("snowflake tag: the layout's end of time and the worker pool in use", async () => {
    await fetchIds(url, 'sf', 3);
    const c = (await tagView(url, 'sf')).capacity;
    assert.equal(c.runs_out_at, runsOutAt(PRESETS.jssafe).toISOString());
    assert.ok(near(c.exhaustion_seconds, (runsOutAt(PRESETS.jssafe).getTime() - Date.now()) / 1000, 1e-4));
    assert.equal(c.worker_pool.worker_bits, 6);
    assert.equal(c.worker_pool.size, 64);
    assert.ok(c.worker_pool.used >= 1, JSON.stringify(c));
    const list = (await (await fetch(`${url}/v1/admin/tags`, { headers: auth })).json()) as Json;
    const inList = list.tags.find((t: Json) => t.tag === 'sf');
    assert.equal(inList.capacity.runs_out_at, c.runs_out_at, 'the list shows capacity too');
  });

  it('exports the same figures as gauges, one series per tag', async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    assert.equal(sample(text, 'idmint_tag_remaining_ids', 'tag="seg"'), 7500);
    assert.equal(sample(text, 'idmint_tag_remaining_ids', 'tag="idle"'), 5000);
    assert.equal(sample(text, 'idmint_tag_rate_ids_per_second', 'tag="idle"'), 0);
    assert.equal(
      sample(text, 'idmint_tag_exhaustion_seconds', 'tag="idle"'),
      undefined,
      'an idle tag has no exhaustion series',
    );
    const rate = sample(text, 'idmint_tag_rate_ids_per_second', 'tag="seg"')!;
    assert.ok(rate > 0);
    assert.ok(near(sample(text, 'idmint_tag_exhaustion_seconds', 'tag="seg"')!, 7500 / rate));
    assert.equal(sample(text, 'idmint_rule_period_remaining_ids', 'tag="r"'), 100);
    assert.ok(sample(text, 'idmint_rule_period_end_seconds', 'tag="r"')! > 0);
    assert.ok(
      sample(text, 'idmint_tag_exhaustion_seconds', 'tag="r"')! <
        sample(text, 'idmint_rule_period_end_seconds', 'tag="r"')!,
    );
    assert.equal(sample(text, 'idmint_tag_exhaustion_seconds', 'tag="rbig"'), undefined, 'resets before it runs out');
    const end = sample(text, 'idmint_snowflake_end_of_time_seconds', 'tag="sf"')!;
    assert.ok(near(end, (runsOutAt(PRESETS.jssafe).getTime() - Date.now()) / 1000, 1e-4));
    assert.equal(
      sample(text, 'idmint_tag_remaining_ids', 'tag="sf"'),
      undefined,
      'a snowflake tag has no counted space',
    );
    assert.ok(sample(text, 'idmint_worker_ids_leased', 'worker_bits="6"')! >= 1);
    assert.equal(sample(text, 'idmint_worker_ids_total', 'worker_bits="6"'), 64);
    assert.equal(sample(text, 'idmint_ready'), 1);
    assert.equal(sample(text, 'idmint_redis_run_id_changes_total', 'server="default"'), 0);
  });
});

describe('health gauges', () => {
  const names = testNames();
  let redis: RedisServer;
  let mysqlProxy: TcpProxy | undefined;
  let node: Awaited<ReturnType<typeof startLocalNode>>;

  before(async () => {
    redis = await RedisServer.start();
    mysqlProxy = await TcpProxy.start(3306);
    const u = new URL(names.mysqlUrl);
    u.port = String(mysqlProxy.port);
    node = await startLocalNode(names, { REDIS_URL: redis.url, MYSQL_URL: u.toString(), LOG_LEVEL: 'error' });
  });
  after(async () => {
    await node.close().catch(() => undefined);
    await mysqlProxy?.close().catch(() => undefined);
    await cleanup(names, redis.url).catch(() => undefined);
    await redis.stop();
  });

  const scrape = async () => {
    const r = await fetch(`${node.url}/metrics`);
    assert.equal(r.status, 200);
    return r.text();
  };

  it('counts a Redis restart as a run id change', { timeout: 60000 }, async () => {
    assert.equal(sample(await scrape(), 'idmint_redis_run_id_changes_total', 'server="default"'), 0);
    await redis.restartEmpty();
    const until = Date.now() + 30000;
    let seen: number | undefined;
    while (Date.now() < until) {
      seen = sample(await scrape(), 'idmint_redis_run_id_changes_total', 'server="default"');
      if (seen === 1) break;
      await sleep(250);
    }
    assert.equal(seen, 1, 'the restarted server was noticed once');
    assert.equal(sample(await scrape(), 'idmint_redis_run_id_changes_total', 'server="default"'), 1, 'and only once');
  });

  it('reports not ready while MySQL cannot be reached, and ready again after', { timeout: 60000 }, async () => {
    assert.equal(sample(await scrape(), 'idmint_ready'), 1);
    // Every MySQL connection dropped and new ones refused (the proxy now points at a closed port).
    mysqlProxy!.retarget(await freePort());
    const started = Date.now();
    const text = await scrape();
    assert.equal(sample(text, 'idmint_ready'), 0);
    assert.ok(Date.now() - started < 15000, 'the scrape does not hang on the missing MySQL');
    mysqlProxy!.retarget(3306);
    const until = Date.now() + 30000;
    let ready: number | undefined;
    while (Date.now() < until && ready !== 1) {
      ready = sample(await scrape(), 'idmint_ready');
      if (ready !== 1) await sleep(250);
    }
    assert.equal(ready, 1);
  });
});
