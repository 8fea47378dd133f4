// The admin API as seen from the page. Signing in sends the token once, as a Bearer header, to
// POST /v1/admin/session, which answers with an HttpOnly cookie holding it: the browser sends
// that cookie with every admin request (and to Bull Board, which then opens signed in too), and
// no script of the page, or injected into it, can read it. Signing out asks the server to clear
// it. Every failure becomes an ApiError carrying the server's code and message.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** Signs in: resolves with { role } once the server has set the session cookie. */
export function signIn(token) {
  return api('POST', '/v1/admin/session', undefined, token);
}

/** Signs out: the server clears the session cookie. */
export function signOut() {
  return api('DELETE', '/v1/admin/session');
}

/**
 * Calls the API with the session cookie (or, at sign-in, the token given); resolves with the
 * parsed JSON (undefined for 204), rejects with ApiError.
 */
export async function api(method, path, body, token) {
  // The server takes a write with the cookie only along with this header, which no form of
  // another site can send.
  const headers = { accept: 'application/json', 'x-idmint-admin': '1' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch (err) {
    throw new ApiError(0, 'NETWORK', `the server cannot be reached (${err.message})`);
  }
  if (res.status === 204) return undefined;
  const text = await res.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = json && json.error;
    if (e && typeof e.message === 'string') throw new ApiError(res.status, e.code, e.message);
    throw new ApiError(res.status, 'HTTP', `${method} ${path} answered ${res.status} ${res.statusText}`);
  }
  return json;
}
