// suite: single — the UDP protocol's encoding; rule IDs run on the cluster in rules.test.ts
// The id_server-compatible UDP listener against real Redis and MySQL: replies echo the whole
// request with keys sorted at every level (by UTF-8 bytes), `create` is `get`, unknown rules
// answer -1, `monitor` reports the counter of the current period, and a few thousand
// randomized malformed datagrams each get exactly one reply with the documented non-zero
// code (or cannot be sent at all), after which the process still serves UDP and HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNode, type Node } from '../../src/process/serve.js';
import { cleanup, testConfig, testNames } from '../../tools/env.js';
import { createTag } from '../../tools/node.js';
import { rng, SEED, type Rng } from '../../tools/prng.js';
import { UdpClient, type Json, type JsonValue } from '../../tools/udp-client.js';
import { freePort } from '../../tools/child.js';
import { udpRequestShape } from '../helpers/udp-oracle.js';

/** The short messages of UDP.md's code table. */
const UDP_CODE_NAMES = new Map([
  [-1, 'UNKNOWN_RULE'],
  [-2, 'MALFORMED'],
  [-3, 'INVALID_FIELD'],
  [-4, 'UNKNOWN_ACTION'],
  [-5, 'TOO_LARGE'],
]);

/** Compact JSON with object keys sorted by their UTF-8 bytes at every level, as jsoncpp writes it. */
function canonical(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function todayUtc(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear() % 10}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
}

// ---- the documented request rules, written out independently as an oracle for the fuzz ----

/** What UDP.md says the reply to a datagram is: its code, and whether it echoes a request object. */
function expected(buf: Buffer, maxBytes: number, rules: ReadonlySet<string>): { code: number; echo?: Json } {
  const shape = udpRequestShape(buf, maxBytes);
  if (shape.code !== 0 || !shape.request) return { code: shape.code, echo: shape.request };
  const o = shape.request;
  // Rule names that differ from an existing one only in letter case are left out of the fuzz
  // (UDP.md does not say whether rule names are case-sensitive): report them as valid.
  if (![...rules].some((n) => n.toLowerCase() === (o.rule_name as string).toLowerCase())) return { code: -1, echo: o };
  return { code: 0, echo: o };
}

const ECHOED = ['action', 'rule_name', 'app_name', 'salt', 'token', 'seq', 'idempotency_key'];

/**
 * The request as UDP.md says the reply echoes it: only the protocol's fields, each only when it
 * is a string or written in the datagram as compact JSON writes it back (no number re-expanded).
 */
function echoed(o: Json, text: string): Json {
  const out: Json = {};
  for (const k of ECHOED) if (Object.hasOwn(o, k) && (typeof o[k] === 'string' || text.includes(JSON.stringify(o[k])))) out[k] = o[k];
  return out;
}

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
      for (let i = r.int(0, 3); i > 0; i--) o[r.pick(['a', 'B', 'z', 'é', '😀', 'ｚ', '_', randomString(r, 3)])] = randomValue(r, d + 1);
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

type Kind =
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

function malformed(r: Rng, kind: Kind, maxBytes: number): Buffer {
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
      req[field] = field === 'action' ? r.pick<JsonValue>([7, null, true, [], {}, ['get'], { get: 1 }]) : r.pick(BAD_NAMES);
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
      const bad = r.pick([[0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80]]);
      return Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from(bad), Buffer.from(s.slice(at))]);
    }
    case 'raw-control': {
      const s = objectText(r, { ...req, seq: 'a' });
      const at = s.indexOf('"a"') + 1;
      return Buffer.concat([Buffer.from(s.slice(0, at)), Buffer.from([r.int(0, 31)]), Buffer.from(s.slice(at))]);
    }
  }
}

