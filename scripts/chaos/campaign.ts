// The chaos campaign from start to end: its own Redis and MariaDB, M idmint processes, the tags,
// K client processes recording every answer, faults on a seeded schedule, then everything
// stopped and the checker run over the records. Bounded by a hard deadline; Ctrl-C kills every
// child. Only 127.0.0.1 is ever contacted. The default Redis is a single server behind a fault
// proxy, or (topology "sentinel") a Sentinel group that idmint finds through REDIS_SENTINELS.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checker, problems, summaryLine, type Report, type TagModes } from './checker.js';
import type { ClientSettings } from './client.js';
import { FaultRunner, planFaults, type NetTarget, type Topology } from './faults.js';
import { ChaosSentinel, SENTINEL_MASTER } from './sentinel.js';
import { FaultProxy } from '../../tools/proxies/fault-proxy.js';
import { readRecords } from './recorder.js';
import { ServerPool } from './servers.js';
import { freePort } from '../../tools/child.js';
import { ChaosMysql, ChaosRedis, ChildRegistry } from './services.js';

export interface CampaignOptions {
  /** Seconds of load (faults happen within it). */
  readonly durationS: number;
  readonly servers: number;
  readonly clients: number;
  readonly seed: number;
  /** Where records, logs and the report go; default .data/chaos/runs/<run id>. */
  readonly outDir?: string;
  /** The idmint checkout. */
  readonly root: string;
  /** Pause of each client loop after an answer, ms. */
  readonly pauseMs?: number;
  /** Seconds between faults (default: 7 for runs of a minute or more, else 3.5). */
  readonly faultEveryS?: number;
  /** The default Redis: a single server ("single", the default) or a Sentinel group. */
  readonly topology?: Topology;
  readonly log?: (line: string) => void;
}

export interface CampaignResult {
  readonly report: Report;
  readonly summary: string;
  readonly outDir: string;
  /** 0: no duplicate, no order violation, every failure coded. */
  readonly exitCode: number;
}

export const TAGS = { global: 'chaos-global', node: 'chaos-node', snowflake: 'chaos-sf', rule: 'chaos-rule' } as const;
export const TAG_MODES: TagModes = {
  global: [TAGS.global],
  perProcess: [TAGS.node, TAGS.snowflake],
  rule: [TAGS.rule],
};
const APPS = ['a1', 'a2'];

async function createTags(url: string, token: string): Promise<void> {
  const bodies = [
    // Small, fast-adapting segments: refills (and their fences) happen all the time.
    // The global tag lives on the named Redis (b), the others on the default one.
    { tag: TAGS.global, mode: 'segment', step: 1000, min_step: 200, max_step: 200000, target_seconds: 2, redis: 'b' },
    {
      tag: TAGS.node,
      mode: 'segment',
      order: 'node',
      node_block: 500,
      step: 1000,
      min_step: 200,
      max_step: 200000,
      target_seconds: 2,
    },
    { tag: TAGS.snowflake, mode: 'snowflake' },
    {
      tag: TAGS.rule,
      mode: 'rule',
      template: '{yyyy}{MM}{dd}{HH}{mm}-{counter:7}',
      min_counter: 0,
      max_counter: 9999999,
      reset_seconds: 60,
    },
  ];
  for (const body of bodies) {
    const r = await fetch(`${url}/v1/admin/tags`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10000),
    });
    if (r.status !== 201) throw new Error(`creating tag ${body.tag}: ${r.status} ${await r.text()}`);
  }
}

