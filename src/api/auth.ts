// Admin authentication: `Authorization: Bearer <token>` (or, for pages a browser opens, the
// cookie `idmint_admin` holding the token, set by the server at the page's sign-in:
// admin/session-cookie.ts), compared in constant time. The admin token may do everything; the
// optional viewer token (VIEWER_TOKEN) may only read: GET and HEAD requests (and sign in).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../errors.js';
import { bearerToken } from './bearer.js';
import { sendError } from './errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export const ADMIN_COOKIE = 'idmint_admin';

/** What the caller's credential allows: everything, or reading only. */
export type AdminRole = 'admin' | 'viewer';

const READ_METHODS = new Set(['GET', 'HEAD']);
const roles = new WeakMap<FastifyRequest, AdminRole>();

/** The role the admin guard granted this request (undefined outside the admin scope). */
export function adminRole(req: FastifyRequest): AdminRole | undefined {
  return roles.get(req);
}

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
 * An onRequest hook that answers 401 (no or wrong token) and 403 (the viewer token on a
 * request that is not a read) itself, rather than throwing, so it holds in scopes with an
 * error handler of their own, such as Bull Board's.
 */
export function adminGuard(
  adminToken: string,
  viewerToken = '',
  /** The viewer may use every method (a route that changes nothing whatever its method: the sign-in). */
  viewerAnyMethod = false,
): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const check = tokenCheck(adminToken, viewerToken);
  return async (req, reply) => {
    try {
      const role = check(req);
      if (role === 'viewer' && !viewerAnyMethod && !READ_METHODS.has(req.method)) {
        throw new IdmintError('FORBIDDEN', `the viewer token may only read; ${req.method} needs the admin token`);
      }
      roles.set(req, role);
    } catch (err) {
      await sendError(reply, err as IdmintError);
    }
  };
}

/**
 * The role a token carries: the admin token, the viewer token (when one is set), or neither
 * (undefined). Both comparisons run in constant time whatever the first answered, so timing
 * tells nothing either. Shared by the admin guard and by decoding a permuted tag's IDs.
 */
export function roleOfToken(adminToken: string, viewerToken = ''): (given: string | undefined) => AdminRole | undefined {
  const admin = digest(adminToken);
  const viewer = viewerToken === '' ? undefined : digest(viewerToken);
  return (given) => {
    if (given === undefined) return undefined;
    const d = digest(given);
    const isAdmin = timingSafeEqual(d, admin);
    const isViewer = viewer !== undefined && timingSafeEqual(d, viewer);
    return isAdmin ? 'admin' : isViewer ? 'viewer' : undefined;
  };
}

function tokenCheck(adminToken: string, viewerToken: string): (req: FastifyRequest) => AdminRole {
  const roleOf = roleOfToken(adminToken, viewerToken);
  const wrong = viewerToken !== '' ? 'the token is neither the admin token nor the viewer token' : 'the admin token is wrong';
  return (req) => {
    const given = bearerToken(req.headers.authorization) ?? cookieToken(req.headers.cookie);
    if (given === undefined) throw new IdmintError('UNAUTHORIZED', 'send Authorization: Bearer <admin token>');
    const role = roleOf(given);
    if (role === undefined) throw new IdmintError('UNAUTHORIZED', wrong);
    return role;
  };
}

/** Whether a token is the admin or the viewer token: what decodes a permuted tag's IDs, on HTTP and gRPC. */
export function staffOf(c: { readonly adminToken: string; readonly viewerToken: string }): (token: string | undefined) => boolean {
  const roleOf = roleOfToken(c.adminToken, c.viewerToken);
  return (token) => roleOf(token) !== undefined;
}