const KINDS: readonly Kind[] = [
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

describe('UDP listener (id_server protocol)', () => {
  const names = testNames();
  const MAX = 1024;
  let node: Node;
  let url: string;
  let port: number;
  let c: UdpClient;
  const RULES = new Set(['o2o', 'o2n', 'salted', 'seg']);

  before(async () => {
    const udpPort = await freePort();
    node = await startNode(testConfig(names, { UDP_PORT: String(udpPort), UDP_MAX_BYTES: String(MAX), NODE_OFFSET: '7' }));
    url = node.url!;
    port = node.udpPort!;
    assert.equal(port, udpPort);
    await createTag(url, {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    await createTag(url, {
      tag: 'salted',
      mode: 'rule',
      template: '{app}-{yyyy}{MM}{dd}-{salt}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    await createTag(url, {
      tag: 'o2n',
      mode: 'rule',
      order: 'node',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    await createTag(url, { tag: 'seg', mode: 'segment' });
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  it("echoes the protocol's fields and no other, with keys sorted by UTF-8 bytes at every level, as compact JSON", async () => {
    const text =
      '{"seq":{"z":[3,{"b":null,"a":"x"}],"ｚ":1,"😀":2,"é":3,"A":true},"zeta":-1.5,"rule_name":"salted","Alpha":"A",' +
      '"app_name":"shop","salt":"u1","_x":"y","action":"get","data":"client","code":99,"message":"hi","nested":{"deep":{"deeper":[[],{},"\\u00e9\\ud83d\\ude00"]}}}';
    const t0 = Date.now();
    const raw = await c.exchange(port, text);
    const reply = JSON.parse(raw) as Json;
    assert.equal(reply.code, 0, raw);
    assert.equal(reply.message, 'success');
    const day = new Date(t0).toISOString().slice(0, 10).replaceAll('-', '');
    assert.match(reply.data as string, new RegExp(`^shop-${day}-u1\\d{4}$`));
    const want = { ...echoed(JSON.parse(text) as Json, text), code: 0, message: 'success', data: reply.data };
    assert.equal(raw, canonical(want));
    // The order spelled out: upper case, "_", lower case; then é (C3 A9), ｚ (EF BD 9A), 😀 (F0 9F 98 80).
    assert.deepEqual(Object.keys(reply), ['action', 'app_name', 'code', 'data', 'message', 'rule_name', 'salt', 'seq']);
    assert.deepEqual(Object.keys(reply.seq as Json), ['A', 'z', 'é', 'ｚ', '😀']);
    assert.deepEqual(Object.keys(((reply.seq as Json).z as JsonValue[])[1] as Json), ['a', 'b']);
    assert.equal(/\s/.test(raw.replace(/"(?:[^"\\]|\\.)*"/g, '""')), false, `whitespace outside strings: ${raw}`);

    // Each kind of seq comes back as sent, on a plain rule too; HTTP sees the same salt rule.
    for (const seq of ['7', 7, null, false, [1, '2', [3]], { b: 1, a: [{ d: 0, c: 0 }] }, '', 'é😀']) {
      const r = await c.request(port, { action: 'get', app_name: 'test', rule_name: 'o2o', seq });
      assert.equal(r.code, 0);
      assert.deepEqual(r.seq, seq);
      assert.match(r.data as string, new RegExp(`^${todayUtc(t0)}\\d{4}$`));
    }
    const h = (await (await fetch(`${url}/v1/id/salted?app=shop&salt=u1`)).json()) as { id: string };
    assert.equal(h.id, `shop-${day}-u1${String(Number((reply.data as string).slice(-4)) + 1).padStart(4, '0')}`);
  });

  it('treats create as get: one run of counters, the action echoed as sent', async () => {
    const ids: string[] = [];
    for (const action of ['get', 'create', 'get', 'create', 'create']) {
      const r = await c.request(port, { action, rule_name: 'o2o', app_name: 'cr', salt: null, seq: action });
      assert.equal(r.code, 0, JSON.stringify(r));
      assert.equal(r.action, action);
      assert.equal(r.salt, null);
      ids.push(r.data as string);
    }
    const h = (await (await fetch(`${url}/v1/id/o2o?app=cr`)).json()) as { id: string };
    ids.push(h.id);
    assert.deepEqual(
      ids.map((id) => id.slice(5)),
      ['0000', '0001', '0002', '0003', '0004', '0005'],
    );
  });

  it('answers an unknown rule with code -1 and no data, never longer than the request', async () => {
    for (const action of ['get', 'create', 'monitor']) {
      // Room for the whole message (the pad is not echoed): the request's fields echoed.
      const long = JSON.stringify({ action, rule_name: 'nope', app_name: 'test', seq: 9, pad: 'p'.repeat(200), data: 'from the client', extra: { x: [1] } });
      let raw = await c.exchange(port, long);
      const r = JSON.parse(raw) as Json;
      assert.ok(Buffer.byteLength(raw) <= Buffer.byteLength(long), raw);
      assert.ok((r.message as string).includes('nope'), raw);
      assert.equal(raw, canonical({ action, app_name: 'test', code: -1, message: r.message, rule_name: 'nope', seq: 9 }));
      // No room: code, the code's name and seq only.
      const short = JSON.stringify({ action, rule_name: 'nope', app_name: 'test', seq: 9 });
      raw = await c.exchange(port, short);
      assert.equal(raw, '{"code":-1,"message":"UNKNOWN_RULE","seq":9}');
      assert.ok(Buffer.byteLength(raw) <= Buffer.byteLength(short));
    }
  });

  it('monitor answers the counter of the current period and the node offset, with message "ok"', async () => {
    const mon = (extra: Json = {}) => c.request(port, { action: 'monitor', rule_name: 'o2o', app_name: 'mon', ...extra });
    let r = await mon({ seq: 'm0' });
    assert.deepEqual(r, { action: 'monitor', app_name: 'mon', code: 0, data: { counter: -1, node_offset: 7 }, message: 'ok', rule_name: 'o2o', seq: 'm0' });
    let last = '';
    for (let i = 0; i < 3; i++) last = (await c.request(port, { action: 'get', rule_name: 'o2o', app_name: 'mon' })).data as string;
    // monitor ignores the salt, even one get would refuse.
    const raw = await c.exchange(port, JSON.stringify({ action: 'monitor', rule_name: 'o2o', app_name: 'mon', salt: 'not valid!', seq: [1] }));
    assert.equal(
      raw,
      canonical({
        action: 'monitor',
        app_name: 'mon',
        code: 0,
        data: { counter: 2, node_offset: 7 },
        message: 'ok',
        rule_name: 'o2o',
        salt: 'not valid!',
        seq: [1],
      }),
    );
    assert.equal(last.slice(5), '0002');
    await fetch(`${url}/v1/ids/o2o?count=5&app=mon`);
    r = await mon();
    assert.deepEqual(r.data, { counter: 7, node_offset: 7 });
    // Per app name; and only for rules.
    assert.deepEqual((await c.request(port, { action: 'monitor', rule_name: 'o2o', app_name: 'cr' })).data, { counter: 5, node_offset: 7 });
    r = await c.request(port, { action: 'monitor', rule_name: 'seg', app_name: 'mon' });
    assert.equal(r.code, -3);
    assert.equal('data' in r, false);
  });

  it('monitor of an order-node rule answers the last counter this process handed out, not the end of its block', async () => {
    const mon = async (app: string) => (await c.request(port, { action: 'monitor', rule_name: 'o2n', app_name: app })).data;
    assert.deepEqual(await mon('fresh'), { counter: -1, node_offset: 7 });
    let last = '';
    for (let i = 0; i < 3; i++) last = (await c.request(port, { action: 'get', rule_name: 'o2n', app_name: 'fresh' })).data as string;
    assert.equal(last.slice(5), '0002');
    assert.deepEqual(await mon('fresh'), { counter: 2, node_offset: 7 });
    const http = (await (await fetch(`${url}/v1/ids/o2n?count=4&app=fresh`)).json()) as { ids: string[] };
    assert.equal(http.ids.at(-1)!.slice(5), '0006');
    assert.deepEqual(await mon('fresh'), { counter: 6, node_offset: 7 });
    // Another app of the same rule has its own counter.
    assert.deepEqual(await mon('other'), { counter: -1, node_offset: 7 });
  });

  it('never answers a datagram that is not a request with more bytes than it holds, and still answers every request', async () => {
    let n = 0;
    const probe = () => {
      const marker = `probe-${++n}`;
      return { marker, text: JSON.stringify({ action: 'get', rule_name: 'seg', app_name: 'probe', seq: marker }) };
    };
    for (const d of ['', 'x', '{', 'abc', '[]', '1', '"x"', 'null', 'true', '[1,2]', '{"a":1', '\u00ff']) {
      const buf = d === '\u00ff' ? Buffer.from([0xff]) : Buffer.from(d);
      const p = probe();
      const replies = await c.exchangeOrNone(port, buf, p.text, p.marker);
      for (const r of replies)
        assert.ok(Buffer.byteLength(r) <= buf.length, `a reply of ${Buffer.byteLength(r)} bytes to the ${buf.length}-byte datagram ${JSON.stringify(d)}: ${r}`);
      assert.deepEqual(replies, [], `no error reply fits in ${JSON.stringify(d)}`);
    }
    // A datagram long enough to hold its error reply still gets it.
    const long = `[${'0,'.repeat(40)}0]`;
    const p = probe();
    const replies = await c.exchangeOrNone(port, long, p.text, p.marker);
    assert.equal(replies.length, 1);
    assert.ok(Buffer.byteLength(replies[0]) <= long.length);
    assert.equal((JSON.parse(replies[0]) as Json).code, -2);
    // A refusal of a JSON object is no longer than the datagram either: "{}" gets none.
    const q = probe();
    assert.deepEqual(await c.exchangeOrNone(port, '{}', q.text, q.marker), []);
    assert.equal((await c.request(port, { action: 'get', rule_name: 'nope', app_name: 'a' })).code, -1);
    const ok = await c.request(port, { action: 'get', rule_name: 'o2o', app_name: 'amp', seq: 1 });
    assert.equal(ok.code, 0, JSON.stringify(ok));
  });

  // The documented replies are held to the page itself by udp-docs.test.ts.
  it('reads 32 levels of nesting and UDP_MAX_BYTES, and refuses one more of either', async () => {
    // Nesting: 32 levels are read, 33 are refused.
    const deep = (n: number) => `{"action":"get","rule_name":"o2o","app_name":"deep","seq":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
    assert.equal((await c.request(port, deep(32))).code, 0);
    assert.deepEqual(Object.keys(await c.request(port, deep(33))), ['code', 'message']);
    assert.equal((await c.request(port, deep(33))).code, -2);
    // A datagram of exactly UDP_MAX_BYTES is read; one byte more is not.
    const padTo = (n: number) => {
      const base = '{"action":"get","rule_name":"o2o","app_name":"size","pad":""}';
      return base.replace('"pad":""', `"pad":"${'p'.repeat(n - base.length)}"`);
    };
    assert.equal((await c.request(port, padTo(MAX))).code, 0);
    const big = await c.request(port, padTo(MAX + 1));
    assert.deepEqual([big.code, Object.keys(big)], [-5, ['code', 'message']]);
  });

  it(`answers each of a few thousand malformed datagrams at most once with the documented code, never longer than a datagram that is no request (seed ${SEED}), then still serves`, {
    timeout: 50000,
  }, async () => {
    const before = (await (await fetch(`${url}/v1/id/o2o?app=fz`)).json()) as { id: string };
    const WORKERS = 8;
    const PER_WORKER = 400;
    const clients = await Promise.all(Array.from({ length: WORKERS }, () => UdpClient.open()));
    const byKind = new Map<string, number>();
    const byCode = new Map<number, number>();
    const sent = new Array<number>(WORKERS).fill(0);
    const valid: string[][] = clients.map(() => []);
    let unsendable = 0;
    let dropped = 0;
    try {
      await Promise.all(
        clients.map(async (cl, w) => {
          const r = rng(SEED * 31 + w);
          for (let i = 0; i < PER_WORKER; i++) {
            // Now and then a valid request in between: it must still succeed.
            if (i % 50 === 49) {
              const seq = `w${w}-${i}`;
              const text = JSON.stringify({ action: r.pick(['get', 'create']), rule_name: 'o2o', app_name: 'fz', seq });
              const answer = await cl.exchange(port, text);
              assert.ok(Buffer.byteLength(answer) <= 2 * text.length, `an answer of ${Buffer.byteLength(answer)} bytes to ${text}`);
              const rep = JSON.parse(answer) as Json;
              sent[w]++;
              assert.equal(rep.code, 0, JSON.stringify(rep));
              assert.equal(rep.seq, seq);
              valid[w].push(rep.data as string);
              continue;
            }
            const kind = i % 97 === 0 ? 'unsendable' : r.pick(KINDS);
            byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
            // A random edit can leave a request valid (a salt of "", a mutated space): draw again.
            let buf = malformed(r, kind, MAX);
            while (expected(buf, MAX, RULES).code === 0) buf = malformed(r, kind, MAX);
            const what = `seed ${SEED} worker ${w} datagram ${i} (${kind}): ${buf.toString('utf8', 0, 300)}`;
            if (buf.length > 65507) {
              const err = await cl.send(port, buf);
              assert.equal(err?.code, 'EMSGSIZE', what);
              unsendable++;
              continue;
            }
            const exp = expected(buf, MAX, RULES);
            let raw: string;
            if (exp.code === -1) {
              // Refused after a lookup (so after a probe answered from memory); its short form
              // (36 bytes) always fits in a request naming a rule, which is longer.
              raw = await cl.exchange(port, buf);
              assert.ok(Buffer.byteLength(raw) <= buf.length, `a reply of ${Buffer.byteLength(raw)} bytes to ${what}`);
              sent[w]++;
            } else {
              // A refusal comes only when it is no longer than the datagram.
              const marker = `probe-w${w}-${i}`;
              const probe = JSON.stringify({ action: 'get', rule_name: 'seg', app_name: 'probe', seq: marker });
              const replies = await cl.exchangeOrNone(port, buf, probe, marker);
              assert.ok(replies.length <= 1, `${replies.length} replies to ${what}`);
              for (const rep of replies) assert.ok(Buffer.byteLength(rep) <= buf.length, `a reply of ${Buffer.byteLength(rep)} bytes to ${what}`);
              sent[w]++;
              if (replies.length === 0) {
                dropped++;
                continue;
              }
              sent[w]++;
              raw = replies[0];
            }
            let rep: Json;
            try {
              rep = JSON.parse(raw) as Json;
            } catch {
              assert.fail(`reply is not JSON: ${raw.slice(0, 300)} to ${what}`);
            }
            assert.equal(rep.code, exp.code, `${raw.slice(0, 300)} to ${what}`);
            assert.equal(typeof rep.message, 'string', what);
            assert.ok((rep.message as string).length > 0, what);
            assert.equal('data' in rep, false, `an error reply carries data: ${what}`);
            if (exp.echo) {
              // The request's fields echoed, or the short form: code, the code's name, seq.
              const { code: _c, message: _m, ...rest } = rep;
              const full = echoed(exp.echo, buf.toString('utf8'));
              if (rep.message !== UDP_CODE_NAMES.get(exp.code)) assert.deepEqual(rest, full, `not echoed: ${raw.slice(0, 300)} to ${what}`);
              else for (const k of Object.keys(rest)) assert.equal(k, 'seq', `${raw.slice(0, 300)} to ${what}`);
              assert.equal(raw, canonical(rep), `keys not sorted: ${raw.slice(0, 300)}`);
            } else {
              assert.deepEqual(Object.keys(rep), ['code', 'message'], `${raw.slice(0, 300)} to ${what}`);
            }
            byCode.set(rep.code as number, (byCode.get(rep.code as number) ?? 0) + 1);
          }
        }),
      );
      // No datagram got a second reply.
      await sleep(300);
      clients.forEach((cl, w) => assert.equal(cl.received, sent[w], `worker ${w}: ${cl.received} replies to ${sent[w]} datagrams`));
    } finally {
      for (const cl of clients) cl.close();
    }
    const total = [...byCode.values()].reduce((a, b) => a + b, 0);
    assert.ok(total + dropped >= 2500, `only ${total} malformed datagrams answered and ${dropped} dropped`);
    assert.ok(dropped > 0 && total > dropped, `${total} malformed datagrams answered, ${dropped} dropped`);
    assert.ok(unsendable >= WORKERS * 4, `only ${unsendable} datagrams too large to send`);
    for (const code of [-1, -2, -3, -4, -5])
      assert.ok((byCode.get(code) ?? 0) >= 50, `code ${code} answered only ${byCode.get(code) ?? 0} times: ${JSON.stringify([...byCode])}`);
    for (const kind of KINDS) assert.ok((byKind.get(kind) ?? 0) >= 100, `only ${byKind.get(kind) ?? 0} datagrams of kind ${kind}`);

    // Still serving, over UDP and HTTP, and the counter went on.
    const all = valid.flat();
    assert.equal(all.length, WORKERS * (PER_WORKER / 50));
    assert.equal(new Set(all).size, all.length);
    for (const ids of valid) for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids[i - 1]} then ${ids[i]}`);
    const u = await c.request(port, { action: 'get', rule_name: 'o2o', app_name: 'fz', seq: 'after' });
    assert.equal(u.code, 0, JSON.stringify(u));
    const h = await fetch(`${url}/v1/id/o2o?app=fz`);
    assert.equal(h.status, 200);
    const afterId = ((await h.json()) as { id: string }).id;
    assert.ok(afterId > (u.data as string) && (u.data as string) > before.id, `${before.id}, ${u.data as string}, ${afterId}`);
    assert.equal(Number(afterId.slice(5)) - Number(before.id.slice(5)), all.length + 2);
  });
});

describe('UDP listener with the largest UDP_MAX_BYTES', () => {
  const names = testNames();
  let node: Node;
  let port: number;
  let c: UdpClient;

  before(async () => {
    node = await startNode(testConfig(names, { UDP_PORT: String(await freePort()), UDP_MAX_BYTES: '65507' }));
    port = node.udpPort!;
    await createTag(node.url!, {
      tag: 'o2o',
      mode: 'rule',
      template: '{year%10}{MM}{dd}{counter:4}',
      min_counter: 0,
      max_counter: 9999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
  });

  // A reply is the request echoed plus code/message/data, so a request near the limit (or one
  // whose numbers re-encode longer, like 1e20 → 100000000000000000000) would give a reply over
  // 65507 bytes: it must still be answered, with an error.
  it('replies to every accepted datagram, even when the echo would not fit in one datagram', async () => {
    const base = '{"action":"get","rule_name":"o2o","app_name":"big","pad":""}';
    const padded = base.replace('"pad":""', `"pad":"${'p'.repeat(65507 - base.length)}"`);
    const numbers = `{"action":"get","rule_name":"o2o","app_name":"big","n":[${Array(3300).fill('1e20').join(',')}]}`;
    for (const text of [padded, numbers]) {
      assert.ok(Buffer.byteLength(text) <= 65507, `request of ${Buffer.byteLength(text)} bytes`);
      const raw = await c.exchange(port, text, 2000);
      const r = JSON.parse(raw) as Json;
      assert.equal(typeof r.code, 'number', raw.slice(0, 200));
    }
  });
});
