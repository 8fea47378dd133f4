// Every error code of the registry walked through every transport (api/error-replies.ts): the
// HTTP answer (idmint's API, the ID route asked for JSON and for text/plain, Leaf's route, all
// through Fastify's error handler, and the pre-router path's errorAnswer), Tinyid's answer, the
// websocket's error frame, the gRPC status and the UDP reply. Each is defined and says what the
// documentation's tables say (docs/API.md, docs/TINYID.md, docs/STREAM.md, docs/GRPC.md,
// docs/UDP.md).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import Fastify, { type FastifyInstance } from 'fastify';
import { parseRequest, UDP_CODES } from '../../src/core/udp-protocol.js';
import { installErrorHandling } from '../../src/api/error-policy.js';
import { errorAnswer, errorReplyFor, tinyidReply } from '../../src/api/error-replies.js';
import { grpcStatus } from '../../src/api/grpc/status.js';
import { takeError } from '../../src/api/ws/protocol.js';
import { ERROR_CODES, IdmintError, type ErrorCode } from '../../src/errors.js';

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];
const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
/** An error of the code as the service raises it: 503s carry Retry-After 1 by themselves. */
const errorOf = (code: ErrorCode) => new IdmintError(code, `a refusal of code ${code}`);

/** docs/API.md's error table: code → status. */
function apiStatuses(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of doc('API.md').matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)) out.set(m[1], Number(m[2]));
  return out;
}

/** docs/GRPC.md's table: idmint code → gRPC status name. */
function grpcNames(): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of doc('GRPC.md').matchAll(/^\| `([A-Z_]+)` \| `([A-Z_]+)` \|/gm)) out.set(m[1], m[2]);
  return out;
}

/** docs/UDP.md's sentence mapping the HTTP codes onto UDP's ("`A`, `B` → -7, ..., anything else → -9"). */
function udpNumbers(): { named: Map<string, number>; otherwise: number } {
  const page = doc('UDP.md');
  const start = page.indexOf('map onto these:');
  const end = page.indexOf('anything else', start);
  assert.ok(start > 0 && end > start, 'docs/UDP.md: the sentence mapping the HTTP codes was not found');
  const named = new Map<string, number>();
  for (const m of page.slice(start, end).matchAll(/([^→]*?)→ (-\d+)/g)) {
    for (const c of m[1].matchAll(/`([A-Z_]+)`/g)) named.set(c[1], Number(m[2]));
  }
  assert.ok(named.size >= 10, 'docs/UDP.md: too few codes mapped');
  const otherwise = /anything else → (-\d+)/.exec(page.slice(end));
  assert.ok(otherwise, 'docs/UDP.md: "anything else → -N" was not found');
  return { named, otherwise: Number(otherwise[1]) };
}

/** docs/STREAM.md's error codes: the codes a take can be refused with. */
function streamCodes(): Set<string> {
  const page = doc('STREAM.md');
  const section = page.slice(page.indexOf('## Error codes'), page.indexOf('## ', page.indexOf('## Error codes') + 3));
  const out = new Set<string>();
  for (const row of section.matchAll(/^\| ([^|]+) \|/gm))
    for (const c of row[1].matchAll(/`([A-Z_]+)`/g)) out.add(c[1]);
  return out;
}

/** docs/TINYID.md's failures: the row answered with Tinyid's token error (code 5). */
const TINYID_TOKEN_ROW =
  /^\| no `bizType`.*a missing or wrong token for a tag with tokens \| `\{"data":null,"code":5,"message":"token is error"\}`/m;

/** Codes only the admin API or HTTP routing answer: no take of the stream meets them. */
const NOT_ON_STREAM = new Set<ErrorCode>(['FORBIDDEN', 'NOT_FOUND', 'TAG_EXISTS', 'CONFLICT']);

