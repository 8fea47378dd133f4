// Admin authentication: `Authorization: Bearer <ADMIN_TOKEN>` (or, for pages a browser opens,
// the cookie `idmint_admin` holding the token), compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../errors.js';
import { sendError } from './errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const ADMIN_COOKIE = 'idmint_admin';

function cookieToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === ADMIN_COOKIE) {
      try {
        return decodeURIComponent(v.join('='));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * An onRequest hook that answers 401 itself (rather than throwing), so it holds in scopes
 * with an error handler of their own, such as Bull Board's.
 */
export function adminGuard(token: string): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const check = tokenCheck(token);
  return async (req, reply) => {
    try {
      check(req);
    } catch (err) {
      await sendError(reply, err as IdmintError);
    }
  };
}

function tokenCheck(token: string): (req: FastifyRequest) => void {
  const want = digest(token);
  return (req) => {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
    const given = m?.[1] ?? cookieToken(req.headers.cookie);
    if (given === undefined) throw new IdmintError('UNAUTHORIZED', 'send Authorization: Bearer <admin token>');
    if (!timingSafeEqual(digest(given), want)) throw new IdmintError('UNAUTHORIZED', 'the admin token is wrong');
  };
}
