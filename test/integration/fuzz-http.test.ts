// suite: single — malformed input at the transports, long (npm run fuzz)
// Fuzzing the HTTP edge of a real idmint child process (real Redis and MySQL): requests refused
// before routing, then randomised malformed HTTP requests (fast-check). Every reply must be a
// documented success or a documented error ({"error":{"code","message"}} with the registry's
// 4xx status, or 503 for unavailability), never a 500, a hang, an INTERNAL, HTML or a stack
// trace; and the process is still alive and healthy at the end.
//
// FUZZ_RUNS scales the number of generated cases (`npm run fuzz` runs many more); FUZZ_SEED
// (and FUZZ_PATH, both printed by fast-check when a property fails) replays a failing run.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ADMIN_TOKEN } from '../../tools/env.js';
import { HTTP_RUNS, params } from '../helpers/fuzz-run.js';
import { type HttpAnswer, rawHttp, send } from '../helpers/fuzz-http-send.js';
import { httpCaseArb } from '../helpers/fuzz-http-cases.js';
import { checkError, checkHttp, show, tally } from '../helpers/fuzz-http-checks.js';
import { openFuzzNode } from '../helpers/fuzz-node.js';

describe('fuzzing HTTP, websocket and UDP input against a child process', () => {
  const fuzzed = openFuzzNode();
  let url: string;
  before(() => {
    ({ url } = fuzzed);
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

  it(`answers random HTTP requests with a documented success or error (${HTTP_RUNS} runs)`, {
    timeout: 600_000,
  }, async (t) => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(httpCaseArb, async (c) => {
        const a = await send(url, c);
        checkHttp(c, a);
        const code =
          a.status >= 400 && c.method !== 'HEAD'
            ? (JSON.parse(a.body.toString()) as { error: { code: string } }).error.code
            : '';
        tally(seen, `${a.status}${code && ` ${code}`}`);
      }),
      params(HTTP_RUNS),
    );
    t.diagnostic(`answers: ${show(seen)}`);
    // The generators reach successes and the common refusals, not one kind of answer only.
    const has = (p: string) => [...seen.keys()].some((k) => k.startsWith(p));
    if (HTTP_RUNS >= 1000)
      for (const p of [
        '200',
        '201',
        '204',
        '400 INVALID_ARGUMENT',
        '401',
        '404 TAG_NOT_FOUND',
        '404 NOT_FOUND',
        '409 TAG_DISABLED',
        '413',
        '415',
      ])
        assert.ok(has(p), `no answer ${p} in ${HTTP_RUNS} runs: ${show(seen)}`);
    // The ID routes still serve.
    const r = await fetch(`${url}/v1/ids/seg?count=3`);
    assert.equal(r.status, 200);
  });
});
