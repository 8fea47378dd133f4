// What a fuzzed HTTP request may be answered, checked against the route it came from: a
// documented success or the API's error shape with the registry's status, never a 500, HTML or
// a stack trace; and the tally of answers a test prints.
import assert from 'node:assert/strict';
import { ERROR_CODES } from '../../src/errors.js';
import { ID_TAGS, RULE_TAGS } from './fuzz-run.js';
import { type HttpAnswer, type HttpCase } from './fuzz-http-send.js';
import { TINYID_ROUTES } from './fuzz-http-parts.js';

export const decodeSeg = (s: string): string | undefined => {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
};

/** The count of a query that asks for exactly one, when it can be told. */
export function singleCount(path: string): number | undefined {
  const q = path.split('?')[1] ?? '';
  const counts = q.split('&').filter((p) => p.startsWith('count='));
  if (counts.length !== 1) return undefined;
  const v = counts[0].slice(6);
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/** Checks a successful answer against the route it came from. */
export function checkSuccess(c: HttpCase, a: HttpAnswer, what: string): void {
  const raw = c.path.split('?')[0].split('#')[0];
  const parts = raw.split('/').slice(1);
  const text = a.body.toString('utf8');
  const ctype = String(a.headers['content-type'] ?? '');
  const json = (): Record<string, unknown> => {
    assert.match(ctype, /^application\/json/, `a success that is not JSON: ${what}`);
    const v = JSON.parse(text) as unknown;
    assert.ok(typeof v === 'object' && v !== null && !Array.isArray(v), `a success that is not a JSON object: ${what}`);
    return v as Record<string, unknown>;
  };
  const idOk = (tag: string | undefined, id: unknown) => {
    assert.ok(tag !== undefined && Object.hasOwn(ID_TAGS, tag), `an ID of an unexpected tag ${tag}: ${what}`);
    assert.equal(typeof id, 'string', what);
    assert.ok(ID_TAGS[tag](id as string), `not a valid ID of ${tag}: ${JSON.stringify(id)}: ${what}`);
  };
  const route = parts.length >= 2 && parts[0] === 'v1' ? parts[1] : parts[0];
  if (c.method === 'GET' && parts.length === 3 && parts[0] === 'v1' && parts[1] === 'id') {
    const tag = decodeSeg(parts[2]);
    if (ctype.startsWith('text/plain')) idOk(tag, text);
    else {
      const o = json();
      assert.deepEqual(Object.keys(o), ['id'], what);
      idOk(tag, o.id);
    }
    return;
  }
  if (c.method === 'GET' && parts.length === 3 && parts[0] === 'v1' && parts[1] === 'ids') {
    const tag = decodeSeg(parts[2]);
    const o = json();
    assert.deepEqual(Object.keys(o), ['ids'], what);
    const ids = o.ids as string[];
    assert.ok(Array.isArray(ids) && ids.length >= 1 && ids.length <= 10000, what);
    const n = singleCount(c.path);
    if (n !== undefined) assert.equal(ids.length, n, what);
    for (const id of ids) idOk(tag, id);
    if (!RULE_TAGS.has(tag!))
      for (let i = 1; i < ids.length; i++) assert.ok(BigInt(ids[i]) > BigInt(ids[i - 1]), `not ascending: ${what}`);
    assert.equal(new Set(ids).size, ids.length, `a batch repeats an ID: ${what}`);
    return;
  }
  if (c.method === 'GET' && parts.length === 4 && parts[0] === 'api' && parts[2] === 'get') {
    assert.match(ctype, /^text\/plain/, what);
    idOk(decodeSeg(parts[3]), text);
    return;
  }
  if (c.method === 'GET' && parts.length === 4 && route === 'decode') {
    const o = json();
    assert.ok(o.mode === 'segment' || o.mode === 'snowflake', what);
    assert.match(String(o.id), /^\d{1,19}$/, what);
    return;
  }
  if (route === 'admin' || (parts[0] === 'v1' && parts[1] === 'admin')) {
    if (a.status === 204) {
      assert.equal(a.body.length, 0, what);
      return;
    }
    const o = json();
    if (c.method === 'POST' && parts.length === 3)
      assert.ok(typeof o.tag === 'string' && typeof o.incarnation === 'number' && a.status === 201, what);
    if (c.method === 'POST' && parts.length === 5)
      assert.ok(typeof o.token === 'string' && typeof o.id === 'number' && a.status === 201, what);
    if (c.method === 'GET' && parts.length === 3 && parts[2] === 'tags') assert.ok(Array.isArray(o.tags), what);
    return;
  }
  if (raw === '/healthz') {
    assert.equal(json().status, 'ok', what);
    return;
  }
  if (raw === '/readyz') {
    assert.equal(json().status, 'ready', what);
    return;
  }
  assert.fail(`a success from a route the fuzz does not expect to answer: ${what}`);
}

/** The documented error answer: JSON {"error":{"code","message"}}, the registry's status, no stack. */
export function checkError(a: HttpAnswer, what: string): void {
  assert.notEqual(a.status, 500, `a 500: ${what}`);
  const text = a.body.toString('utf8');
  assert.match(String(a.headers['content-type'] ?? ''), /^application\/json/, `an error that is not JSON: ${what}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`an error body that does not parse: ${what}`);
  }
  const e = (body as { error?: { code?: unknown; message?: unknown } }).error;
  assert.ok(e && typeof e === 'object', `not the error shape: ${what}`);
  assert.deepEqual(Object.keys(body as object), ['error'], `extra keys next to "error": ${what}`);
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message'], `not {code, message}: ${what}`);
  assert.ok(typeof e.code === 'string' && Object.hasOwn(ERROR_CODES, e.code), `an unknown code: ${what}`);
  assert.equal(typeof e.message, 'string', what);
  assert.ok((e.message as string).length > 0, what);
  assert.doesNotMatch(text, /\bat .+:\d+:\d+|node:internal|<html/i, `a stack trace or HTML: ${what}`);
  const code = e.code as keyof typeof ERROR_CODES;
  assert.notEqual(code, 'INTERNAL', `INTERNAL: ${what}`);
  const want = ERROR_CODES[code].status;
  const ok = a.status === want || (code === 'INVALID_ARGUMENT' && (a.status === 413 || a.status === 415));
  assert.ok(ok, `status ${a.status} for code ${code} (registry: ${want}): ${what}`);
  if (a.status === 503) assert.ok(a.headers['retry-after'] !== undefined, `a 503 without Retry-After: ${what}`);
}

/** What the answers were, by status and code, so a run shows what it reached. */
export const tally = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
export const show = (m: Map<string, number>) => JSON.stringify(Object.fromEntries([...m].sort((a, b) => b[1] - a[1])));

/** Tinyid's answers (docs/TINYID.md): its exact shapes, Spring's 400, or the API's error shape. */
export function checkTinyid(c: HttpCase, a: HttpAnswer, route: string, what: string): void {
  const text = a.body.toString('utf8');
  const ctype = String(a.headers['content-type'] ?? '');
  if (a.status === 400 && text.includes('"exception"')) {
    const o = JSON.parse(text) as Record<string, unknown>;
    assert.deepEqual(Object.keys(o), ['timestamp', 'status', 'error', 'exception', 'message', 'path'], what);
    assert.ok(route === 'nextId' || route === 'nextIdSimple', `a bind failure without batchSize: ${what}`);
    return;
  }
  if (a.status !== 200) return checkError(a, what);
  const simple = route.endsWith('Simple');
  assert.equal(ctype, simple ? 'text/plain;charset=UTF-8' : 'application/json;charset=UTF-8', what);
  if (route === 'nextIdSimple') return assert.match(text, /^(\d+(,\d+)*)?$/, what);
  if (route === 'nextSegmentIdSimple') return assert.match(text, /^(\d+,\d+,\d+,\d+,\d+)?$/, what);
  const o = JSON.parse(text) as { data: unknown; code: number; message: string };
  assert.deepEqual(Object.keys(o), ['data', 'code', 'message'], what);
  if (o.code === 5) return assert.equal(text, '{"data":null,"code":5,"message":"token is error"}', what);
  if (o.code === 6) {
    assert.equal(o.data, null, what);
    assert.ok(o.message.length > 0 && o.message !== 'internal error', `an internal error: ${what}`);
    return;
  }
  if (route === 'nextId') return assert.match(text, /^\{"data":\[(\d+(,\d+)*)?\],"code":200,"message":""\}$/, what);
  assert.match(
    text,
    /^\{"data":\{"maxId":\d+,"loadingId":\d+,"currentId":\d+,"delta":\d+,"remainder":\d+\},"code":200,"message":""\}$/,
    what,
  );
}

export function checkHttp(c: HttpCase, a: HttpAnswer): void {
  const what = `${c.method} ${c.path.slice(0, 300)} ${JSON.stringify(c.headers).slice(0, 300)} body ${c.body?.toString('utf8', 0, 200) ?? '(none)'} → ${a.status} ${a.body.toString('utf8', 0, 300)}`;
  assert.ok(a.status >= 200 && a.status < 600, what);
  assert.ok(!(a.status >= 300 && a.status < 400), `a redirect: ${what}`);
  assert.ok(a.status < 500 || a.status === 503, `a ${a.status}: ${what}`);
  if (c.method === 'HEAD') return;
  const tinyid = /^\/tinyid\/id\/([A-Za-z]+)$/.exec(c.path.split('?')[0].split('#')[0]);
  if (tinyid && TINYID_ROUTES.includes(tinyid[1]) && (c.method === 'GET' || c.method === 'POST'))
    return checkTinyid(c, a, tinyid[1], what);
  if (a.status >= 400) checkError(a, what);
  else checkSuccess(c, a, what);
}