/** One ID of every tag from a process, retried until it works (leases taken, segments warm). */
async function warm(url: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (const path of [
    `/v1/id/${TAGS.global}`,
    `/v1/id/${TAGS.node}`,
    `/v1/id/${TAGS.snowflake}`,
    `/v1/id/${TAGS.rule}?app=${APPS[0]}`,
  ]) {
    for (;;) {
      const r = await fetch(url + path, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      if (r?.status === 200) break;
      if (Date.now() > until) throw new Error(`${url}${path} not served within ${timeoutMs} ms (${r?.status})`);
      await sleep(200);
    }
  }
}

export async function runCampaign(o: CampaignOptions): Promise<CampaignResult> {
  const log = o.log ?? ((line: string) => console.error(`[chaos] ${line}`));
  const runId = `${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${randomBytes(2).toString('hex')}`;
  const chaosRoot = join(o.root, '.data', 'chaos');
  const workRoot = join(chaosRoot, 'work');
  for (const r of ChildRegistry.reapLeftovers(workRoot)) log(`killed a leftover of an earlier run: ${r}`);
  const workDir = join(workRoot, runId);
  const outDir = o.outDir ?? join(chaosRoot, 'runs', runId);
  mkdirSync(workDir, { recursive: true });
  mkdirSync(outDir, { recursive: true });
  const reg = new ChildRegistry(runId, workDir);
  const adminToken = randomBytes(12).toString('hex');
  const clients: ChildProcess[] = [];
  const openProxies: FaultProxy[] = [];

  // Whatever happens from here on, every child dies.
  let aborted = false;
  const abort = (why: string, code: number) => {
    if (aborted) return;
    aborted = true;
    log(`${why}: killing every child`);
    reg.killAll();
    rmSync(workDir, { recursive: true, force: true });
    process.exit(code);
  };
  const onSigint = () => abort('interrupted', 130);
  const onSigterm = () => abort('terminated', 143);
  process.once('SIGINT', onSigint);
  process.once('SIGTERM', onSigterm);
  const hard = setTimeout(() => abort(`hard deadline (${o.durationS + 240} s) reached`, 3), (o.durationS + 240) * 1000);

  try {
    const topology = o.topology ?? 'single';
    const sentinel = topology === 'sentinel' ? await ChaosSentinel.create(reg, join(workDir, 'sentinel')) : undefined;
    const redis = sentinel ? undefined : new ChaosRedis(reg, await freePort(), join(workDir, 'redis'));
    await redis?.start();
    await sentinel?.start();
    const redisB = new ChaosRedis(reg, await freePort(), join(workDir, 'redis-b'));
    await redisB.start();
    const mysql = new ChaosMysql(reg, await freePort(), join(chaosRoot, 'mysql-template'), workDir);
    log('preparing MariaDB (the first run creates a template data directory)');
    mysql.prepare();
    await mysql.start();
    // idmint reaches every store through a fault proxy (network faults).
    // (The sentinels name the master's own address: no proxy sits in front of a Sentinel group.)
    const proxies: Partial<Record<NetTarget, FaultProxy>> & Record<'redis-b' | 'mysql', FaultProxy> = {
      ...(redis ? { redis: await FaultProxy.start(redis.port, { seed: o.seed }) } : {}),
      'redis-b': await FaultProxy.start(redisB.port, { seed: o.seed + 1 }),
      mysql: await FaultProxy.start(mysql.port, { seed: o.seed + 2 }),
    };
    openProxies.push(...Object.values(proxies));
    log(
      `own ${redis ? `redis-server on 127.0.0.1:${redis.port}` : `Sentinel group (servers ${sentinel!.servers.join(', ')}, sentinels ${sentinel!.seeds})`} (default) and ${redisB.port} (b), mariadbd on 127.0.0.1:${mysql.port}; proxies ${Object.values(
        proxies,
      )
        .map((p) => p.port)
        .join(', ')}`,
    );
    const mysqlViaProxy = new URL(mysql.url('idmint'));
    mysqlViaProxy.port = String(proxies.mysql.port);

    const pool = await ServerPool.create(reg, o.servers, {
      root: o.root,
      outDir,
      // With sentinels REDIS_URL gives only the master's credentials and database.
      redisUrl: proxies.redis?.url ?? 'redis://127.0.0.1',
      mysqlUrl: mysqlViaProxy.toString(),
      adminToken,
      runId,
      env: {
        LEASE_TTL_MS: '3000',
        LEASE_MARGIN_MS: '500',
        REFILL_CONCURRENCY: '2',
        REDIS_URLS: `b=${proxies['redis-b'].url}`,
        ...(sentinel ? { REDIS_SENTINELS: sentinel.seeds, REDIS_SENTINEL_MASTER: SENTINEL_MASTER } : {}),
      },
    });
    await pool.start(0); // migrates the schema
    await Promise.all(Array.from({ length: o.servers - 1 }, (_, i) => pool.start(i + 1)));
    await createTags(pool.url(0), adminToken);
    for (let s = 0; s < pool.size; s++) await warm(pool.url(s), 30000);
    log(`${o.servers} idmint processes up; tags ${Object.values(TAGS).join(', ')}`);

    // Clients.
    const progress = new Map<string, { ids: number; requests: number; failed: number }>();
    const slots = Array.from({ length: pool.size }, (_, s) => ({ http: pool.url(s), udpPort: pool.udpPort(s) }));
    for (let k = 0; k < o.clients; k++) {
      const name = `c${k}`;
      const settings: ClientSettings = {
        name,
        seed: o.seed * 101 + k,
        out: join(outDir, `records-${name}.jsonl`),
        slots,
        tags: TAGS,
        apps: APPS,
        pauseMs: o.pauseMs ?? 5,
        hardDeadline: Date.now() + (o.durationS + 60) * 1000,
      };
      const child = reg.add(
        fork(join(o.root, 'scripts/chaos/client.ts'), [], {
          execArgv: ['--import', 'tsx'],
          cwd: o.root,
          env: reg.env({ CHAOS_CLIENT: JSON.stringify(settings) }),
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        }),
      );
      child.on('message', (m: { progress?: { ids: number; requests: number; failed: number } }) => {
        if (m.progress) progress.set(name, m.progress);
      });
      clients.push(child);
    }

    const plan = planFaults(o.seed, o.durationS, o.servers, o.faultEveryS, topology);
    writeFileSync(
      join(outDir, 'plan.json'),
      JSON.stringify(
        { seed: o.seed, durationS: o.durationS, servers: o.servers, clients: o.clients, topology, plan },
        null,
        1,
      ),
    );
    const faults = new FaultRunner(pool, [redis, redisB], mysql, proxies, log, sentinel, TAGS.node);
    const startedAt = Date.now();
    const faultRun = faults.run(plan, startedAt);
    const every = o.durationS > 30 ? 5000 : 2500;
    const ticker = setInterval(() => {
      let ids = 0;
      let failed = 0;
      for (const p of progress.values()) {
        ids += p.ids;
        failed += p.failed;
      }
      const fc = [...faults.counts()].map(([k, v]) => `${k} ${v}`).join(', ');
      log(
        `${Math.round((Date.now() - startedAt) / 1000)}/${o.durationS} s: ${ids} IDs, ${failed} failed requests, ${faults.done.length} faults${fc ? ` (${fc})` : ''}`,
      );
    }, every);
    await sleep(o.durationS * 1000);
    faults.stop();
    await faultRun;
    await faults.settle();
    clearInterval(ticker);

    // Stop the clients first (they flush their records), then idmint, then the stores.
    log('stopping clients');
    await Promise.all(
      clients.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const gone = new Promise((r) => c.once('exit', r));
        if (c.connected) c.send('stop');
        const t = setTimeout(() => c.kill('SIGKILL'), 20000);
        await gone;
        clearTimeout(t);
      }),
    );
    log('stopping idmint, MariaDB and Redis');
    await pool.stopAll();
    for (const p of openProxies) await p.close();
    await mysql.stop();
    await redis?.kill();
    await sentinel?.kill();
    await redisB.kill();
    clearTimeout(hard);

    writeFileSync(join(outDir, 'instances.json'), JSON.stringify(pool.instances, null, 1));
    faults.write(join(outDir, 'faults.jsonl'));
    for (const i of pool.unexpectedExits)
      log(`idmint ${i.nodeId} exited on its own (${i.end}): see server-${i.slot}-${i.n}.log`);

    log('checking the records');
    const checker = new Checker(TAG_MODES, pool.instances, faults.done);
    for (const f of readdirSync(outDir).filter((f) => f.startsWith('records-'))) {
      for await (const rec of readRecords(join(outDir, f))) checker.add(rec);
    }
    const report = checker.finish();
    const crashes = pool.unexpectedExits.length;
    const unhealed = faults.unhealed();
    const summary =
      summaryLine(report) +
      (crashes ? `, ${crashes} idmint processes exited on their own` : '') +
      (unhealed.length ? `, ${unhealed.length} faults not healed in time (${unhealed.join('; ')})` : '');
    writeFileSync(
      join(outDir, 'report.json'),
      JSON.stringify({ summary, ...report, crashes: pool.unexpectedExits, unhealed }, null, 1),
    );
    writeFileSync(join(outDir, 'summary.txt'), summary + '\n');
    return { report, summary, outDir, exitCode: problems(report) > 0 || crashes > 0 || unhealed.length > 0 ? 1 : 0 };
  } catch (err) {
    reg.killAll();
    throw err;
  } finally {
    clearTimeout(hard);
    process.removeListener('SIGINT', onSigint);
    process.removeListener('SIGTERM', onSigterm);
    reg.killAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}
