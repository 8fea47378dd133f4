// The admin API as seen from the page: the token lives in the idmint_admin cookie (which the
// server accepts, so Bull Board opens signed in too) and is also sent as a Bearer header.
// Every failure becomes an ApiError carrying the server's code and message.

const COOKIE = 'idmint_admin';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

export function storedToken() {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) {
      try {
        return decodeURIComponent(v.join('='));
      } catch {
        return '';
      }
    }
  }
  return '';
}

export function storeToken(token) {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${COOKIE}=${encodeURIComponent(token)}; Path=/; SameSite=Strict${secure}`;
}

export function forgetToken() {
  document.cookie = `${COOKIE}=; Path=/; Max-Age=0; SameSite=Strict`;
}

/** Calls the API; resolves with the parsed JSON (undefined for 204), rejects with ApiError. */
export async function api(method, path, body, token = storedToken()) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
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
