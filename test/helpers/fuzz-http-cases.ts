// Generators of whole fuzzed HTTP requests: bodies (valid specs, JSON, junk), admin routes and
// the raw cases they are assembled from.
import fc from 'fast-check';
import { ADMIN_TOKEN } from '../../tools/env.js';
import { lockedToken, RULE_DEF, VICTIMS } from './fuzz-run.js';
import { nastyString } from './fuzz-values.js';
import { type HttpCase } from './fuzz-http-send.js';
import {
  accept,
  ADMIN_POOL,
  authHeader,
  contentType,
  pathArb,
  queryArb,
  segment,
  specLike,
  tokenIdSegment,
} from './fuzz-http-parts.js';

export const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: specLike.map((o) => JSON.stringify(o)) },
  { weight: 2, arbitrary: fc.json({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{bad',
      '{"tag":',
      '',
      ' ',
      'null',
      '[]',
      '"x"',
      '1',
      '{"tag":"x",}',
      '\u0000',
      '{"tag":"fz-n","step":1e309}',
      '{"tag":"fz-n","max_id_limit":1e400}',
      '{"tag":"fz-n","max_id_limit":99999999999999999999}',
      '{"name":"billing"}',
      '{"name":7}',
      '{"enabled":false,"enabled":true}',
      '{"__proto__":{"enabled":false}}',
      '{"constructor":{"prototype":{"x":1}}}',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 50_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 60_000, max: 70_000 })
      .map((n) => JSON.stringify({ tag: 'fz-big', description: 'd'.repeat(n) })),
  },
  { weight: 1, arbitrary: nastyString },
);

/** Bodies an admin route accepts, so creates, changes and deletes do happen. */
export const freshName = fc.oneof(
  fc.constantFrom(...VICTIMS),
  fc.stringMatching(/^[a-z0-9]{1,8}$/).map((n) => `fz-${n}`),
);
export const validBody = fc
  .oneof(
    fc
      .tuple(
        freshName,
        fc.constantFrom<Record<string, unknown>>(
          {},
          { mode: 'snowflake' },
          RULE_DEF,
          { order: 'node' },
          { layout: 'sharded', shards: 4 },
          { step: 100, min_step: 10, max_id_limit: '9007199254740993' },
          { stride: 3, offset: 2 },
        ),
      )
      .map(([tag, def]) => ({ tag, ...def })),
    fc.record(
      {
        description: fc.string({ maxLength: 20 }),
        enabled: fc.boolean(),
        step: fc.integer({ min: 100, max: 1000 }),
        max_counter: fc.constant(999999999),
      },
      { requiredKeys: [] },
    ),
    fc.record({ name: fc.stringMatching(/^[A-Za-z0-9_.-]{1,10}$/) }, { requiredKeys: [] }),
  )
  .map((o) => JSON.stringify(o));

/** The real admin routes, as method and path. */
export const adminRoute = fc.oneof(
  fc.constant(['POST', '/v1/admin/tags']),
  fc.constant(['GET', '/v1/admin/tags']),
  fc.constant(['GET', '/v1/admin/workers']),
  fc
    .tuple(fc.constantFrom('GET', 'PATCH', 'PATCH', 'DELETE'), segment(ADMIN_POOL))
    .map(([m, t]) => [m, `/v1/admin/tags/${t}`]),
  fc.tuple(fc.constantFrom('GET', 'POST'), segment(ADMIN_POOL)).map(([m, t]) => [m, `/v1/admin/tags/${t}/tokens`]),
  fc.tuple(segment(ADMIN_POOL), tokenIdSegment).map(([t, id]) => ['DELETE', `/v1/admin/tags/${t}/tokens/${id}`]),
);

export interface RawCase {
  method: string;
  path: string;
  query: string;
  auth?: string;
  xToken?: string;
  contentType?: string;
  accept?: string;
  cookie?: string;
  body?: string;
}

