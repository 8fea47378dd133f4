// suite: single — malformed input at the transports, long (npm run fuzz)
// Fuzzing the edges of a real idmint child process (real Redis and MySQL): randomised
// malformed HTTP requests, websocket frames and UDP datagrams (fast-check). Every reply must
// be a documented success or a documented error (HTTP: {"error":{"code","message"}} with the
// registry's 4xx status, or 503 for unavailability; stream: an error frame or a documented
// close code; UDP: exactly one reply with a non-zero code and a message), never a 500, a hang,
// an INTERNAL, HTML or a stack trace; and the process is still alive and healthy at the end.
//
// FUZZ_RUNS scales the number of generated cases (`npm run fuzz` runs many more); FUZZ_SEED
// (and FUZZ_PATH, both printed by fast-check when a property fails) replays a failing run.
import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import WebSocket from 'ws';
import { ERROR_CODES } from '../../src/errors.js';
import { ADMIN_TOKEN, cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, type ChildNode } from '../../tools/node.js';
import { freePort } from '../../tools/child.js';
import { UdpClient, type Json } from '../../tools/udp-client.js';
import { udpRequestShape } from '../helpers/udp-oracle.js';

/** Cases per property: HTTP requests and UDP datagrams; websocket sessions a fifteenth (each sends up to 12 frames). */
const RUNS = Number(process.env.FUZZ_RUNS ?? '') || 4000;
const HTTP_RUNS = RUNS;
const UDP_RUNS = RUNS;
const WS_RUNS = Math.ceil(RUNS / 15);
/** The seed of every property of this run: FUZZ_SEED replays one (printed at the start). */
const SEED =
  process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === '' ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0 : Number(process.env.FUZZ_SEED);
const PATH = process.env.FUZZ_PATH || undefined;
console.log(`fuzz seed ${SEED}: FUZZ_SEED=${SEED} replays this run (with FUZZ_PATH from a failure, its case)`);
/** fast-check options of a property: the run's seed, and the path to replay when given. */
const params = (numRuns: number): fc.Parameters<unknown> => ({
  numRuns: Math.max(1, Math.round(numRuns)),
  includeErrorInReport: true,
  seed: SEED,
  ...(PATH === undefined ? {} : { path: PATH }),
});

const REQUEST_TIMEOUT_MS = 5000;
const STREAM_MAX_COUNT = 100_000;
const UDP_MAX_BYTES = 8192;
const MAX_SAFE = 2n ** 53n - 1n;
const MAX_I63 = 2n ** 63n - 1n;

// ---- the tags ----

/** Tags the ID routes are fuzzed against, with how a valid ID of each looks. */
const ID_TAGS: Record<string, (id: string) => boolean> = {
  seg: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  nodeo: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  // Interleaved: stride 2, offset 1, so odd.
  odd: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE && BigInt(id) % 2n === 1n,
  locked: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE,
  // shards 8 (3 bits) over app_bits 8 with app_id 3: the low byte of every ID is 3.
  shard: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_SAFE && (BigInt(id) & 0xffn) === 3n,
  tiny: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= 60n,
  sf: (id) => /^[1-9]\d*$/.test(id) && BigInt(id) <= MAX_I63,
  off: () => false,
  rule: (id) => /^\d{8}-\d{9}$/.test(id),
  salty: (id) => /^[A-Za-z0-9_.-]{1,64}-\d{8}-[A-Za-z0-9_.-]{0,64}\d{9}$/.test(id),
};
const RULE_TAGS = new Set(['rule', 'salty']);
/** Tags the admin routes may change or delete (never the ID tags above). */
const VICTIMS = ['adm-seg', 'adm-sf', 'adm-rule'];
const MISSING = ['nope', 'missing-tag'];
let lockedToken = '';

// Counters wide enough that long runs never exhaust a day's counter (tiny is the exhausted tag).
const RULE_DEF = { mode: 'rule', template: '{yyyy}{MM}{dd}-{counter:9}', min_counter: 0, max_counter: 999999999, reset_seconds: 86400, time_zone: 'UTC' };
const SALTY_DEF = {
  mode: 'rule',
  template: '{app}-{yyyy}{MM}{dd}-{salt}{counter:9}',
  min_counter: 0,
  max_counter: 999999999,
  reset_seconds: 86400,
  time_zone: 'UTC',
};

// ---- shared generators ----

/** Strings that stress parsers: unicode, control characters, long runs, escapes. */
const nastyString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '..',
    '%',
    '%zz',
    '\ud800',
    'é',
    '😀',
    '\n',
    '"',
    '\\',
    '{}',
    '[]',
    'null',
    'true',
    '1e309',
    'NaN',
    '-1',
    '__proto__',
    'constructor',
  ),
  fc.integer({ min: 65, max: 1500 }).map((n) => 'x'.repeat(n)),
);

/** Numbers at the edges, including ones JSON cannot say exactly. */
const edgeNumberText = fc.constantFrom(
  '0',
  '-0',
  '-1',
  '1',
  '1.5',
  '1e309',
  '-1e309',
  '1e-400',
  '9007199254740993',
  '18446744073709551616',
  '99999999999999999999999999',
  '4294967296',
  '4294967295',
  '100000',
  '100001',
  '1e5',
  '0x10',
  '1_000',
);

// ---- HTTP ----

interface HttpCase {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
}

interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function send(base: string, c: HttpCase): Promise<HttpAnswer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ agent, host: u.hostname, port: u.port, method: c.method, path: c.path, headers: c.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (a hang)`)));
    req.on('error', reject);
    req.end(c.body);
  });
}

/** A path segment: a real name, a missing one, or something a router or decoder may choke on. */
function segment(pool: readonly string[]): fc.Arbitrary<string> {
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
          fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 30 }).map((s) => s.replace(/[^\u0021-\u007e]/g, '').replace(/[?#/]/g, '') || '-'),
          // A random name never hits an ID tag (in any letter case): the admin fuzz must not change those.
        )
        .filter((s) => !ID_POOL.includes((decodeSeg(s) ?? s).toLowerCase())),
    },
  );
}

const idSegment = fc.oneof(
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
const tokenIdSegment = fc.oneof(fc.constantFrom('0', '1', '-1', '1.5', 'abc', '99999999999999999999', '1e3', ''), fc.integer({ min: 0, max: 100 }).map(String));

const ID_POOL = Object.keys(ID_TAGS);
const TINYID_ROUTES = ['nextId', 'nextIdSimple', 'nextSegmentId', 'nextSegmentIdSimple'];
const ADMIN_POOL = [...VICTIMS, 'fz-new'];

/** Paths built from the real route shapes, with random segments, sometimes bent out of shape. */
const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: segment(ID_POOL).map((t) => `/v1/id/${t}`) },
  { weight: 5, arbitrary: segment(ID_POOL).map((t) => `/v1/ids/${t}`) },
  { weight: 2, arbitrary: segment(ID_POOL).map((t) => `/api/segment/get/${t}`) },
  { weight: 2, arbitrary: segment(ID_POOL).map((t) => `/api/snowflake/get/${t}`) },
  { weight: 3, arbitrary: fc.tuple(segment(ID_POOL), idSegment).map(([t, id]) => `/v1/decode/${t}/${id}`) },
  { weight: 3, arbitrary: fc.constant('/v1/admin/tags') },
  { weight: 4, arbitrary: segment(ADMIN_POOL).map((t) => `/v1/admin/tags/${t}`) },
  { weight: 2, arbitrary: segment(ADMIN_POOL).map((t) => `/v1/admin/tags/${t}/tokens`) },
  { weight: 2, arbitrary: fc.tuple(segment(ADMIN_POOL), tokenIdSegment).map(([t, id]) => `/v1/admin/tags/${t}/tokens/${id}`) },
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
      .tuple(fc.constantFrom(...TINYID_ROUTES), segment(ID_POOL), fc.option(fc.oneof(edgeNumberText, fc.integer({ min: -2, max: 12000 }).map(String))))
      .map(([r, t, n]) => `/tinyid/id/${r}?bizType=${t}${n === null ? '' : `&batchSize=${n}`}`),
  },
);

const QUERY_KEYS = ['count', 'key', 'app', 'salt', 'token', 'colour', '', 'count[]', 'COUNT', 'count%00', '__proto__', 'bizType', 'batchSize'];
const queryValue = fc.oneof(
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
const queryArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  {
    weight: 8,
    arbitrary: fc
      .array(
        fc.oneof(
          { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue).map(([k, v]) => `${k}=${v}`) },
          { weight: 1, arbitrary: fc.constantFrom('count', '=', '&', 'count=', '=5', 'count=1=2', 'a[b]=1', 'count[0]=1', 'count=1%26count=2') },
        ),
        { maxLength: 5 },
      )
      .map((pairs) => `?${pairs.join('&')}`),
  },
);

const authHeader = fc.constantFrom(
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
const contentType = fc.constantFrom(
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
const accept = fc.constantFrom(undefined, 'text/plain', 'text/plain; q=0.5', 'application/json', '*/*', 'text/html', 'garbage', '');

/** Tag-definition-like objects: real field names with values of every type, valid and not. */
const fieldValue = fc.oneof(
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
  // eslint-disable-next-line no-loss-of-precision -- ±1e309 overflow to ±Infinity on purpose
  fc.constantFrom<unknown>(0, -1, 1, 1.5, 0.2, 1e309, -1e309, 2 ** 53, 2 ** 63, 1e21, 100_000_000, 100_000_001, 4096, 4097, 65536),
  fc.constantFrom<unknown>(true, false, null, [], {}, ['segment'], { x: 1 }),
  fc.jsonValue({ maxDepth: 2 }),
);
const SPEC_FIELDS = [
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
const specLike = fc.dictionary(fc.constantFrom(...SPEC_FIELDS), fieldValue, { maxKeys: 6 }).chain((o) =>
  // A fresh name now and then, so a create can succeed and later requests meet it.
  fc
    .constantFrom(...(['tag', 'tag', 'fz', 'none'] as const))
    .map((how) => (how === 'fz' ? { ...o, tag: `fz-${Object.keys(o).length}` } : how === 'none' ? o : { tag: 'fz-new', ...o })),
);

const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
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
  { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 70_000 }).map((n) => JSON.stringify({ tag: 'fz-big', description: 'd'.repeat(n) })) },
  { weight: 1, arbitrary: nastyString },
);

/** Bodies an admin route accepts, so creates, changes and deletes do happen. */
const freshName = fc.oneof(
  fc.constantFrom(...VICTIMS),
  fc.stringMatching(/^[a-z0-9]{1,8}$/).map((n) => `fz-${n}`),
);
const validBody = fc
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
      { description: fc.string({ maxLength: 20 }), enabled: fc.boolean(), step: fc.integer({ min: 100, max: 1000 }), max_counter: fc.constant(999999999) },
      { requiredKeys: [] },
    ),
    fc.record({ name: fc.stringMatching(/^[A-Za-z0-9_.-]{1,10}$/) }, { requiredKeys: [] }),
  )
  .map((o) => JSON.stringify(o));

/** The real admin routes, as method and path. */
const adminRoute = fc.oneof(
  fc.constant(['POST', '/v1/admin/tags']),
  fc.constant(['GET', '/v1/admin/tags']),
  fc.constant(['GET', '/v1/admin/workers']),
  fc.tuple(fc.constantFrom('GET', 'PATCH', 'PATCH', 'DELETE'), segment(ADMIN_POOL)).map(([m, t]) => [m, `/v1/admin/tags/${t}`]),
  fc.tuple(fc.constantFrom('GET', 'POST'), segment(ADMIN_POOL)).map(([m, t]) => [m, `/v1/admin/tags/${t}/tokens`]),
  fc.tuple(segment(ADMIN_POOL), tokenIdSegment).map(([t, id]) => ['DELETE', `/v1/admin/tags/${t}/tokens/${id}`]),
);

interface RawCase {
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

const otherHeaders = {
  xToken: fc.constantFrom(undefined, undefined, undefined, 'LOCKED', 'nope', '', 'x'.repeat(600)),
  accept,
  cookie: fc.constantFrom(undefined, undefined, undefined, `idmint_admin=${ADMIN_TOKEN}`, 'idmint_admin=%zz', 'idmint_admin=', 'a=b; idmint_admin'),
};
const tail = fc.oneof(
  { weight: 12, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('/', '/..', '/../..', '/.', '//', '/extra', '%00', '#frag') },
);

const rawCase: fc.Arbitrary<RawCase> = fc.oneof(
  // The ID routes, mostly as meant (GET), with random segments, queries and headers.
  {
    weight: 4,
    arbitrary: fc.record(
      {
        method: fc.oneof({ weight: 8, arbitrary: fc.constant('GET') }, { weight: 2, arbitrary: fc.constantFrom('HEAD', 'POST', 'DELETE', 'OPTIONS', 'PUT') }),
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
          auth: fc.oneof({ weight: 3, arbitrary: fc.constant(`Bearer ${ADMIN_TOKEN}`) }, { weight: 1, arbitrary: authHeader }),
          contentType: fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentType }),
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

const httpCaseArb: fc.Arbitrary<HttpCase> = rawCase.map((r) => {
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

const decodeSeg = (s: string): string | undefined => {
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
};

/** The count of a query that asks for exactly one, when it can be told. */
function singleCount(path: string): number | undefined {
  const q = path.split('?')[1] ?? '';
  const counts = q.split('&').filter((p) => p.startsWith('count='));
  if (counts.length !== 1) return undefined;
  const v = counts[0].slice(6);
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/** Checks a successful answer against the route it came from. */
function checkSuccess(c: HttpCase, a: HttpAnswer, what: string): void {
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
    if (!RULE_TAGS.has(tag!)) for (let i = 1; i < ids.length; i++) assert.ok(BigInt(ids[i]) > BigInt(ids[i - 1]), `not ascending: ${what}`);
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
    if (c.method === 'POST' && parts.length === 3) assert.ok(typeof o.tag === 'string' && typeof o.incarnation === 'number' && a.status === 201, what);
    if (c.method === 'POST' && parts.length === 5) assert.ok(typeof o.token === 'string' && typeof o.id === 'number' && a.status === 201, what);
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
function checkError(a: HttpAnswer, what: string): void {
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
const tally = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const show = (m: Map<string, number>) => JSON.stringify(Object.fromEntries([...m].sort((a, b) => b[1] - a[1])));

/** Tinyid's answers (docs/TINYID.md): its exact shapes, Spring's 400, or the API's error shape. */
function checkTinyid(c: HttpCase, a: HttpAnswer, route: string, what: string): void {
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
  assert.match(text, /^\{"data":\{"maxId":\d+,"loadingId":\d+,"currentId":\d+,"delta":\d+,"remainder":\d+\},"code":200,"message":""\}$/, what);
}

function checkHttp(c: HttpCase, a: HttpAnswer): void {
  const what = `${c.method} ${c.path.slice(0, 300)} ${JSON.stringify(c.headers).slice(0, 300)} body ${c.body?.toString('utf8', 0, 200) ?? '(none)'} → ${a.status} ${a.body.toString('utf8', 0, 300)}`;
  assert.ok(a.status >= 200 && a.status < 600, what);
  assert.ok(!(a.status >= 300 && a.status < 400), `a redirect: ${what}`);
  assert.ok(a.status < 500 || a.status === 503, `a ${a.status}: ${what}`);
  if (c.method === 'HEAD') return;
  const tinyid = /^\/tinyid\/id\/([A-Za-z]+)$/.exec(c.path.split('?')[0].split('#')[0]);
  if (tinyid && TINYID_ROUTES.includes(tinyid[1]) && (c.method === 'GET' || c.method === 'POST')) return checkTinyid(c, a, tinyid[1], what);
  if (a.status >= 400) checkError(a, what);
  else checkSuccess(c, a, what);
}

/** Sends raw bytes as one HTTP request and returns everything the server wrote before closing. */
function rawHttp(base: string, head: string): Promise<string> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const s = connect(Number(u.port), u.hostname, () => s.end(Buffer.from(head, 'latin1')));
    let out = '';
    s.setTimeout(REQUEST_TIMEOUT_MS, () => s.destroy(new Error('no answer (a hang)')));
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    s.on('close', () => resolve(out));
    s.on('error', reject);
  });
}

// ---- websocket stream ----

const STREAM_CODES = new Set([
  'INVALID_ARGUMENT',
  'LIMIT_EXCEEDED',
  'TAG_NOT_FOUND',
  'TAG_DISABLED',
  'ID_SPACE_EXHAUSTED',
  'UNAVAILABLE',
  'CLOCK_BACKWARDS',
  'LEASE_LOST',
  'UNAUTHORIZED',
]);
/** Close codes the server may use: shutdown, too many sockets or unread replies, a frame too large. */
const CLOSE_CODES = new Set([1001, 1008, 1009]);

type WsAction =
  | { readonly t: 'text'; readonly data: string }
  | { readonly t: 'binary'; readonly data: Uint8Array }
  | { readonly t: 'reopen' }
  | { readonly t: 'terminate' }
  | { readonly t: 'oversize' }
  | { readonly t: 'burst'; readonly n: number }
  | { readonly t: 'flood'; readonly n: number };

/** Wrong values for each field of a take (and an unknown field). */
const badTakeField: Record<string, fc.Arbitrary<unknown>> = {
  op: fc.constantFrom<unknown>('TAKE', 'give', 'done', 'block', '', null, 1, ['take']),
  req: fc.constantFrom<unknown>(-1, 1.5, 4294967296, '1', null, [], 2 ** 53, 1e300, 4294967295),
  tag: fc.constantFrom<unknown>('nope', '', 'a b', 'x'.repeat(65), 5, null, ['seg'], 'off', 'tiny', 'rule', 'shard', 'sf'),
  count: fc.constantFrom<unknown>(STREAM_MAX_COUNT, STREAM_MAX_COUNT + 1, 1e8, 1e15, 0, -1, 1.5, '5', null, true, [], 2 ** 53 + 2),
  block: fc.constantFrom<unknown>(1, 7, 100_000, 100_001, 0, -5, 1.5, '10', null, 1e20),
  format: fc.constantFrom<unknown>('json', 'binary', 'ranges', 'xml', 'JSON', '', 5, null),
  key: fc.constantFrom<unknown>('alice', '', 'x'.repeat(256), 'x'.repeat(257), 7, null),
  app: fc.constantFrom<unknown>('shop', 'bad app', 'x'.repeat(65), '', 3),
  salt: fc.constantFrom<unknown>('u1', '', 'bad salt', 'x'.repeat(65), null),
  token: fc.constantFrom<unknown>('LOCKED', 'nope', '', 'x'.repeat(513), 1),
  colour: fc.constant<unknown>('red'),
};

/** A take that is valid for its tag, then bent by up to two wrong fields or dropped fields. */
const takeArb = fc
  .record({
    tag: fc.constantFrom(...ID_POOL),
    req: fc.integer({ min: 0, max: 7 }),
    count: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constantFrom(1, 10_000, 50_000)),
    block: fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined }),
    format: fc.constantFrom('json', 'binary', 'ranges'),
    edits: fc.array(
      fc.oneof(
        fc.tuple(fc.constantFrom(...Object.keys(badTakeField)), fc.constant(true)),
        fc.tuple(fc.constantFrom('op', 'req', 'tag', 'count', 'key', 'app', 'token'), fc.constant(false)),
      ),
      { maxLength: 2 },
    ),
    values: fc.record(badTakeField),
  })
  .map(({ tag, req, count, block, format, edits, values }) => {
    const m: Record<string, unknown> = {
      op: 'take',
      req,
      tag,
      count,
      block,
      format: RULE_TAGS.has(tag) ? 'json' : tag === 'shard' && format === 'ranges' ? 'binary' : format,
    };
    if (tag === 'shard') m.key = 'alice';
    if (RULE_TAGS.has(tag)) m.app = 'shop';
    if (tag === 'salty') m.salt = 'u1';
    if (RULE_TAGS.has(tag)) m.count = Math.min(count, 500);
    if (tag === 'locked') m.token = 'LOCKED';
    for (const [field, set] of edits) {
      if (set) m[field] = values[field];
      else delete m[field];
    }
    if (m.token === 'LOCKED') m.token = lockedToken;
    return JSON.stringify(m);
  });

const wsActionArb: fc.Arbitrary<WsAction> = fc.oneof(
  { weight: 10, arbitrary: takeArb.map((data): WsAction => ({ t: 'text', data })) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        fc.json({ maxDepth: 3 }),
        nastyString,
        fc.constantFrom(
          'not json',
          '{',
          '{"op":"take"',
          '[1,2]',
          '"take"',
          'null',
          '{}',
          '{"req":3}',
          '{"op":"take","req":1e309,"tag":"seg","count":1}',
          '{"op":"take","req":2,"tag":"seg","count":1e309}',
          '{"op":"take","req":2,"tag":"seg","count":1,"block":-1e309}',
          '{"op":"take","req":3,"tag":"seg","count":1,"__proto__":{"x":1}}',
          `{"op":"take","req":4,"tag":"seg","count":1,"pad":"${'p'.repeat(15000)}"}`,
          `${'['.repeat(5000)}${']'.repeat(5000)}`,
        ),
      )
      .map((data): WsAction => ({ t: 'text', data })),
  },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }).map((data): WsAction => ({ t: 'binary', data })) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'reopen' }) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'terminate' }) },
  { weight: 1, arbitrary: fc.constant<WsAction>({ t: 'oversize' }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n): WsAction => ({ t: 'burst', n })) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 24 }).map((n): WsAction => ({ t: 'flood', n })) },
);

/** A raw stream socket that checks every frame it receives and counts the replies that end a message. */
class StreamProbe {
  /** Text and binary frames sent; each must be answered by exactly one done or error. */
  sent = 0;
  ended = 0;
  closed?: { code: number; reason: string };
  readonly problems: string[] = [];
  /** Replies by kind: done, error <code>. */
  readonly seen = new Map<string, number>();
  /** IDs received per req since its last done or error. */
  private readonly got = new Map<number, number>();
  /** Counts of the takes sent under each req. */
  private readonly counts = new Map<number, Set<number>>();
  private readonly tagOf = new Map<number, Set<string>>();
  private waiters: (() => void)[] = [];
  readonly closedP: Promise<void>;

  private constructor(readonly ws: WebSocket) {
    this.closedP = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        this.wake();
        resolve();
      }),
    );
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      try {
        this.receive(data, isBinary);
      } catch (err) {
        this.problems.push(`${(err as Error).message} in ${data.toString('utf8', 0, 200)}`);
      }
      this.wake();
    });
  }

  static async open(url: string): Promise<StreamProbe> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new StreamProbe(ws);
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private receive(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      assert.ok(data.length >= 8, 'a binary frame shorter than its header');
      const req = data.readUInt32LE(0);
      const count = data.readUInt32LE(4);
      assert.equal(data.length, 8 + 8 * count, 'binary frame length');
      assert.ok(count >= 1, 'an empty binary block');
      assert.ok(this.counts.has(req), `a binary block for req ${req}, never sent`);
      for (let i = 0; i < count; i++) {
        const id = data.readBigUInt64LE(8 + 8 * i);
        assert.ok(id > 0n && id <= MAX_I63, `binary ID ${id}`);
      }
      this.got.set(req, (this.got.get(req) ?? 0) + count);
      return;
    }
    const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    assert.ok(m.op === 'block' || m.op === 'done' || m.op === 'error', `unknown op ${String(m.op)}`);
    if (m.op === 'error') {
      assert.deepEqual(Object.keys(m).sort(), ['code', 'message', 'op', 'req']);
      assert.ok(m.req === null || (Number.isInteger(m.req) && (m.req as number) >= 0 && (m.req as number) <= 0xffffffff), `error req ${String(m.req)}`);
      assert.ok(typeof m.code === 'string' && STREAM_CODES.has(m.code), `error code ${String(m.code)}`);
      assert.ok(typeof m.message === 'string' && m.message.length > 0, 'error without message');
      if (m.req !== null) this.got.delete(m.req as number);
      tally(this.seen, `error ${m.code}`);
      this.ended++;
      return;
    }
    const req = m.req as number;
    assert.ok(this.counts.has(req), `a ${m.op} for req ${req}, never sent`);
    if (m.op === 'done') {
      assert.deepEqual(Object.keys(m).sort(), ['op', 'req']);
      const n = this.got.get(req) ?? 0;
      assert.ok(this.counts.get(req)!.has(n), `req ${req} done after ${n} IDs; counts asked: ${[...this.counts.get(req)!]}`);
      this.got.delete(req);
      tally(this.seen, 'done');
      this.ended++;
      return;
    }
    let n = 0;
    if (m.ids !== undefined) {
      const ids = m.ids as unknown[];
      assert.ok(Array.isArray(ids) && ids.length >= 1);
      const tags = [...this.tagOf.get(req)!];
      for (const id of ids) assert.ok(typeof id === 'string' && tags.some((t) => ID_TAGS[t]?.(id)), `block ID ${String(id)} of tags ${tags}`);
      n = ids.length;
    } else {
      const ranges = m.ranges as [string, string][];
      assert.ok(Array.isArray(ranges) && ranges.length >= 1);
      for (const [a, b] of ranges) {
        assert.ok(/^[1-9]\d*$/.test(a) && /^[1-9]\d*$/.test(b) && BigInt(a) <= BigInt(b), `range ${a}..${b}`);
        n += Number(BigInt(b) - BigInt(a)) + 1;
      }
    }
    this.got.set(req, (this.got.get(req) ?? 0) + n);
  }

  send(data: string | Uint8Array): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (typeof data === 'string') {
      // Remember what each parseable take asked for, to check its done.
      try {
        const m = JSON.parse(data) as Record<string, unknown>;
        if (m && typeof m === 'object' && Number.isInteger(m.req)) {
          const req = m.req as number;
          if (!this.counts.has(req)) this.counts.set(req, new Set());
          if (!this.tagOf.has(req)) this.tagOf.set(req, new Set());
          if (Number.isInteger(m.count)) this.counts.get(req)!.add(m.count as number);
          if (typeof m.tag === 'string') this.tagOf.get(req)!.add(m.tag);
        }
      } catch {
        // not JSON: answered with req null
      }
    }
    this.sent++;
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** Waits until every message sent has its one reply, or the server closed the socket. */
  async settle(timeoutMs = 15_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.ended < this.sent && !this.closed) {
      const left = until - Date.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    if (!this.closed) this.ws.close();
    await Promise.race([this.closedP, sleep(2000)]);
  }
}

// ---- UDP ----

/** The codes UDP.md allows for a datagram; `echo` when the reply must echo a request object. */
function udpExpected(buf: Buffer): { codes: number[]; echo: boolean; tag?: string } {
  const shape = udpRequestShape(buf, UDP_MAX_BYTES);
  if (shape.code !== 0 || !shape.request) return { codes: [shape.code], echo: shape.request !== undefined };
  const o = shape.request;
  const rule = o.rule_name as string;
  const tag = Object.keys(ID_TAGS).find((t) => t === rule);
  // Names that differ from a tag only in letter case: UDP.md does not say how they resolve.
  if (tag === undefined)
    return { codes: Object.keys(ID_TAGS).some((t) => t.toLowerCase() === rule.toLowerCase()) ? [-1, 0, -3, -6, -7, -8] : [-1], echo: true };
  // Without its token a protected tag answers as a missing one (the exposure policy).
  const authorized = tag !== 'locked' || o.token === lockedToken;
  if (!authorized) return { codes: [-1], echo: true, tag };
  if (tag === 'off') return { codes: [-7], echo: true, tag };
  if (o.action === 'monitor') return { codes: RULE_TAGS.has(tag) ? [0] : [-3], echo: true, tag };
  // A sharded tag needs a key, which the protocol has no field for.
  if (tag === 'shard') return { codes: [-3], echo: true, tag };
  if (tag === 'tiny') return { codes: [0, -6], echo: true, tag };
  return { codes: [0], echo: true, tag };
}

const jsonText = (v: unknown) => JSON.stringify(v);
const udpField = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<unknown>(...ID_POOL, 'nope', 'SEG', 'Rule') },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('', 'a b', 'x'.repeat(65), 'x'.repeat(5000), 'é', 7, -1, 1.5, true, null, [], ['rule'], { a: 1 }) },
);
const udpRequest = fc
  .record(
    {
      action: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom<unknown>('get', 'create', 'monitor') },
        { weight: 1, arbitrary: fc.constantFrom<unknown>('GET', 'delete', '', 'get ', 'x'.repeat(3000), 5, null, ['get'], { get: 1 }) },
      ),
      rule_name: udpField,
      app_name: fc.oneof({ weight: 4, arbitrary: fc.constantFrom<unknown>('shop', 'a.b-c_D') }, { weight: 1, arbitrary: udpField }),
      salt: fc.constantFrom<unknown>(null, '', 'u1', 'x'.repeat(64), 'x'.repeat(65), 'bad salt', 5, [], {}),
      token: fc.constantFrom<unknown>('LOCKED', 'nope', '', 5, null),
      seq: fc.jsonValue({ maxDepth: 3 }),
      code: fc.constantFrom<unknown>(0, 99, 'x'),
      data: fc.constantFrom<unknown>('client data', 1, null),
      message: fc.constant<unknown>('from the client'),
      extra: fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        fc.integer({ min: 1, max: 9000 }).map((n) => 'e'.repeat(n)),
      ),
    },
    { requiredKeys: [] },
  )
  .map((o) => (o.token === 'LOCKED' ? { ...o, token: lockedToken } : o));

const datagramArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 10, arbitrary: udpRequest.map((o) => Buffer.from(jsonText(o))) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 1500 }).map((b) => Buffer.from(b)) },
  { weight: 2, arbitrary: fc.json({ maxDepth: 3 }).map((s) => Buffer.from(s)) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), nastyString).map((s) => Buffer.from(jsonText(s))) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(udpRequest, fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80]), fc.nat())
      .map(([o, bad, at]) => {
        const s = Buffer.from(jsonText(o));
        const i = at % (s.length + 1);
        return Buffer.concat([s.subarray(0, i), Buffer.from(bad), s.subarray(i)]);
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 80 })
      .map((n) => Buffer.from(`{"action":"get","rule_name":"rule","app_name":"shop","seq":${'['.repeat(n)}1${']'.repeat(n)}}`)),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: UDP_MAX_BYTES - 200, max: 30_000 })
      .map((n) => Buffer.from(`{"action":"get","rule_name":"rule","app_name":"shop","pad":"${'p'.repeat(n)}"}`)),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        '',
        ' ',
        '{}',
        '[]',
        'null',
        '0',
        '1e309',
        '"x"',
        '{"action":"get"}',
        '{"action":"get","rule_name":"rule","app_name":"shop","action":"GET"}',
        '{"action":"get","rule_name":"rule","app_name":"shop","__proto__":{"x":1}}',
        '{"action":"get","rule_name":"rule","app_name":"shop","n":1e309}',
      )
      .map((s) => Buffer.from(s)),
  },
);

function checkUdp(buf: Buffer, raw: string): void {
  const exp = udpExpected(buf);
  const what = `datagram ${buf.toString('utf8', 0, 300)} (${buf.length} bytes) → ${raw.slice(0, 300)}`;
  let r: Json;
  try {
    r = JSON.parse(raw) as Json;
  } catch {
    assert.fail(`a reply that is not JSON: ${what}`);
  }
  assert.ok(typeof r === 'object' && r !== null && !Array.isArray(r), what);
  assert.ok(Number.isInteger(r.code), what);
  assert.ok(exp.codes.includes(r.code as number), `code ${String(r.code)}, expected one of ${exp.codes}: ${what}`);
  assert.equal(typeof r.message, 'string', what);
  assert.ok((r.message as string).length > 0, what);
  if (r.code !== 0) {
    assert.equal('data' in r, false, `an error reply carries data: ${what}`);
  } else if ((JSON.parse(buf.toString('utf8')) as Json).action === 'monitor') {
    assert.equal(r.message, 'ok', what);
    assert.ok(Number.isInteger((r.data as Json).counter), what);
  } else {
    assert.equal(r.message, 'success', what);
    assert.ok(exp.tag !== undefined && ID_TAGS[exp.tag](r.data as string), `not a valid ID of ${exp.tag}: ${what}`);
  }
  if (!exp.echo) assert.deepEqual(Object.keys(r).sort(), ['code', 'message'], what);
}

// ---- the tests ----

describe('fuzzing HTTP, websocket and UDP input against a child process', () => {
  const names = testNames();
  let node: ChildNode;
  let url: string;
  let udpPort: number;
  const faults: string[] = [];

  before(async () => {
    udpPort = await freePort();
    node = await spawnNode(names, {
      STREAM_MAX_COUNT: String(STREAM_MAX_COUNT),
      UDP_PORT: String(udpPort),
      // Random admin requests carry wrong tokens by the hundred: the slowing of a guessing source is admin-guard.test.ts's.
      ADMIN_AUTH_MAX_FAILURES: '1000000',
    });
    url = node.url;
    // Errors and fatals the node logs (an INTERNAL, a failed take, an uncaught exception), caught
    // as they come: the helper keeps only the last lines of output.
    let partial = '';
    const scan = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (/"level":(50|60)/.test(l) || /^\s*(Uncaught|Error:|TypeError|RangeError)/.test(l)) faults.push(l.slice(0, 500));
    };
    node.proc.stdout!.on('data', scan);
    node.proc.stderr!.on('data', scan);
    await createTag(url, { tag: 'seg' });
    await createTag(url, { tag: 'nodeo', order: 'node' });
    await createTag(url, { tag: 'odd', order: 'node', stride: 2, offset: 1, node_block: 50 });
    await createTag(url, { tag: 'locked' });
    await createTag(url, { tag: 'shard', layout: 'sharded', shards: 8, app_id: 3 });
    await createTag(url, { tag: 'tiny', step: 10, min_step: 10, max_id_limit: 60 });
    await createTag(url, { tag: 'sf', mode: 'snowflake' });
    await createTag(url, { tag: 'off', enabled: false });
    await createTag(url, { tag: 'rule', ...RULE_DEF });
    await createTag(url, { tag: 'salty', ...SALTY_DEF });
    await createTag(url, { tag: 'adm-seg' });
    await createTag(url, { tag: 'adm-sf', mode: 'snowflake' });
    await createTag(url, { tag: 'adm-rule', ...RULE_DEF });
    const tok = await fetch(`${url}/v1/admin/tags/locked/tokens`, { method: 'POST', headers: adminHeaders, body: '{"name":"fuzz"}' });
    assert.equal(tok.status, 201);
    lockedToken = ((await tok.json()) as { token: string }).token;
  });

  after(async () => {
    agent.destroy();
    if (node) {
      // Still alive and healthy after everything above, and nothing logged as an unexpected fault.
      assert.equal(node.proc.exitCode, null, `the node exited:\n${node.output.slice(-40).join('\n')}`);
      const h = await fetch(`${url}/healthz`);
      assert.equal(h.status, 200);
      await node.stop();
      assert.deepEqual(faults.slice(0, 5), [], 'the node logged unexpected faults');
    }
    await cleanup(names);
  });

  // Each of these once answered in Fastify's or @fastify/websocket's own shape (or, for HEAD,
  // with a body the client could not parse), or decoded a rule tag as if it were a number.
  it('answers requests refused before routing in the API error shape', async () => {
    const err = (status: number, code: string) => (res: HttpAnswer) => {
      checkError(res, `${res.status} ${res.body.toString()}`);
      assert.equal(res.status, status, res.body.toString());
      assert.equal((JSON.parse(res.body.toString()) as { error: { code: string } }).error.code, code);
    };
    const get = (path: string, headers: Record<string, string> = {}) => send(url, { method: 'GET', path, headers });
    err(400, 'INVALID_ARGUMENT')(await get('/v1/id/%zz'));
    err(400, 'INVALID_ARGUMENT')(await get('/v1/admin/tags/%E9/tokens', { authorization: `Bearer ${ADMIN_TOKEN}` }));
    err(400, 'INVALID_ARGUMENT')(await get(`/v1/id/${'x'.repeat(201)}`));
    err(400, 'INVALID_ARGUMENT')(await get('/v1/stream'));
    err(400, 'INVALID_ARGUMENT')(await get('/v1/decode/rule/20240101000000001'));
    // Refused by Node's parser: too large a head, a byte not allowed in a path, an unknown method.
    for (const [head, status] of [
      [`GET /v1/id/seg?key=${'k'.repeat(17 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
      ['GET /v1/id/\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['FOO /v1/id/seg HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ] as const) {
      const out = await rawHttp(url, head);
      const [top, body] = out.split('\r\n\r\n');
      assert.match(top, new RegExp(`^HTTP/1.1 ${status} `), out);
      assert.match(top, /content-type: application\/json/i, out);
      assert.deepEqual(Object.keys((JSON.parse(body) as { error: object }).error), ['code', 'message'], out);
      assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'INVALID_ARGUMENT', out);
    }
    // The answer to HEAD carries no body, so a client can read it.
    const head = await rawHttp(url, 'HEAD /v1/id/\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(head, /^HTTP\/1.1 400 /, head);
    assert.ok(head.endsWith('\r\n\r\n'), `a body after the head: ${head}`);
    const res = await send(url, { method: 'HEAD', path: '/v1/id/\u00e9', headers: {} });
    assert.equal(res.status, 400);
  });

  it(`answers random HTTP requests with a documented success or error (${HTTP_RUNS} runs)`, { timeout: 600_000 }, async (t) => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(httpCaseArb, async (c) => {
        const a = await send(url, c);
        checkHttp(c, a);
        const code = a.status >= 400 && c.method !== 'HEAD' ? (JSON.parse(a.body.toString()) as { error: { code: string } }).error.code : '';
        tally(seen, `${a.status}${code && ` ${code}`}`);
      }),
      params(HTTP_RUNS),
    );
    t.diagnostic(`answers: ${show(seen)}`);
    // The generators reach successes and the common refusals, not one kind of answer only.
    const has = (p: string) => [...seen.keys()].some((k) => k.startsWith(p));
    if (HTTP_RUNS >= 1000)
      for (const p of ['200', '201', '204', '400 INVALID_ARGUMENT', '401', '404 TAG_NOT_FOUND', '404 NOT_FOUND', '409 TAG_DISABLED', '413', '415'])
        assert.ok(has(p), `no answer ${p} in ${HTTP_RUNS} runs: ${show(seen)}`);
    // The ID routes still serve.
    const r = await fetch(`${url}/v1/ids/seg?count=3`);
    assert.equal(r.status, 200);
  });

  it(`answers random websocket frames with documented errors or close codes (${WS_RUNS} sessions)`, { timeout: 600_000 }, async (t) => {
    const seen = new Map<string, number>();
    // A bystander: its takes keep working whatever the fuzzed sockets do.
    const bystander = await StreamProbe.open(url);
    let bystanderReq = 1000;
    await fc.assert(
      fc.asyncProperty(fc.array(wsActionArb, { minLength: 1, maxLength: 12 }), async (actions) => {
        const probes: StreamProbe[] = [await StreamProbe.open(url)];
        const cur = () => probes[probes.length - 1];
        const reopen = async () => {
          try {
            probes.push(await StreamProbe.open(url));
          } catch (err) {
            assert.fail(`a stream socket could not be opened: ${(err as Error).message}`);
          }
        };
        try {
          for (const a of actions) {
            if (a.t === 'text' || a.t === 'binary') cur().send(a.data);
            else if (a.t === 'oversize') {
              cur().send(JSON.stringify({ op: 'take', req: 1, tag: 'seg', count: 1, pad: 'x'.repeat(17 * 1024) }));
              await Promise.race([cur().closedP, sleep(REQUEST_TIMEOUT_MS)]);
              assert.equal(cur().closed?.code, 1009, 'a control frame over 16 KiB closes the socket with 1009');
              await reopen();
            } else if (a.t === 'terminate') {
              cur().ws.terminate();
              await reopen();
            } else if (a.t === 'reopen') {
              await cur().settle();
              await cur().close();
              await reopen();
            } else if (a.t === 'flood') {
              // More takes in flight than a socket may hold (16 by default): the rest are refused.
              for (let i = 0; i < a.n; i++) cur().send(JSON.stringify({ op: 'take', req: 100 + i, tag: 'seg', count: 50_000, block: 1000, format: 'binary' }));
            } else {
              // Rapid open/close: sockets that send a take and vanish at once.
              for (let i = 0; i < a.n; i++) {
                const s = await StreamProbe.open(url);
                s.send(JSON.stringify({ op: 'take', req: i, tag: 'seg', count: 100_000, format: 'binary' }));
                if (i % 2) s.ws.terminate();
                else s.ws.close();
              }
            }
          }
          await cur().settle();
          for (const [i, p] of probes.entries()) {
            assert.deepEqual(p.problems, [], `socket ${i}: frames off the protocol: ${p.problems.slice(0, 3).join('; ')}`);
            for (const [k, n] of p.seen) seen.set(k, (seen.get(k) ?? 0) + n);
            if (p.closed) tally(seen, `close ${p.closed.code}`);
            if (p.closed && p.closed.code !== 1005 && p.closed.code !== 1006 && p.closed.code !== 1000) {
              assert.ok(CLOSE_CODES.has(p.closed.code), `socket ${i} closed with ${p.closed.code} ${p.closed.reason}`);
            }
          }
          const last = cur();
          if (!last.closed) assert.equal(last.ended, last.sent, `${last.sent} messages sent, ${last.ended} answered with done or error`);
          // The bystander still gets its IDs.
          const before = bystander.ended;
          bystander.send(JSON.stringify({ op: 'take', req: bystanderReq++, tag: 'seg', count: 5, format: 'json' }));
          await bystander.settle();
          assert.equal(bystander.ended, before + 1, 'the bystander got no answer');
          assert.deepEqual(bystander.problems, [], 'bystander');
        } finally {
          for (const p of probes) if (!p.closed) p.ws.terminate();
        }
      }),
      // No shrinking: a shrink step can wait out the reply timeout, and the session is short anyway.
      { ...params(WS_RUNS), endOnFailure: true },
    );
    t.diagnostic(`replies: ${show(seen)}`);
    if (WS_RUNS >= 100)
      for (const k of ['done', 'error INVALID_ARGUMENT', 'error LIMIT_EXCEEDED', 'close 1009'])
        assert.ok(seen.has(k), `no ${k} in ${WS_RUNS} sessions: ${show(seen)}`);
    assert.equal(bystander.closed, undefined, 'the bystander socket was closed');
    await bystander.close();
  });

  it(`answers every well-formed UDP request exactly once, with a documented code, never a refusal longer than the datagram nor an answer over twice its size (${UDP_RUNS} runs)`, {
    timeout: 600_000,
  }, async (t) => {
    const c = await UdpClient.open();
    const seen = new Map<string, number>();
    let sent = 0;
    let probes = 0;
    try {
      await fc.assert(
        fc.asyncProperty(datagramArb, async (buf) => {
          let raw: string;
          if (udpRequestShape(buf, UDP_MAX_BYTES).code === 0) {
            // Well-formed: always answered (a refusal's short form fits in any such request).
            raw = await c.exchange(udpPort, buf, REQUEST_TIMEOUT_MS);
          } else {
            // Refused as it is read: answered only by a reply no longer than the datagram.
            const marker = `probe-${++probes}`;
            const probe = JSON.stringify({ action: 'get', rule_name: 'seg', app_name: 'p', seq: marker });
            const replies = await c.exchangeOrNone(udpPort, buf, probe, marker, REQUEST_TIMEOUT_MS);
            sent++;
            assert.ok(replies.length <= 1, `${replies.length} replies to ${buf.toString('utf8', 0, 300)}`);
            if (replies.length === 0) return void tally(seen, 'none');
            raw = replies[0];
            assert.ok(Buffer.byteLength(raw) <= buf.length, `a reply of ${Buffer.byteLength(raw)} bytes to ${buf.length}: ${raw}`);
          }
          sent++;
          const limit = (JSON.parse(raw) as Json).code === 0 ? 2 * buf.length : buf.length;
          assert.ok(Buffer.byteLength(raw) <= limit, `a reply of ${Buffer.byteLength(raw)} bytes to ${buf.length}: ${raw}`);
          checkUdp(buf, raw);
          tally(seen, String((JSON.parse(raw) as Json).code));
        }),
        params(UDP_RUNS),
      );
      t.diagnostic(`codes: ${show(seen)}`);
      if (UDP_RUNS >= 1000)
        for (const code of ['0', '-1', '-2', '-3', '-4', '-5', '-7', 'none'])
          assert.ok(seen.has(code), `no code ${code} in ${UDP_RUNS} datagrams: ${show(seen)}`);
      await sleep(200);
      assert.equal(c.received, sent, 'a datagram got more than one reply');
      // Still serving.
      const ok = await c.request(udpPort, { action: 'get', rule_name: 'rule', app_name: 'shop' });
      assert.equal(ok.code, 0, JSON.stringify(ok));
    } finally {
      c.close();
    }
  });
});
