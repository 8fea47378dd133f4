// The admin page's session cookie: the token the operator signed in with, set by the server at
// sign-in (POST /v1/admin/session) and cleared at sign-out, never by the page's script. It is
// HttpOnly (no script can read it), SameSite=Strict (no other site's request carries it),
// Secure over TLS, and sent only under the admin paths: the admin API (/v1/admin) and the page
// with Bull Board (/admin), as one cookie per path, not to the rest of the site.
import { ADMIN_COOKIE } from '../auth.js';

/** The paths the cookie is sent under. */
export const ADMIN_COOKIE_PATHS = ['/v1/admin', '/admin'] as const;

const attributes = (path: string, secure: boolean) =>
  `Path=${path}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;

/** Set-Cookie values that keep the token for the browser's session. */
export function sessionCookies(token: string, secure: boolean): string[] {
  return [
    ...ADMIN_COOKIE_PATHS.map((p) => `${ADMIN_COOKIE}=${encodeURIComponent(token)}; ${attributes(p, secure)}`),
    // Earlier versions of the page wrote the cookie itself, for the whole site: drop it.
    `${ADMIN_COOKIE}=; Path=/; Max-Age=0; SameSite=Strict${secure ? '; Secure' : ''}`,
  ];
}

/** Set-Cookie values that remove the token (and a cookie of the whole site left by earlier versions). */
export function clearedCookies(secure: boolean): string[] {
  return [...ADMIN_COOKIE_PATHS, '/'].map((p) => `${ADMIN_COOKIE}=; Max-Age=0; ${attributes(p, secure)}`);
}
