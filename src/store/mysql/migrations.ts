// Applies the numbered files in sql/ in order, once each, under a MySQL named lock so that
// processes starting together do not race. Statements are idempotent as well.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool, RowDataPacket } from 'mysql2/promise';

const SQL_DIR = fileURLToPath(new URL('../../../sql/', import.meta.url));

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: string[];
}

export function readMigrations(dir = SQL_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8')
        .split('\n')
        .filter((l) => !l.trim().startsWith('--'))
        .join('\n');
      return {
        version: Number(file.slice(0, 3)),
        name: file,
        statements: text
          .split(/;\s*(?:\n|$)/)
          .map((s) => s.trim())
          .filter(Boolean),
      };
    });
}

/** Returns the names of the migrations this call applied. */
export async function migrate(pool: Pool, lockTimeoutS = 30): Promise<string[]> {
  const conn = await pool.getConnection();
  const applied: string[] = [];
  try {
    const [lock] = await conn.query<RowDataPacket[]>('SELECT GET_LOCK(?, ?) AS ok', ['idmint_migrate', lockTimeoutS]);
    if (Number(lock[0].ok) !== 1) throw new Error('could not take the migration lock within 30 s');
    try {
      await conn.query(`CREATE TABLE IF NOT EXISTS idmint_schema_migrations (
        version INT NOT NULL PRIMARY KEY, name VARCHAR(128) NOT NULL,
        applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) ENGINE=InnoDB`);
      const [rows] = await conn.query<RowDataPacket[]>('SELECT version FROM idmint_schema_migrations');
      const done = new Set(rows.map((r) => Number(r.version)));
      for (const migration of readMigrations()) {
        if (done.has(migration.version)) continue;
        for (const statement of migration.statements) await conn.query(statement);
        await conn.query('INSERT INTO idmint_schema_migrations (version, name) VALUES (?, ?)', [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.name);
      }
    } finally {
      await conn.query('SELECT RELEASE_LOCK(?)', ['idmint_migrate']);
    }
  } finally {
    conn.release();
  }
  return applied;
}
