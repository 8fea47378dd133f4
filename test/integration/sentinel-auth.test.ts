// suite: single — starts its own Sentinel group
// Redis Sentinel with passwords: the master and replica require one (given to idmint in
// REDIS_URL and in the redis+sentinel:// URL of a named server), the sentinels another
// (REDIS_SENTINEL_PASSWORD). A process found through those sentinels serves tags on the
// default Redis and on the named server, and after a SENTINEL FAILOVER every connection, the
// BullMQ queue and worker of the refills included, follows the new master: refill jobs are
// added on it and run, and /readyz names it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { withRedisPort } from '../../tools/redis-server.js';
import { createTag, startLocalNode } from '../../tools/node.js';
import { waitFor } from '../helpers/fault-load.js';
import { masterAddr as masterAddrBy } from '../helpers/sentinel-group.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

const BASE = Number(process.env.AUTH_SENTINEL_BASE_PORT ?? 7461);
const SERVER_PASSWORD = 'master-secret';
const SENTINEL_PASSWORD = 'sentinel-secret';
const script = (cmd: string) =>
  execFileSync('bash', ['scripts/redis-sentinel.sh', cmd], {
    env: {
      ...process.env,
      REDIS_SENTINEL_BASE_PORT: String(BASE),
      REDIS_SENTINEL_SERVER_PASSWORD: SERVER_PASSWORD,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
    },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

/** The first line of the reply to one inline command sent on a bare connection (no AUTH, nothing else sent). */
function bareReply(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(`${command}\r\n`));
    let buf = '';
    sock.setTimeout(2000, () => sock.destroy(new Error(`no reply from port ${port}`)));
    sock.on('data', (d) => {
      buf += d.toString('utf8');
      const end = buf.indexOf('\r\n');
      if (end >= 0) {
        sock.destroy();
        resolve(buf.slice(0, end));
      }
    });
    sock.on('error', reject);
  });
}

const masterAddr = (sentinelPort: number) => masterAddrBy(sentinelPort, SENTINEL_PASSWORD);

/** Refill jobs the process's BullMQ worker ran to an answer (any result but failed). */
async function refillsRun(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^idmint_refill_duration_seconds_count\{result="([^"]+)"\} (\d+)$/gm))
    if (m[1] !== 'failed') n += Number(m[2]);
  return n;
}

describe('Redis Sentinel with passwords', () => {
  const names = testNames();
  let node: LocalNode | undefined;
  let sentinels: number[] = [];
  let seeds = '';

  before(async () => {
    seeds = script('start').split('\n').pop()!;
    sentinels = seeds.split(',').map((s) => Number(s.split(':')[1]));
    node = await startLocalNode(names, {
      // The host is not used: only the master's password (and database).
      REDIS_URL: `redis://:${SERVER_PASSWORD}@unused:1/0`,
      REDIS_SENTINELS: seeds,
      REDIS_SENTINEL_MASTER: 'idmint',
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      REDIS_URLS: `s=redis+sentinel://:${SERVER_PASSWORD}@${seeds}/idmint`,
      REFILL_WAIT_MS: '2000',
      LOG_LEVEL: 'error',
    });
  });

  after(async () => {
    await node?.close().catch(() => undefined);
    const master = sentinels.length ? await masterAddr(sentinels[0]).catch(() => '') : '';
    if (master) await cleanup(names, `redis://:${SERVER_PASSWORD}@${master}`).catch(() => undefined);
    script('stop');
  });

  it('the group refuses clients without its passwords', async () => {
    assert.match(await bareReply(sentinels[0], 'SENTINEL GET-MASTER-ADDR-BY-NAME idmint'), /^-NOAUTH/);
    // The master's password is not the sentinels'.
    assert.match(await bareReply(sentinels[0], `AUTH ${SERVER_PASSWORD}`), /^-WRONGPASS/);
    const port = Number((await masterAddr(sentinels[0])).split(':')[1]);
    assert.match(await bareReply(port, 'PING'), /^-NOAUTH/);
  });

  it('serves the default Redis and a named server through the sentinels, and follows a failover with its BullMQ connections', {
    timeout: 60000,
  }, async () => {
    const url = node!.url;
    // Small segments: every few requests need a refill job, through BullMQ.
    await createTag(url, { tag: 'a', mode: 'segment', step: 100, min_step: 100, max_step: 100 });
    await createTag(url, { tag: 'b', mode: 'segment', step: 100, min_step: 100, max_step: 100, redis: 's' });
    const seen = new Set<string>();
    const take = async (tag: string) => {
      const res = await fetch(`${url}/v1/ids/${tag}?count=50`);
      if (res.status !== 200) return false;
      for (const id of ((await res.json()) as { ids: string[] }).ids) {
        assert.ok(!seen.has(`${tag}:${id}`), `${tag}: ${id} answered twice`);
        seen.add(`${tag}:${id}`);
      }
      return true;
    };
    const old = await masterAddr(sentinels[0]);
    for (let i = 0; i < 10; i++)
      for (const tag of ['a', 'b']) assert.ok(await take(tag), `${tag} served before the failover`);
    const ready = (await (
      await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as {
      status: string;
      redis_master: Record<string, string | null>;
    };
    assert.equal(ready.status, 'ready');
    assert.deepEqual(ready.redis_master, { default: old, s: old });
    assert.ok((await refillsRun(url)) > 0, 'refill jobs ran');

    const jobKey = `{${names.prefix}}:refill:id`;
    const jobsBefore = Number(await withRedisPort(Number(old.split(':')[1]), (r) => r.get(jobKey), SERVER_PASSWORD));
    assert.ok(jobsBefore > 0, `refill jobs were added on the master (${jobKey})`);
    assert.equal(
      await withRedisPort(sentinels[1], (s) => s.call('SENTINEL', 'FAILOVER', 'idmint'), SENTINEL_PASSWORD),
      'OK',
    );
    const promoted = await waitFor(
      'the sentinels to name another master',
      async () => {
        const m = await masterAddr(sentinels[0]);
        return m !== old && m;
      },
      20000,
    );
    const refillsAtSwitch = await refillsRun(url);
    // Service back on both tags, with refills added on the new master and run by the worker.
    await waitFor(
      'both tags served again, with refills on the new master',
      async () => {
        for (let i = 0; i < 4; i++) for (const tag of ['a', 'b']) if (!(await take(tag))) return false;
        const jobs = Number(await withRedisPort(Number(promoted.split(':')[1]), (r) => r.get(jobKey), SERVER_PASSWORD));
        return jobs > jobsBefore && (await refillsRun(url)) > refillsAtSwitch;
      },
      20000,
      100,
    );
    await waitFor(
      `/readyz to name ${promoted}`,
      async () => {
        const r = (await (
          await fetch(`${url}/readyz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        ).json()) as {
          status: string;
          redis_master: Record<string, string | null>;
        };
        return r.status === 'ready' && r.redis_master.default === promoted && r.redis_master.s === promoted;
      },
      15000,
    );
  });
});
