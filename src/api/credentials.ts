// The credentials idmint reads, for every transport that takes them: the one reading of
// `Authorization: Bearer <token>` (client tokens over HTTP, the websocket and gRPC, the admin
// and viewer tokens, the metrics token), a client token from HTTP headers, and the role an
// admin or viewer token carries, compared in constant time. The scheme is matched in any case,
// as RFC 9110 (section 11.1) makes auth schemes case-insensitive: `bearer`, `BEARER` and
// `Bearer` are the same.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

const digest = (s: string) => createHash('sha256').update(s).digest();

/** What the caller's credential allows: everything, or reading only. */
export type AdminRole = 'admin' | 'viewer';

/** The token of a Bearer credential; undefined when the value is absent or not one. */
export function bearerToken(authorization: unknown): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  return BEARER.exec(authorization)?.[1];
}

/** A client token: `X-Idmint-Token: <token>`, else `Authorization: Bearer <token>` (the scheme in any case). */
export function clientToken(headers: IncomingHttpHeaders): string | undefined {
  const token = headers['x-idmint-token'];
  if (typeof token === 'string') return token;
  return bearerToken(headers.authorization);
}

/** The request carries a client token (either header, whatever its value). */
export const carriesToken = (h: IncomingHttpHeaders): boolean =>
  h.authorization !== undefined || h['x-idmint-token'] !== undefined;

/**
 * The role a token carries: the admin token, the viewer token (when one is set), or neither
 * (undefined). Both comparisons run in constant time whatever the first answered, so timing
 * tells nothing either. Shared by the admin guard and by decoding a permuted tag's IDs.
 */
export function roleOfToken(
  adminToken: string,
  viewerToken = '',
): (given: string | undefined) => AdminRole | undefined {
  const admin = digest(adminToken);
  const viewer = viewerToken === '' ? undefined : digest(viewerToken);
  return (given) => {
    if (given === undefined) return undefined;
    const hashed = digest(given);
    const isAdmin = timingSafeEqual(hashed, admin);
    const isViewer = viewer !== undefined && timingSafeEqual(hashed, viewer);
    return isAdmin ? 'admin' : isViewer ? 'viewer' : undefined;
  };
}

/** Whether a token is the admin or the viewer token: what decodes a permuted tag's IDs, on HTTP and gRPC. */
export function staffOf(config: {
  readonly adminToken: string;
  readonly viewerToken: string;
}): (token: string | undefined) => boolean {
  const roleOf = roleOfToken(config.adminToken, config.viewerToken);
  return (token) => roleOf(token) !== undefined;
}

/** A constant-time check of a given token against one expected token (never equal when none is expected). */
export function matchesToken(expected: string): (given: string) => boolean {
  const want = expected === '' ? undefined : digest(expected);
  return (given) => want !== undefined && timingSafeEqual(digest(given), want);
}
