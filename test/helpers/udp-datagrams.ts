// Random datagrams for the UDP listener's tests, drawn from a seeded generator: valid requests,
// and malformed ones of every kind (not JSON, not an object, bad or missing fields, nesting and
// size past the limits, bad UTF-8, raw control characters), each of which must be refused.
import { type Rng } from '../../tools/prng.js';
import { type Json, type JsonValue } from '../../tools/udp-client.js';

// ---- random datagrams ----

const ACTIONS = ['get', 'create', 'monitor'];
const BAD_NAMES: JsonValue[] = [
  '',
  'a b',
  'x'.repeat(65),
  'é',
  'a/b',
  'tab\t',
  'nul\u0000',
  '\ud800',
  'o2o ',
  7,
  0,
  -1,
  1.5,
  true,
  false,
  [],
  ['o2o'],
  {},
  { rule: 'o2o' },
];
const BAD_ACTIONS = [
  'GET',
  'Get',
  'CREATE',
  'Monitor',
  'delete',
  'set',
  'get ',
  ' get',
  'get\u0000',
  'ge',
  'creat',
  'monitor2',
  'getx',
  '',
  '😀',
  'stats',
  'id',
];

function randomString(r: Rng, n: number, alphabet?: string): string {
  const a = alphabet ?? 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-';
  let s = '';
  for (let i = 0; i < n; i++) s += a[r.int(0, a.length - 1)];
  return s;
}

function randomValue(r: Rng, d = 0): JsonValue {
  switch (r.int(0, d > 3 ? 4 : 6)) {
    case 0:
      return null;
    case 1:
      return r.next() < 0.5;
    case 2:
      return r.pick([0, -0, 1, -1, 1.5, 1e21, 1e-7, 2 ** 53 + 1, -123456789, 0.1]);
    case 3:
      return randomString(r, r.int(0, 12));
    case 4:
      return r.pick(['é', '😀', '\u0000', '"', '\\', '\ud800', 'ｚ', '\n']);
    case 5:
      return Array.from({ length: r.int(0, 3) }, () => randomValue(r, d + 1));
    default: {
      const o: Json = {};
      for (let i = r.int(0, 3); i > 0; i--)
        o[r.pick(['a', 'B', 'z', 'é', '😀', 'ｚ', '_', randomString(r, 3)])] = randomValue(r, d + 1);
      return o;
    }
  }
}

function validRequest(r: Rng): Json {
  const o: Json = { action: r.pick(ACTIONS), rule_name: 'o2o', app_name: r.pick(['test', 'fz', 'a.b-c_D']) };
  if (r.next() < 0.5) o.seq = randomValue(r);
  if (r.next() < 0.3) o.salt = r.pick([null, '', 'u1', randomString(r, 64)]);
  if (r.next() < 0.3) o[randomString(r, r.int(1, 8))] = randomValue(r);
  return o;
}

function nest(r: Rng, levels: number): JsonValue {
  let v: JsonValue = r.next() < 0.5 ? 1 : 'x';
  for (let i = 0; i < levels; i++) v = r.next() < 0.5 ? [v] : { k: v };
  return v;
}

/** A shuffled JSON object text (JSON.stringify keeps insertion order, so shuffle the entries). */
function objectText(r: Rng, o: Json): string {
  const entries = Object.entries(o);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [entries[i], entries[j]] = [entries[j], entries[i]];
  }
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
}

export type Kind =
  | 'truncated'
  | 'mutated'
  | 'not-object'
  | 'huge-fields'
  | 'oversized'
  | 'unsendable'
  | 'missing-field'
  | 'invalid-field'
  | 'unknown-action'
  | 'binary'
  | 'empty'
  | 'too-deep'
  | 'unknown-rule'
  | 'wrong-case'
  | 'duplicate-keys'
  | 'bad-utf8'
  | 'raw-control';

