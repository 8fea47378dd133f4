// The MySQL pool. BIGINTs come back as decimal strings (never lossy doubles); the database
// named in MYSQL_URL is created when missing.
import mysql, { type Pool } from 'mysql2/promise';

export function poolOptions(mysqlUrl: string): mysql.PoolOptions {
  const u = new URL(mysqlUrl);
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database: u.pathname.replace(/^\//, ''),
    supportBigNumbers: true,
    bigNumberStrings: true,
    connectionLimit: 8,
    connectTimeout: 3000,
    enableKeepAlive: true,
    timezone: 'Z',
  };
}

/** Creates the database when missing, then a pool on it. */
export async function createPool(mysqlUrl: string): Promise<Pool> {
  const opts = poolOptions(mysqlUrl);
  const admin = await mysql.createConnection({ ...opts, database: undefined });
  try {
    await admin.query(`CREATE DATABASE IF NOT EXISTS \`${opts.database}\``);
  } finally {
    await admin.end();
  }
  return mysql.createPool(opts);
}
