// The chaos campaign's Sentinel topology: its default Redis is a master, a replica and three
// sentinels (quorum 2, down-after-milliseconds 1000, failover-timeout 5000) on free loopback
// ports, every process a registered child (as scripts/redis-sentinel.sh sets them up, but
// reaped with the run). idmint finds the master through REDIS_SENTINELS; the failover fault
// either asks a sentinel for SENTINEL FAILOVER or SIGKILLs the master, waits for the sentinels
// to promote the replica, and starts the killed server again (empty; the sentinels make it a
// replica of the new master).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, waitPort } from '../../tools/child.js';
import { withRedisPort } from '../../tools/redis-server.js';
import type { ChildRegistry } from './services.js';

export const SENTINEL_MASTER = 'chaos';

async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`${what} not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

export class ChaosSentinel {
  private readonly procs = new Map<number, ChildProcess>();

  private constructor(
    private readonly reg: ChildRegistry,
    private readonly dir: string,
    /** The two data servers' ports (either may be master) and the sentinels'. */
    readonly servers: readonly [number, number],
    readonly sentinels: readonly number[],
  ) {}

  static async create(reg: ChildRegistry, dir: string): Promise<ChaosSentinel> {
    const servers: [number, number] = [await freePort(), await freePort()];
    const sentinels = [await freePort(), await freePort(), await freePort()];
    return new ChaosSentinel(reg, dir, servers, sentinels);
  }

  /** REDIS_SENTINELS for idmint. */
  get seeds(): string {
    return this.sentinels.map((p) => `127.0.0.1:${p}`).join(',');
  }

  async start(): Promise<void> {
    await this.startServer(this.servers[0]);
    await this.startServer(this.servers[1], this.servers[0]);
    for (const p of this.sentinels) {
      const dir = join(this.dir, String(p));
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'sentinel.conf'),
        [
          `port ${p}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${this.servers[0]} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
          '',
        ].join('\n'),
      );
      this.spawn(p, [join(dir, 'sentinel.conf'), '--sentinel'], dir);
      await waitPort(p, true, 10000, 'redis-sentinel');
    }
    await until('the sentinels seeing the master, its replica and each other', () => this.settled(), 30000);
  }

  /** host:port of the master, as the first sentinel that answers names it. */
  async master(): Promise<number> {
    for (const p of this.sentinels) {
      const a = await withRedisPort(
        p,
        (s) => s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER) as Promise<string[]>,
      ).catch(() => undefined);
      if (a) return Number(a[1]);
    }
    throw new Error('no sentinel answers');
  }

  /**
   * Every sentinel names the same master, which sees its replica online, and knows the replica and the other two
   * sentinels.
   */
  async settled(): Promise<boolean> {
    const views = await Promise.all(
      this.sentinels.map((p) =>
        withRedisPort(p, async (s) => {
          const m = (await s.call('SENTINEL', 'MASTER', SENTINEL_MASTER)) as string[];
          const f = (k: string) => m[m.indexOf(k) + 1];
          return f('flags') === 'master' && f('num-slaves') === '1' && f('num-other-sentinels') === '2'
            ? f('port')
            : '';
        }),
      ),
    );
    if (!views[0] || views.some((v) => v !== views[0])) return false;
    const info = await withRedisPort(Number(views[0]), (r) => r.info('replication'));
    return /role:master/.test(info) && /slave0:.*state=online/.test(info);
  }

  /**
   * The failover fault: `forced` asks a sentinel for SENTINEL FAILOVER; otherwise the master is
   * SIGKILLed, the sentinels promote the replica, and after holdMs the killed server starts
   * again (empty). Resolves with what happened once the group has settled again.
   */
  async failover(forced: boolean, holdMs: number): Promise<string> {
    await until('the Sentinel group settled before the failover', () => this.settled(), 30000);
    const old = await this.master();
    const t0 = Date.now();
    if (forced) {
      await withRedisPort(this.sentinels[0], (s) => s.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER));
    } else {
      const p = this.procs.get(old);
      p?.kill('SIGKILL');
      await waitPort(old, false, 10000, 'redis-server');
    }
    await until('a new master named by the sentinels', async () => (await this.master()) !== old, 30000);
    const switchMs = Date.now() - t0;
    if (!forced) {
      await sleep(holdMs);
      const other = this.servers.find((p) => p !== old)!;
      await this.startServer(old, other);
    }
    await until('the Sentinel group settled after the failover', () => this.settled(), 30000);
    return forced
      ? `SENTINEL FAILOVER: master ${old} -> ${await this.master()} after ${switchMs} ms`
      : `master ${old} SIGKILLed: ${await this.master()} promoted after ${switchMs} ms, ${old} back empty after ${holdMs} ms more`;
  }

  /** SIGKILLs every process of the group. */
  async kill(): Promise<void> {
    for (const p of this.procs.values()) p.kill('SIGKILL');
    this.procs.clear();
  }

  private async startServer(port: number, replicaOf?: number): Promise<void> {
    const dir = join(this.dir, String(port));
    mkdirSync(dir, { recursive: true });
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--dir',
      dir,
    ];
    args.push('--repl-diskless-sync-delay', '0');
    if (replicaOf !== undefined) args.push('--replicaof', '127.0.0.1', String(replicaOf));
    this.spawn(port, args, dir);
    await waitPort(port, true, 10000, 'redis-server');
  }

  private spawn(port: number, args: string[], dir: string): void {
    const log = openSync(join(dir, 'redis.log'), 'a');
    const p = this.reg.add(spawn('redis-server', args, { stdio: ['ignore', log, log], env: this.reg.env() }));
    this.procs.set(port, p);
    p.once('exit', () => {
      if (this.procs.get(port) === p) this.procs.delete(port);
    });
  }
}
