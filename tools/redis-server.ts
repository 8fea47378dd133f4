// A private redis-server on a free loopback port for fault tests: stop it, start it again
// empty, as a real restart without persistence does.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, waitPort } from './child.js';

/** Runs fn with a short-lived client of the server at url (errors do not go unhandled). */
export async function withRedis<T>(url: string, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { maxRetriesPerRequest: 3, connectTimeout: 2000 });
  r.on('error', () => undefined);
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/**
 * fn on a connection of its own to the Redis on 127.0.0.1:port, closed afterwards. It connects
 * once (a server that is down fails at once, with no retry): for asking one node of a cluster or
 * a Sentinel group while servers are killed and promoted. password: the server's ('' = none).
 */
export async function withRedisPort<T>(port: number, fn: (r: Redis) => Promise<T>, password = ''): Promise<T> {
  const r = new Redis(port, '127.0.0.1', {
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    lazyConnect: true,
    ...(password ? { password } : {}),
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

export class RedisServer {
  private proc?: ChildProcess;
  /** Working directory of the server (a replica writes the RDB it receives there). */
  private readonly dir = mkdtempSync(join(tmpdir(), 'idmint-redis-'));

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const s = new RedisServer(await freePort());
    await s.start();
    return s;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The server's process id while it runs (it is spawned directly, not through a shell). */
  get pid(): number | undefined {
    const p = this.proc;
    return p && p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }

  /** Starts the server (empty: nothing is persisted). */
  async start(): Promise<void> {
    this.proc = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: 'ignore' },
    );
    await waitPort(this.port, true, 10000, 'redis-server');
  }

  /** Kills the server abruptly (SIGKILL): all its data is gone. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
    await waitPort(this.port, false, 10000, 'redis-server');
  }

  /** Kills the server and removes its directory. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A restart that loses every key. */
  async restartEmpty(downMs = 0): Promise<void> {
    await this.kill();
    if (downMs > 0) await sleep(downMs);
    await this.start();
  }
}
