// Keeps the node's MySQL pool handing out connections until the node itself ends it. mysql2's
// pool (3.x, lib/base/pool.js) has two ways to stop serving for good without idmint asking:
// - every slot (connectionLimit) held by a caller that never gives its connection back: a
//   transaction whose ROLLBACK (or any command awaited without a bound) waits on a peer that
//   went silent with no RST or FIN holds its connection forever; once all are held,
//   getConnection queues forever and every bounded pool.query times out, for as long as the
//   process lives (a kernel gives up on a silent peer only after its retransmissions, about
//   15 min, or never when a proxy acknowledges on the server's behalf);
// - the pool closed (`_closed`: "Pool is closed." for every caller from then on).
// A silent peer under idle connections is not one of them: each bounded query that times out
// closes its connection, so the pool heals by itself, one failed query per stale connection.
//
// A probe asks the pool for `SELECT 1` every PROBE_MS, bounded by MYSQL_QUERY_TIMEOUT_MS
// (waiting for a connection included). When FAILURES_TO_REPLACE probes in a row fail while no
// connection came back to the pool during them (a busy pool gives connections back all the
// time; a wedged one never), and a fresh connection to the same server answers (MySQL itself
// is fine: the pool is not), or at once when the pool is closed, the pool is replaced by a new
// one, after a backoff that grows per replacement in the episode. Every holder goes on through
// `pool`, which forwards to whichever pool is current. The old pool is ended without waiting
// for it; sockets still open on it after MYSQL_QUERY_TIMEOUT_MS are destroyed with an error, so
// what waits on them fails as a lost connection (UNAVAILABLE) and its caller retries (mysql2's
// own `destroy()` would not do: it half-closes the socket and fails no command waiting on it). One warning
// per episode, one info line when a probe answers again, idmint_connection_restarts_total
// {server="mysql",role="pool"} counts the episodes, and `down()` names the episode for /readyz.
import mysql, { type Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import { withinLate } from '../../late-timeout.js';
import { reopenDelayMs } from '../redis/supervisor.js';
import { boundQueries, poolOptions } from './pool.js';

/** Interval between probes (a probe still running delays the next). */
export const PROBE_MS = 1000;
/** Probes in a row that fail, with no connection coming back meanwhile, before the pool is replaced. */
export const FAILURES_TO_REPLACE = 3;

/** What the supervisor reads of mysql2's pool beneath the promise wrapper (mysql2 3.x internals). */
interface CorePool {
  _closed: boolean;
  _allConnections: { length: number; get(index: number): CoreConnection };
  releaseConnection(connection: unknown): void;
}

/** mysql2's connection: its `destroy()` only half-closes the socket and fails nothing that waits on it. */
interface CoreConnection {
  on(event: 'error', fn: () => void): void;
  stream?: { destroy(err?: Error): void };
}

const core = (p: Pool): CorePool => (p as unknown as { pool: CorePool }).pool;

export class PoolSupervisor {
  /** The pool every holder uses: it forwards to the current one. */
  readonly pool: Pool;
  private current: Pool;
  /** Connections given back to the current pool (or dropped from it) so far. */
  private releases = 0;
  private failures = 0;
  private probing = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private episode?: { since: number; attempts: number; reason: string; nextAt: number };

  constructor(
    private readonly mysqlUrl: string,
    first: Pool,
    private readonly queryTimeoutMs: number,
    private readonly log: Logger,
    private readonly onRestart: () => void = () => undefined,
  ) {
    this.current = this.counted(first);
    const end = () => {
      this.stop();
      return this.current.end();
    };
    this.pool = new Proxy({} as Pool, {
      get: (_t, key) => {
        if (key === 'end') return end;
        const current = this.current as unknown as Record<PropertyKey, unknown>;
        const member = current[key];
        return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(current) : member;
      },
    });
  }

  /** Starts probing. */
  start(): this {
    this.timer = setInterval(() => void this.probe(), PROBE_MS);
    this.timer.unref();
    return this;
  }

  /** Why the pool cannot serve while it is being replaced, or undefined. */
  down(): string | undefined {
    const episode = this.episode;
    return episode
      ? `MySQL pool stopped handing out connections (${episode.reason}); replaced ${episode.attempts} time(s) so far`
      : undefined;
  }

  /** Shutdown: nothing is replaced from now on. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** One probe of the current pool; replaces it when it is wedged. */
  async probe(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    try {
      const current = this.current;
      const closed = core(current)._closed;
      const releasedBefore = this.releases;
      let failed: string | undefined = closed ? 'pool closed' : undefined;
      if (!closed) await current.query('SELECT 1').catch((err: Error) => (failed = err.message));
      if (this.stopped || current !== this.current) return;
      if (failed === undefined) return this.answered();
      // Connections came back meanwhile: the pool is slow, not stuck.
      this.failures = this.releases === releasedBefore ? this.failures + 1 : 0;
      if (!closed && this.failures < FAILURES_TO_REPLACE) return;
      if (this.episode && performance.now() < this.episode.nextAt) return;
      // MySQL itself not answering is an outage a new pool would not help with.
      if (!closed && !(await this.freshAnswers())) return;
      if (this.stopped || current !== this.current) return;
      this.replace(failed);
    } finally {
      this.probing = false;
    }
  }

  private answered(): void {
    this.failures = 0;
    const episode = this.episode;
    if (!episode) return;
    this.episode = undefined;
    this.log.info(
      {
        server: 'mysql',
        role: 'pool',
        attempts: episode.attempts,
        downMs: Math.round(performance.now() - episode.since),
      },
      'MySQL pool serving again',
    );
  }

  /** Whether a new connection to the same server answers SELECT 1 within the query bound. */
  private async freshAnswers(): Promise<boolean> {
    let connection: mysql.Connection | undefined;
    let gaveUp = false;
    const work = (async () => {
      const conn = await mysql.createConnection(poolOptions(this.mysqlUrl));
      if (gaveUp) return conn.destroy();
      connection = conn;
      await conn.query('SELECT 1');
    })();
    try {
      await withinLate(work, this.queryTimeoutMs + 3000, () => new Error('no answer'));
      return true;
    } catch {
      return false;
    } finally {
      gaveUp = true;
      connection?.destroy();
      work.catch(() => undefined);
    }
  }

  private replace(reason: string): void {
    const now = performance.now();
    if (!this.episode) {
      this.episode = { since: now, attempts: 0, reason, nextAt: now };
      this.log.warn(
        { server: 'mysql', role: 'pool', reason },
        'MySQL pool stopped handing out connections; replacing it with backoff until one answers',
      );
      this.onRestart();
    }
    this.episode.attempts++;
    this.episode.nextAt = now + reopenDelayMs(this.episode.attempts);
    const old = this.current;
    this.current = this.counted(boundQueries(mysql.createPool(poolOptions(this.mysqlUrl)), this.queryTimeoutMs));
    this.failures = 0;
    this.retire(old);
  }

  /**
   * Ends old without waiting on it; the sockets still open on it after the query bound are
   * destroyed with an error, so every command waiting on them fails as a lost connection.
   */
  private retire(old: Pool): void {
    const corePool = core(old);
    old.end().catch(() => undefined);
    setTimeout(() => {
      const open = Array.from({ length: corePool._allConnections.length }, (_, i) => corePool._allConnections.get(i));
      for (const conn of open) {
        conn.on('error', () => undefined);
        conn.stream?.destroy(
          Object.assign(new Error('MySQL pool replaced: connection dropped'), { code: 'PROTOCOL_CONNECTION_LOST' }),
        );
      }
    }, this.queryTimeoutMs).unref();
  }

  /** `pool`, counting every connection given back to it (or dropped from it). */
  private counted(pool: Pool): Pool {
    const corePool = core(pool);
    const release = corePool.releaseConnection.bind(corePool);
    corePool.releaseConnection = (conn: unknown) => {
      this.releases++;
      release(conn);
    };
    return pool;
  }
}