export const otherHeaders = {
  xToken: fc.constantFrom(undefined, undefined, undefined, 'LOCKED', 'nope', '', 'x'.repeat(600)),
  accept,
  cookie: fc.constantFrom(
    undefined,
    undefined,
    undefined,
    `idmint_admin=${ADMIN_TOKEN}`,
    'idmint_admin=%zz',
    'idmint_admin=',
    'a=b; idmint_admin',
  ),
};
export const tail = fc.oneof(
  { weight: 12, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('/', '/..', '/../..', '/.', '//', '/extra', '%00', '#frag') },
);

export const rawCase: fc.Arbitrary<RawCase> = fc.oneof(
  // The ID routes, mostly as meant (GET), with random segments, queries and headers.
  {
    weight: 4,
    arbitrary: fc.record(
      {
        method: fc.oneof(
          { weight: 8, arbitrary: fc.constant('GET') },
          { weight: 2, arbitrary: fc.constantFrom('HEAD', 'POST', 'DELETE', 'OPTIONS', 'PUT') },
        ),
        path: fc.tuple(pathArb, tail).map(([p, t]) => p + t),
        query: queryArb,
        auth: authHeader,
        contentType,
        body: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: bodyArb }),
        ...otherHeaders,
      },
      { requiredKeys: ['method', 'path', 'query'] },
    ),
  },
  // The admin routes with their own methods, mostly with the admin token and JSON bodies.
  {
    weight: 4,
    arbitrary: fc
      .record(
        {
          route: adminRoute,
          tail,
          query: fc.oneof({ weight: 5, arbitrary: fc.constant('') }, { weight: 1, arbitrary: queryArb }),
          auth: fc.oneof(
            { weight: 3, arbitrary: fc.constant(`Bearer ${ADMIN_TOKEN}`) },
            { weight: 1, arbitrary: authHeader },
          ),
          contentType: fc.oneof(
            { weight: 3, arbitrary: fc.constant('application/json') },
            { weight: 1, arbitrary: contentType },
          ),
          body: fc.oneof({ weight: 2, arbitrary: validBody }, { weight: 2, arbitrary: bodyArb }),
          ...otherHeaders,
        },
        { requiredKeys: ['route', 'tail', 'query'] },
      )
      .map(({ route, tail: t, ...r }) => ({ ...r, method: route[0], path: route[1] + t })),
  },
  // Anything: random methods on any shape.
  {
    weight: 1,
    arbitrary: fc.record(
      {
        method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'FOO', 'PROPFIND', 'get'),
        path: fc.tuple(pathArb, tail).map(([p, t]) => p + t),
        query: queryArb,
        auth: authHeader,
        contentType,
        body: bodyArb,
        ...otherHeaders,
      },
      { requiredKeys: ['method', 'path', 'query'] },
    ),
  },
);

export const httpCaseArb: fc.Arbitrary<HttpCase> = rawCase.map((r) => {
  const headers: Record<string, string> = {};
  if (r.auth !== undefined) headers.authorization = r.auth === 'LOCKED' ? `Bearer ${lockedToken}` : r.auth;
  if (r.xToken !== undefined) headers['x-idmint-token'] = r.xToken === 'LOCKED' ? lockedToken : r.xToken;
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  if (r.accept !== undefined) headers.accept = r.accept;
  if (r.cookie !== undefined) headers.cookie = r.cookie;
  const hasBody = r.body !== undefined && r.method !== 'HEAD';
  if (hasBody) headers['content-length'] = String(Buffer.byteLength(r.body!));
  const [p, frag] = r.path.split('#');
  // Node's client sends only bytes 0x21-0xff in a path: encode the rest (Latin-1 goes raw).
  const path = (p + r.query + (frag === undefined ? '' : `#${frag}`))
    .replace(/[\ud800-\udfff]/g, 'x')
    .replace(/[^\u0021-\u00ff]/g, (ch) => encodeURIComponent(ch));
  // Node's client upper-cases the method.
  return { method: r.method.toUpperCase(), path, headers, body: hasBody ? Buffer.from(r.body!) : undefined };
});
