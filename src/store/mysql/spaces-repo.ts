// Which worker-id spaces have ever been used (see sql/004_worker_spaces.sql).
import type { Pool, ResultSetHeader } from 'mysql2/promise';

export class SpacesRepo {
  constructor(private readonly pool: Pool) {}

  /** Records the space; true when it was never used before. */
  async markUsed(workerBits: number): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>(
      'INSERT IGNORE INTO idmint_worker_spaces (worker_bits) VALUES (?)',
      [workerBits],
    );
    return result.affectedRows === 1;
  }
}
