// The MySQL pool. BIGINTs come back as decimal strings (never lossy doubles); the database
// named in MYSQL_URL is created when missing. Every pool.query is bounded: a MySQL that stops
// answering (a silent network, no RST, no FIN) fails the query after MYSQL_QUERY_TIMEOUT_MS,
// and the connection it waited on is closed, never handed to another caller. A MySQL that
// cannot be reached (refused, cut, unanswered, past the bound) fails with UNAVAILABLE, which
// every transport answers as "retry" (HTTP 503), never as an internal fault.
import mysql, { type Pool, type PoolConnection } from 'mysql2/promise';
import { IdmintError, unavailable } from '../../errors.js';
import { lateTimeout } from '../../late-timeout.js';

/** Errors of a connection that could not be made or was lost: MySQL is unreachable, not wrong. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
]);

/** err as UNAVAILABLE when it says MySQL cannot be reached (a lost or refused connection); else as it is. */
export function storeError(err: unknown): unknown {
  if (err instanceof IdmintError) return err;
  const failure = err as { code?: unknown; fatal?: unknown; message?: unknown };
  // "Pool is closed.": a pool the node replaced (pool-supervisor.ts) refusing what waited on it.
  const closed = failure?.message === 'Pool is closed.';
  if (
    failure &&
    typeof failure === 'object' &&
    (closed || failure.fatal === true || (typeof failure.code === 'string' && UNREACHABLE.has(failure.code)))
  ) {
    return unavailable(`MySQL cannot be reached: ${String(failure.message ?? failure.code)}`, err);
  }
  return err;
}

export function poolOptions(mysqlUrl: string): mysql.PoolOptions {
  const url = new URL(mysqlUrl);
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username || 'root'),
    password: decodeURIComponent(url.password),
    database: url.pathname.replace(/^\//, ''),
    supportBigNumbers: true,
    bigNumberStrings: true,
    connectionLimit: 8,
    connectTimeout: 3000,
    enableKeepAlive: true,
    timezone: 'Z',
  };
}

/** Default of MYSQL_QUERY_TIMEOUT_MS. */
export const DEFAULT_QUERY_TIMEOUT_MS = 2000;

/** Creates the database when missing, then a pool on it whose queries are bounded by queryTimeoutMs. */
export async function createPool(mysqlUrl: string, queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS): Promise<Pool> {
  const opts = poolOptions(mysqlUrl);
  const admin = await mysql.createConnection({ ...opts, database: undefined });
  try {
    await admin.query(`CREATE DATABASE IF NOT EXISTS \`${opts.database}\``);
  } finally {
    await admin.end();
  }
  return boundQueries(mysql.createPool(opts), queryTimeoutMs);
}

/**
 * Makes pool.query fail with an Error after ms (waiting for a connection included) and close
 * the connection of a query that timed out. Transactions (getConnection) bound themselves.
 */
export function boundQueries(pool: Pool, ms: number): Pool {
  const run = async (args: unknown[]): Promise<unknown> => {
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = lateTimeout(() => {
        timedOut = true;
        reject(unavailable(`MySQL did not answer within ${ms} ms`));
      }, ms);
    });
    const got = pool.getConnection();
    let connection: PoolConnection;
    try {
      connection = await Promise.race([got, timeout]);
    } catch (err) {
      clearTimeout(timer);
      // A connection that arrives after the caller gave up goes back to the pool unused.
      got.then(
        (late) => late.release(),
        () => undefined,
      );
      throw storeError(err);
    }
    const query = (connection.query as (...params: unknown[]) => Promise<unknown>).apply(connection, args);
    try {
      return await Promise.race([query, timeout]);
    } catch (err) {
      throw storeError(err);
    } finally {
      clearTimeout(timer);
      query.catch(() => undefined);
      if (timedOut) connection.destroy();
      else connection.release();
    }
  };
  (pool as unknown as { query: (...params: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => run(args);
  return pool;
}