describe('every error code through every transport', () => {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    installErrorHandling(app);
    const fail = async (req: { params: unknown }) => {
      throw errorOf((req.params as { code: ErrorCode }).code);
    };
    app.get('/v1/id/:code', fail);
    app.get('/api/segment/get/:code', fail);
    await app.ready();
  });
  after(() => app.close());

  it('HTTP: the registry status of docs/API.md, the error shape, Retry-After on 503s, the same on every route and path', async () => {
    const documented = apiStatuses();
    assert.equal(documented.size, CODES.length, 'docs/API.md lists every code once');
    for (const code of CODES) {
      const e = errorOf(code);
      const a = errorAnswer(e);
      assert.equal(a.status, documented.get(code), `docs/API.md: ${code}`);
      assert.deepEqual(JSON.parse(a.body), { error: { code, message: e.message } });
      assert.equal(a.headers['retry-after'], a.status === 503 ? '1' : undefined, `${code}: Retry-After`);
      for (const [url, accept] of [
        [`/v1/id/${code}`, 'application/json'],
        [`/v1/id/${code}`, 'text/plain'],
        [`/api/segment/get/${code}`, '*/*'],
      ]) {
        const res = await app.inject({ url, headers: { accept } });
        const what = `${code} on ${url} (${accept})`;
        assert.equal(res.statusCode, a.status, what);
        assert.equal(res.body, a.body, what);
        for (const h of ['content-type', 'content-length', 'retry-after'])
          assert.equal(res.headers[h], a.headers[h] === undefined ? undefined : String(a.headers[h]), `${what}: ${h}`);
      }
    }
  });

  it("Tinyid: code 5 where Tinyid's token check refuses, code 6 with idmint's reason otherwise, nothing from the Simple routes", () => {
    assert.match(doc('TINYID.md'), TINYID_TOKEN_ROW);
    for (const code of CODES) {
      const e = errorOf(code);
      const token = code === 'TAG_NOT_FOUND' || code === 'UNAUTHORIZED';
      assert.equal(
        tinyidReply(e, false),
        token ? '{"data":null,"code":5,"message":"token is error"}' : `{"data":null,"code":6,"message":"${e.message}"}`,
        code,
      );
      assert.equal(tinyidReply(e, true), '', code);
    }
  });

  it('websocket: an error frame with the code, its message and retry_after where HTTP sends Retry-After; docs/STREAM.md lists the codes a take meets', () => {
    const listed = streamCodes();
    for (const c of listed) assert.ok(c in ERROR_CODES, `docs/STREAM.md lists unknown code ${c}`);
    for (const code of CODES) {
      const e = errorOf(code);
      const frame = JSON.parse(takeError(7, e));
      const retry = errorAnswer(e).headers['retry-after'];
      assert.deepEqual(
        frame,
        {
          op: 'error',
          req: 7,
          code,
          message: e.message,
          ...(retry === undefined ? {} : { retry_after: Number(retry) }),
        },
        code,
      );
      assert.equal(listed.has(code), !NOT_ON_STREAM.has(code), `docs/STREAM.md: ${code}`);
    }
  });

  it('gRPC: the status of docs/GRPC.md, the idmint code in the metadata and the message', () => {
    const documented = grpcNames();
    for (const code of CODES) {
      const e = errorOf(code);
      const s = grpcStatus(e);
      assert.equal(status[s.code], documented.get(code), `docs/GRPC.md: ${code}`);
      assert.equal(s.details, `${code}: ${e.message}`);
      assert.deepEqual(s.metadata?.get('idmint-code'), [code]);
      assert.deepEqual(s.metadata?.get('retry-after'), e.status === 503 ? ['1'] : []);
    }
  });

  it("UDP: the number docs/UDP.md gives each code, the request echoed, INTERNAL's details withheld", () => {
    const { named, otherwise } = udpNumbers();
    for (const c of named.keys()) assert.ok(c in ERROR_CODES, `docs/UDP.md maps unknown code ${c}`);
    const parsed = parseRequest(Buffer.from('{"action":"get","rule_name":"o2o","app_name":"a","seq":1}'));
    assert.ok(parsed.ok);
    for (const code of CODES) {
      const e = errorOf(code);
      const r = errorReplyFor(parsed.req, e);
      const number = named.get(code) ?? otherwise;
      assert.equal(r.code, number, `docs/UDP.md: ${code}`);
      assert.ok(Object.values(UDP_CODES).some((u) => u.code === number));
      assert.equal(r.message, number === UDP_CODES.INTERNAL.code ? 'internal error' : e.message, code);
      assert.equal(r.seq, 1);
    }
  });
});
