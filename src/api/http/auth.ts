// Admin authentication: `Authorization: Bearer <token>` (or, for pages a browser opens, the
// cookie `idmint_admin` holding the token, set by the server at the page's sign-in:
// admin/session-cookie.ts), compared in constant time. The admin token may do everything; the
// optional viewer token (VIEWER_TOKEN) may only read: GET and HEAD requests (and sign in).
// The cookie alone only reads: a write with it also needs a header no cross-site form can
// send (X-Idmint-Admin, or the browser's own Sec-Fetch-Site: same-origin). Failed sign-ins
// are counted, logged and slowed per source (auth-failures.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { IdmintError } from '../../errors.js';
import type { AuthFailures } from './auth-failures.js';
import { bearerToken, matchesToken, roleOfToken, type AdminRole } from '../credentials.js';
import { sendError } from '../error-policy.js';

export const ADMIN_COOKIE = 'idmint_admin';
/** The header the admin page sends with every request: a cross-site form cannot send it. */
export const ADMIN_WRITE_HEADER = 'x-idmint-admin';

/** The credentials the admin guard accepts, and where their failures are noted. */
export interface AdminAccess {
  readonly adminToken: string;
  readonly viewerToken: string;
  readonly failures?: AuthFailures;
}

const READ_METHODS = new Set(['GET', 'HEAD']);
const roles = new WeakMap<FastifyRequest, AdminRole>();

/** The role the admin guard granted this request (undefined outside the admin scope). */
export function adminRole(req: FastifyRequest): AdminRole | undefined {
  return roles.get(req);
}

function cookieToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [name, ...valueParts] = part.trim().split('=');
    if (name === ADMIN_COOKIE) {
      try {
        return decodeURIComponent(valueParts.join('='));
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
  access: AdminAccess,
  /** The viewer may use every method (a route that changes nothing whatever its method: the sign-in). */
  viewerAnyMethod = false,
): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const check = tokenCheck(access.adminToken, access.viewerToken);
  return async (req, reply) => {
    try {
      access.failures?.check(req.ip, 'http');
      let role: AdminRole;
      try {
        role = check(req);
      } catch (err) {
        // A wrong token is a guess; none at all (the page opened before signing in) is not.
        if (givenToken(req) !== undefined) access.failures?.fail(req.ip, 'http', (err as Error).message);
        throw err;
      }
      if (role === 'viewer' && !viewerAnyMethod && !READ_METHODS.has(req.method)) {
        throw new IdmintError('FORBIDDEN', `the viewer token may only read; ${req.method} needs the admin token`);
      }
      if (!READ_METHODS.has(req.method) && !writeAllowed(req)) {
        throw new IdmintError(
          'FORBIDDEN',
          `${req.method} with the session cookie alone is refused: send Authorization: Bearer <token>, or the header X-Idmint-Admin: 1 (as the admin page does)`,
        );
      }
      roles.set(req, role);
    } catch (err) {
      await sendError(reply, err as IdmintError);
    }
  };
}

/**
 * A request that is not a read carries more than the cookie a browser adds by itself: the
 * Bearer header, the admin page's header, or the browser's word that the page that sent it is
 * of this origin (Sec-Fetch-Site, which no page can set): a cross-site (or same-site,
 * other-origin) form can send none of them.
 */
function writeAllowed(req: FastifyRequest): boolean {
  const headers = req.headers;
  return (
    bearerToken(headers.authorization) !== undefined ||
    headers[ADMIN_WRITE_HEADER] !== undefined ||
    headers['sec-fetch-site'] === 'same-origin'
  );
}

/** The credential a request carries: the Bearer header's, else the session cookie's. */
function givenToken(req: FastifyRequest): string | undefined {
  return bearerToken(req.headers.authorization) ?? cookieToken(req.headers.cookie);
}

function tokenCheck(adminToken: string, viewerToken: string): (req: FastifyRequest) => AdminRole {
  const roleOf = roleOfToken(adminToken, viewerToken);
  const wrong =
    viewerToken !== '' ? 'the token is neither the admin token nor the viewer token' : 'the admin token is wrong';
  return (req) => {
    const given = givenToken(req);
    if (given === undefined) throw new IdmintError('UNAUTHORIZED', 'send Authorization: Bearer <admin token>');
    const role = roleOf(given);
    if (role === undefined) throw new IdmintError('UNAUTHORIZED', wrong);
    return role;
  };
}

/**
 * For an open route that shows more to the admin or viewer token (/metrics, /healthz, /readyz):
 * whether the request's Bearer token is one of them, or `extra` (the metrics token). A token
 * that is none of them counts as a failed sign-in of its source, and a source that is slowed
 * down is answered as one without a token (its token is not looked at), so these routes are no
 * way round the admin guard's slowing.
 */
export function seesMore(access: AdminAccess, extra = ''): (req: FastifyRequest) => boolean {
  const roleOf = roleOfToken(access.adminToken, access.viewerToken);
  const isExtra = matchesToken(extra);
  return (req) => {
    const given = bearerToken(req.headers.authorization);
    if (given === undefined) return false;
    try {
      access.failures?.check(req.ip, 'http');
    } catch {
      return false;
    }
    const extraGiven = isExtra(given);
    if (roleOf(given) !== undefined || extraGiven) return true;
    access.failures?.fail(req.ip, 'http', 'a token that is neither the admin, the viewer nor the metrics token');
    return false;
  };
}
