// Per-tag client tokens (sql/007_client_tokens.sql): created with a random secret shown once,
// stored as SHA-256, revoked by id.
import { randomBytes } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { hashToken } from '../../token-hash.js';

export interface TokenInfo {
  readonly id: number;
  readonly name: string;
  readonly createdAt: string;
}

export class TokensRepo {
  constructor(private readonly pool: Pool) {}

  /** Creates a token; the returned secret is not stored and cannot be shown again. */
  async create(tag: string, name: string): Promise<TokenInfo & { token: string }> {
    const token = `idm_${randomBytes(24).toString('base64url')}`;
    const [result] = await this.pool.query<ResultSetHeader>(
      'INSERT INTO idmint_client_tokens (tag, name, token_hash) VALUES (?, ?, ?)',
      [tag, name, hashToken(token)],
    );
    return { id: result.insertId, name, createdAt: new Date().toISOString(), token };
  }

  async list(tag: string): Promise<TokenInfo[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT id, name, created_at FROM idmint_client_tokens WHERE tag = ? AND revoked_at IS NULL ORDER BY id',
      [tag],
    );
    return rows.map((r) => ({ id: Number(r.id), name: r.name, createdAt: new Date(r.created_at).toISOString() }));
  }

  /** Hashes of a tag's live tokens. */
  async hashes(tag: string): Promise<string[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT token_hash FROM idmint_client_tokens WHERE tag = ? AND revoked_at IS NULL',
      [tag],
    );
    return rows.map((r) => String(r.token_hash));
  }

  /** True when a live token was revoked. */
  async revoke(tag: string, id: number): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>(
      'UPDATE idmint_client_tokens SET revoked_at = CURRENT_TIMESTAMP(3) WHERE tag = ? AND id = ? AND revoked_at IS NULL',
      [tag, id],
    );
    return result.affectedRows === 1;
  }
}
