// suite: single — MySQL schema migrations only
// Schema migrations: applied once, safe when several processes start at the same moment.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { RowDataPacket } from 'mysql2/promise';
import { migrate, readMigrations } from '../../src/store/mysql/migrations.js';
import { createPool } from '../../src/store/mysql/pool.js';
import { cleanup, testNames } from '../../tools/env.js';

describe('migrations', () => {
  const names = testNames();
  after(() => cleanup(names));

  it('are applied exactly once when five processes start together', async () => {
    const pools = await Promise.all(Array.from({ length: 5 }, () => createPool(names.mysqlUrl)));
    try {
      const applied = await Promise.all(pools.map((p) => migrate(p)));
      const all = applied.flat();
      assert.deepEqual(
        all.sort(),
        readMigrations()
          .map((m) => m.name)
          .sort(),
        'each migration applied by exactly one caller',
      );
      assert.deepEqual(await migrate(pools[0]), [], 'a later start applies nothing');
      const [rows] = await pools[0].query<RowDataPacket[]>('SELECT COUNT(*) AS n FROM idmint_schema_migrations');
      assert.equal(Number(rows[0].n), readMigrations().length);
      const [tables] = await pools[0].query<RowDataPacket[]>("SHOW TABLES LIKE 'idmint_%'");
      assert.ok(tables.length >= 4);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
