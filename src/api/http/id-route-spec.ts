// GET /v1/id/:tag, the hottest request, specified once for the two places that answer it: the
// Fastify route (routes/ids.ts) and the pre-router path (fast-path.ts). Both take the path and
// tag pattern, the content negotiation, the client token and the closing answer from here, so
// the two cannot drift apart; which of the app's hooks the pre-router path stands in for is
// decided in pre-router-hooks.ts.
import type { IncomingHttpHeaders } from 'node:http';
import { TAG_NAME } from '../../core/tag-name.js';

/** The route as Fastify knows it (and as metrics label it). */
export const ID_ROUTE = '/v1/id/:tag';
/** What the path starts with; the rest is the tag. */
export const ID_PREFIX = '/v1/id/';
/** The tag segment of the path. */
export const ID_TAG = TAG_NAME;

/**
 * The query parameters the ID routes take (the Fastify schema's properties, routes/ids.ts),
 * each a plain string of at most maxLength characters; no others.
 */
export const ID_QUERY = {
  key: { type: 'string', maxLength: 256 },
  app: { type: 'string', maxLength: 64 },
  salt: { type: 'string', maxLength: 64 },
} as const;

export type IdQuery = { -readonly [K in keyof typeof ID_QUERY]?: string };

/** Characters a query value may hold to be read as it is: nothing to percent-decode. */
const UNRESERVED = /^[A-Za-z0-9_.~-]*$/;

/**
 * The query string of GET /v1/id/:tag (without the "?") as the route's schema reads it, when
 * that needs no decoding: each parameter one of ID_QUERY's, once, within its maxLength, in
 * unreserved characters. undefined for anything else (the router then parses, and refuses
 * what the schema refuses).
 */
export function plainIdQuery(query: string): IdQuery | undefined {
  if (query === '') return undefined;
  const out: IdQuery = {};
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    if (eq < 0) return undefined;
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (!Object.hasOwn(ID_QUERY, key)) return undefined;
    const name = key as keyof typeof ID_QUERY;
    if (out[name] !== undefined || value.length > ID_QUERY[name].maxLength || !UNRESERVED.test(value)) return undefined;
    out[name] = value;
  }
  return out;
}

export const JSON_TYPE = 'application/json; charset=utf-8';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

/** Content negotiation: an Accept header starting with text/plain gets the bare ID, else JSON {"id"}. */
export function wantsText(accept: string | string[] | undefined): boolean {
  return typeof accept === 'string' && accept.startsWith('text/plain');
}

/**
 * The `Idempotency-Key` header (its value as sent; repeated headers arrive joined by ", ",
 * which the key check refuses), or undefined without one.
 */
export function idempotencyKey(headers: IncomingHttpHeaders): string | undefined {
  const key = headers['idempotency-key'];
  return typeof key === 'string' ? key : undefined;
}

const ESCAPE = /["\\]/;

/**
 * The 200 body of an ID. IDs are printable ASCII (rule templates allow nothing else); quotes
 * and backslashes of a rule's literal text need JSON escapes.
 */
export function idBody(id: string, text: boolean): string {
  return text ? id : ESCAPE.test(id) ? JSON.stringify({ id }) : `{"id":"${id}"}`;
}
