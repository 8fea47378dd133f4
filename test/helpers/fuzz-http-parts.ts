// Generators of the parts of a fuzzed HTTP request: path segments (real names, missing ones and
// what a router or decoder may choke on), paths, query strings, headers and admin spec fields.
import fc from 'fast-check';
import { ADMIN_TOKEN } from '../../tools/env.js';
import { ID_TAGS, MAX_I63, MISSING, VICTIMS } from './fuzz-run.js';
import { edgeNumberText, nastyString } from './fuzz-values.js';
import { decodeSeg } from './fuzz-http-checks.js';

export function segment(pool: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...pool) },
    { weight: 1, arbitrary: fc.constantFrom(...MISSING) },
    {
      weight: 4,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            '',
            '.',
            '..',
            '%2e%2e',
            '%2E',
            '%',
            '%zz',
            '%00',
            '%2F',
            '%2f..%2f',
            'a%20b',
            '%C3%A9',
            '%ED%A0%80',
            '%FF',
            'é',
            'x'.repeat(65),
            'x'.repeat(200),
            'x'.repeat(201),
            'x'.repeat(2000),
            '-',
            '_',
            'a.b',
            ';',
            '*',
            '~',
            "'",
            '(',
            ')',
            '!',
            '$',
            ':',
            '@',
            '+',
          ),
          nastyString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
          fc
            .string({ unit: 'binary-ascii', minLength: 1, maxLength: 30 })
            .map((s) => s.replace(/[^\u0021-\u007e]/g, '').replace(/[?#/]/g, '') || '-'),
          // A random name never hits an ID tag (in any letter case): the admin fuzz must not change those.
        )
        .filter((s) => !ID_POOL.includes((decodeSeg(s) ?? s).toLowerCase())),
    },
  );
}

export const idSegment = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '12x',
    '-1',
    '9223372036854775807',
    '9223372036854775808',
    '18446744073709551615',
    '99999999999999999999',
    '1e5',
    '0x10',
    '',
    '%31',
    '00000000000000000001',
    '1'.repeat(200),
  ),
  fc.bigInt({ min: 0n, max: MAX_I63 }).map(String),
);
export const tokenIdSegment = fc.oneof(
  fc.constantFrom('0', '1', '-1', '1.5', 'abc', '99999999999999999999', '1e3', ''),
  fc.integer({ min: 0, max: 100 }).map(String),
);

export const ID_POOL = Object.keys(ID_TAGS);
export const TINYID_ROUTES = ['nextId', 'nextIdSimple', 'nextSegmentId', 'nextSegmentIdSimple'];
export const ADMIN_POOL = [...VICTIMS, 'fz-new'];