export function malformed(r: Rng, kind: Kind, maxBytes: number): Buffer {
  const req = validRequest(r);
  switch (kind) {
    case 'truncated': {
      const s = objectText(r, req);
      return Buffer.from(s.slice(0, r.int(1, s.length - 1)));
    }
    case 'mutated': {
      const s = Buffer.from(objectText(r, req));
      for (let n = r.int(1, 4); n > 0; n--) {
        const at = r.int(0, s.length - 1);
        s[at] = r.pick([0x7b, 0x7d, 0x22, 0x3a, 0x2c, 0x5b, 0x5d, 0x5c, 0x20, 0x00, 0xff, r.int(0, 255)]);
      }
      return s;
    }
    case 'not-object':
      return Buffer.from(
        r.pick([
          // eslint-disable-next-line no-loss-of-precision -- numbers past a double's range and precision on purpose
          () => JSON.stringify(r.pick([0, -1, 3.14, 1e400, 123456789012345678901234567890])),
          () => JSON.stringify(randomString(r, r.int(0, 50))),
          () => JSON.stringify([req]),
          () => JSON.stringify(Array.from({ length: r.int(0, 10) }, () => randomValue(r))),
          () => r.pick(['null', 'true', 'false', '[]', '""', ' 42 ', '[{}]', '"{\\"action\\":\\"get\\"}"']),
        ])(),
      );
    case 'huge-fields': {
      const field = r.pick(['rule_name', 'app_name', 'salt', 'action']);
      req.action = r.pick(ACTIONS.filter((a) => a !== 'monitor'));
      req[field] = randomString(r, r.int(65, maxBytes - 120));
      return Buffer.from(objectText(r, req));
    }
    case 'oversized': {
      req.pad = 'p'.repeat(r.int(maxBytes + 1 - 60, 20000));
      const b = Buffer.from(objectText(r, req));
      return b.length > maxBytes ? b : Buffer.concat([b, Buffer.alloc(maxBytes + 1 - b.length, 0x20)]);
    }
    case 'unsendable':
      return Buffer.alloc(r.int(65508, 70000), 0x20);
    case 'missing-field': {
      const drop = ['action', 'rule_name', 'app_name'].filter(() => r.next() < 0.6);
      for (const k of drop.length ? drop : [r.pick(['action', 'rule_name', 'app_name'])]) delete req[k];
      return Buffer.from(objectText(r, req));
    }
    case 'invalid-field': {
      const field = r.pick(['action', 'rule_name', 'app_name', 'salt']);
      if (field === 'salt') req.action = 'get';
      req[field] =
        field === 'action' ? r.pick<JsonValue>([7, null, true, [], {}, ['get'], { get: 1 }]) : r.pick(BAD_NAMES);
      if (field === 'salt' && req.salt === null) req.salt = 5;
      return Buffer.from(objectText(r, req));
    }
    case 'unknown-action':
      req.action = r.next() < 0.7 ? r.pick(BAD_ACTIONS) : randomString(r, r.int(1, 10));
      return Buffer.from(objectText(r, req));
    case 'binary': {
      const b = Buffer.alloc(r.int(1, 1200));
      for (let i = 0; i < b.length; i++) b[i] = r.int(0, 255);
      return b;
    }
    case 'empty':
      return Buffer.alloc(0);
    case 'too-deep':
      req.seq = nest(r, r.int(32, 200)); // the root object is level 1: 33 levels and more
      return Buffer.from(objectText(r, req));
    case 'unknown-rule':
      req.rule_name = r.pick(['nope', 'o2o_', 'o2', 'o2o.', randomString(r, r.int(1, 64))]);
      return Buffer.from(objectText(r, req));
    case 'wrong-case': {
      const k = r.pick(['action', 'rule_name', 'app_name']);
      const v = req[k];
      delete req[k];
      req[r.pick([k.toUpperCase(), k[0].toUpperCase() + k.slice(1), k.replace('_', '-'), ` ${k}`])] = v;
      return Buffer.from(objectText(r, req));
    }
    case 'duplicate-keys': {
      const s = objectText(r, req);
      return Buffer.from(`${s.slice(0, -1)},"action":${JSON.stringify(r.pick([...BAD_ACTIONS, 5, null]))}}`);
    }
    case 'bad-utf8': {
      const s = objectText(r, req);
      const at = s.indexOf('"', 1) + 1;
      const bad = r.pick([
        [0xff],
        [0xc3],
        [0xe2, 0x82],
        [0xed, 0xa0, 0x80],
        [0xc0, 0xaf],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
      ]);
      return Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from(bad), Buffer.from(s.slice(at))]);
    }
    case 'raw-control': {
      const s = objectText(r, { ...req, seq: 'a' });
      const at = s.indexOf('"a"') + 1;
      return Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from([r.int(0, 31)]), Buffer.from(s.slice(at))]);
    }
  }
}

export const KINDS: readonly Kind[] = [
  'truncated',
  'mutated',
  'not-object',
  'huge-fields',
  'oversized',
  'missing-field',
  'invalid-field',
  'unknown-action',
  'binary',
  'empty',
  'too-deep',
  'unknown-rule',
  'wrong-case',
  'duplicate-keys',
  'bad-utf8',
  'raw-control',
];
