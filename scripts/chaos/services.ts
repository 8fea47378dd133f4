// The chaos campaign's own Redis and MariaDB: private servers on free loopback ports with data
// under .data/chaos/, never the shared ones on 6379/3306. Redis is restarted empty (SIGKILL,
// no persistence); MariaDB is stopped (SIGTERM, a clean shutdown) and started again. Every
// child the campaign spawns is registered in a pid file, so a run that was itself killed has
// its leftovers removed by the next one.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { waitPort } from '../../tools/child.js';

const MARK = 'IDMINT_CHAOS_RUN';

/**
 * Children of one run: each is spawned with IDMINT_CHAOS_RUN=<run id> in its environment and
 * listed in <work>/pids, so leftovers are recognised by that mark (never by name).
 */
export class ChildRegistry {
  private readonly live = new Set<ChildProcess>();
  private readonly pidFile: string;

  constructor(
    readonly runId: string,
    readonly workDir: string,
  ) {
    this.pidFile = join(workDir, 'pids');
    writeFileSync(join(workDir, 'runner.pid'), String(process.pid));
  }

  env(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(process.env as Record<string, string>), ...extra, [MARK]: this.runId };
  }

  add(p: ChildProcess): ChildProcess {
    this.live.add(p);
    p.once('exit', () => this.live.delete(p));
    writeFileSync(this.pidFile, `${p.pid}\n`, { flag: 'a' });
    return p;
  }

  /** SIGKILLs every child still alive (the last resort of a deadline or Ctrl-C). */
  killAll(): void {
    for (const p of this.live) {
      try {
        p.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  get size(): number {
    return this.live.size;
  }

  /**
   * Runs under `root` whose runner is dead: their children that still carry the run's mark
   * are SIGKILLed, and the run's work directory is removed.
   */
  static reapLeftovers(root: string): string[] {
    const reaped: string[] = [];
    if (!existsSync(root)) return reaped;
    for (const run of readdirSync(root)) {
      const dir = join(root, run);
      const runner = Number(readFileSafe(join(dir, 'runner.pid')));
      if (!runner || alive(runner)) continue;
      for (const pid of readFileSafe(join(dir, 'pids'))
        .split('\n')
        .map(Number)
        .filter((n) => n > 0)) {
        if (readFileSafe(`/proc/${pid}/environ`).split('\0').includes(`${MARK}=${run}`)) {
          try {
            process.kill(pid, 'SIGKILL');
            reaped.push(`${run}:${pid}`);
          } catch {
            // gone meanwhile
          }
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
    return reaped;
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => p.once('exit', () => r()));
}

/** redis-server without persistence: every start is empty. */
export class ChaosRedis {
  private proc?: ChildProcess;
  constructor(
    private readonly reg: ChildRegistry,
    readonly port: number,
    private readonly dir: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const log = openSync(join(this.dir, 'redis.log'), 'a');
    this.proc = this.reg.add(
      spawn(
        'redis-server',
        [
          '--port',
          String(this.port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--maxmemory-policy',
          'noeviction',
          '--dir',
          this.dir,
        ],
        {
          stdio: ['ignore', log, log],
          env: this.reg.env(),
        },
      ),
    );
    await waitPort(this.port, true, 10000, 'redis-server');
  }

  /** SIGKILL: every key is gone. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    p.kill('SIGKILL');
    await exited(p);
    this.proc = undefined;
    await waitPort(this.port, false, 10000, 'redis-server');
  }
}

/** A MariaDB server on a copy of a template data directory made once with mariadb-install-db. */
export class ChaosMysql {
  private proc?: ChildProcess;
  private readonly dataDir: string;

  constructor(
    private readonly reg: ChildRegistry,
    readonly port: number,
    private readonly templateDir: string,
    private readonly workDir: string,
  ) {
    this.dataDir = join(workDir, 'mysql');
  }

  url(db: string): string {
    return `mysql://root@127.0.0.1:${this.port}/${db}`;
  }

  /** Creates the template once (about 10 s), then copies it for this run. */
  prepare(): void {
    if (!existsSync(join(this.templateDir, 'mysql'))) {
      // Made aside and renamed, so a run that is stopped half-way leaves no broken template.
      const tmp = `${this.templateDir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      execFileSync(
        'mariadb-install-db',
        [
          '--no-defaults',
          `--datadir=${tmp}`,
          `--user=${userInfo().username}`,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          '--innodb-log-file-size=16M',
        ],
        { stdio: 'ignore' },
      );
      rmSync(this.templateDir, { recursive: true, force: true });
      renameSync(tmp, this.templateDir);
    }
    cpSync(this.templateDir, this.dataDir, { recursive: true });
  }

  async start(): Promise<void> {
    const log = openSync(join(this.workDir, 'mariadb.log'), 'a');
    this.proc = this.reg.add(
      spawn(
        existsSync('/usr/sbin/mariadbd') ? '/usr/sbin/mariadbd' : 'mariadbd',
        [
          '--no-defaults',
          `--datadir=${this.dataDir}`,
          `--port=${this.port}`,
          '--bind-address=127.0.0.1',
          `--socket=${join(this.dataDir, 'mysqld.sock')}`,
          `--pid-file=${join(this.dataDir, 'mysqld.pid')}`,
          `--user=${userInfo().username}`,
          '--innodb-buffer-pool-size=64M',
          '--innodb-log-file-size=16M',
          '--skip-log-bin',
          '--skip-name-resolve',
          '--max-connections=500',
        ],
        { stdio: ['ignore', log, log], env: this.reg.env() },
      ),
    );
    await waitPort(this.port, true, 60000, 'mariadbd');
  }

  /** A clean shutdown (SIGTERM), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 30000);
    await exited(p);
    clearTimeout(t);
    this.proc = undefined;
    await waitPort(this.port, false, 10000, 'mariadbd');
  }

  get running(): boolean {
    return this.proc !== undefined;
  }
}
