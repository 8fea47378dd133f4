// Admin authentication: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { IdmintError } from '../errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function adminGuard(token: string): (req: FastifyRequest) => Promise<void> {
  const want = digest(token);
  return async (req) => {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
    if (!m) throw new IdmintError('UNAUTHORIZED', 'send Authorization: Bearer <admin token>');
    if (!timingSafeEqual(digest(m[1]), want)) throw new IdmintError('UNAUTHORIZED', 'the admin token is wrong');
  };
}