/** Paths built from the real route shapes, with random segments, sometimes bent out of shape. */
export const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: segment(ID_POOL).map((t) => `/v1/id/${t}`) },
  { weight: 5, arbitrary: segment(ID_POOL).map((t) => `/v1/ids/${t}`) },
  { weight: 2, arbitrary: segment(ID_POOL).map((t) => `/api/segment/get/${t}`) },
  { weight: 2, arbitrary: segment(ID_POOL).map((t) => `/api/snowflake/get/${t}`) },
  { weight: 3, arbitrary: fc.tuple(segment(ID_POOL), idSegment).map(([t, id]) => `/v1/decode/${t}/${id}`) },
  { weight: 3, arbitrary: fc.constant('/v1/admin/tags') },
  { weight: 4, arbitrary: segment(ADMIN_POOL).map((t) => `/v1/admin/tags/${t}`) },
  { weight: 2, arbitrary: segment(ADMIN_POOL).map((t) => `/v1/admin/tags/${t}/tokens`) },
  {
    weight: 2,
    arbitrary: fc.tuple(segment(ADMIN_POOL), tokenIdSegment).map(([t, id]) => `/v1/admin/tags/${t}/tokens/${id}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/v1/admin/workers',
      '/healthz',
      '/readyz',
      '/v1/stream',
      '/',
      '/v1',
      '/v1/',
      '/v1/id',
      '/v1/id/',
      '/v1/ids',
      '/api',
      '/V1/id/seg',
      '/v1//id/seg',
      '/v1/admin',
      '/v1/admin/',
    ),
  },
  { weight: 1, arbitrary: fc.array(segment(ID_POOL), { minLength: 1, maxLength: 5 }).map((s) => `/${s.join('/')}`) },
  { weight: 2, arbitrary: fc.constantFrom(...TINYID_ROUTES).map((r) => `/tinyid/id/${r}`) },
  // With a bizType (Tinyid's tag parameter) so that some reach an ID; more parameters may follow.
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...TINYID_ROUTES),
        segment(ID_POOL),
        fc.option(fc.oneof(edgeNumberText, fc.integer({ min: -2, max: 12000 }).map(String))),
      )
      .map(([r, t, n]) => `/tinyid/id/${r}?bizType=${t}${n === null ? '' : `&batchSize=${n}`}`),
  },
);

export const QUERY_KEYS = [
  'count',
  'key',
  'app',
  'salt',
  'token',
  'colour',
  '',
  'count[]',
  'COUNT',
  'count%00',
  '__proto__',
  'bizType',
  'batchSize',
];
export const queryValue = fc.oneof(
  edgeNumberText,
  fc.constantFrom(...ID_POOL, ...MISSING),
  fc.constantFrom(
    'NaN',
    'Infinity',
    '',
    'abc',
    'true',
    'null',
    '%zz',
    '%',
    'shop',
    'k',
    'u1',
    'bad salt',
    'x'.repeat(64),
    'x'.repeat(65),
    'x'.repeat(257),
    'x'.repeat(2000),
    '[]',
    '{}',
  ),
  fc.integer({ min: -5, max: 10005 }).map(String),
  nastyString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
);
export const queryArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  {
    weight: 8,
    arbitrary: fc
      .array(
        fc.oneof(
          { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue).map(([k, v]) => `${k}=${v}`) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              'count',
              '=',
              '&',
              'count=',
              '=5',
              'count=1=2',
              'a[b]=1',
              'count[0]=1',
              'count=1%26count=2',
            ),
          },
        ),
        { maxLength: 5 },
      )
      .map((pairs) => `?${pairs.join('&')}`),
  },
);

export const authHeader = fc.constantFrom(
  undefined,
  undefined,
  `Bearer ${ADMIN_TOKEN}`,
  `Bearer ${ADMIN_TOKEN}`,
  `bearer ${ADMIN_TOKEN}`,
  `Bearer  ${ADMIN_TOKEN}  `,
  `Bearer ${ADMIN_TOKEN} extra`,
  'Bearer',
  'Bearer ',
  'Bearer nope',
  `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
  `Bearer ${'x'.repeat(2000)}`,
  `Bearer ${ADMIN_TOKEN}\u00e9`,
  'LOCKED',
  '',
);
export const contentType = fc.constantFrom(
  undefined,
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/jsonx',
  'json',
  '',
  '*/*',
  'application/vnd.api+json',
);
export const accept = fc.constantFrom(
  undefined,
  'text/plain',
  'text/plain; q=0.5',
  'application/json',
  '*/*',
  'text/html',
  'garbage',
  '',
);

/** Tag-definition-like objects: real field names with values of every type, valid and not. */
export const fieldValue = fc.oneof(
  fc.constantFrom<unknown>(
    'seg',
    'x',
    'fz-new',
    'segment',
    'snowflake',
    'rule',
    'nope',
    'global',
    'node',
    'plain',
    'sharded',
    'UTC',
    'Mars/Olympus',
    'ms',
    's',
    'uid',
    'jssafe',
    '{yyyy}{counter:4}',
    '{counter:4}',
    '{',
    '{counter:99}',
    '{salt}',
    '2020-01-01',
    '9223372036854775807',
    '9223372036854775808',
    '-1',
    '',
  ),
  fc.constantFrom<unknown>(
    0,
    -1,
    1,
    1.5,
    0.2,
    // eslint-disable-next-line no-loss-of-precision -- 1e309 overflows to Infinity on purpose
    1e309,
    // eslint-disable-next-line no-loss-of-precision -- -1e309 overflows to -Infinity on purpose
    -1e309,
    2 ** 53,
    2 ** 63,
    1e21,
    100_000_000,
    100_000_001,
    4096,
    4097,
    65536,
  ),
  fc.constantFrom<unknown>(true, false, null, [], {}, ['segment'], { x: 1 }),
  fc.jsonValue({ maxDepth: 2 }),
);
export const SPEC_FIELDS = [
  'tag',
  'mode',
  'order',
  'layout',
  'shards',
  'app_id',
  'app_bits',
  'step',
  'min_step',
  'max_step',
  'target_seconds',
  'prefetch',
  'max_id_limit',
  'node_block',
  'stride',
  'offset',
  'enabled',
  'description',
  'preset',
  'epoch',
  'time_unit',
  'time_bits',
  'worker_bits',
  'seq_bits',
  'force',
  'template',
  'min_counter',
  'max_counter',
  'reset_seconds',
  'time_zone',
  'permute',
  'key_retention_seconds',
  'name',
  'colour',
  '__proto__',
];
export const specLike = fc.dictionary(fc.constantFrom(...SPEC_FIELDS), fieldValue, { maxKeys: 6 }).chain((o) =>
  // A fresh name now and then, so a create can succeed and later requests meet it.
  fc
    .constantFrom(...(['tag', 'tag', 'fz', 'none'] as const))
    .map((how) =>
      how === 'fz' ? { ...o, tag: `fz-${Object.keys(o).length}` } : how === 'none' ? o : { tag: 'fz-new', ...o },
    ),
);
