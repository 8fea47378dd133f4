// suite: cluster
// The exposure policy: a request without a valid client token learns nothing about a tag that
// has tokens, not even that it exists. On every transport (HTTP route, the pre-router path's
// request, Leaf's routes, decoding, Tinyid's routes, gRPC, the websocket stream, UDP) such a
// tag, enabled or not, answers byte for byte as a tag that does not exist (the tag's name
// aside, which the caller sent). REVEAL_PROTECTED_TAGS=1 gives the two their own answers.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import WebSocket from 'ws';
import { fastIdPath } from '../../src/api/http/fast-path.js';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';
import { failure, IdsClient } from '../../tools/grpc-client.js';
import { UdpClient } from '../../tools/udp-client.js';

type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** Protected tags (enabled, disabled, a rule, a snowflake tag) and missing ones, all of 8 characters. */
const PROTECTED = ['hidn-seg', 'hidn-off', 'hidn-rul', 'hidn-snw'];
const MISSING = ['miss-one', 'miss-two'];
const WRONG = 'idm_not-a-token-of-this-tag';

/** An answer with the tag's name taken out: what the caller did not already know. */
const blank = (text: string, tag: string) => text.split(tag).join('<tag>');

async function startWithTags(names: ReturnType<typeof testNames>, extra: Record<string, string>) {
  const node = await startLocalNode(names, {
    GRPC_PORT: String(await freePort()),
    UDP_PORT: String(await freePort()),
    LOG_LEVEL: 'error',
    ...extra,
  });
  await createTag(node.url, { tag: 'hidn-seg', order: 'node', node_block: 100 });
  await createTag(node.url, { tag: 'hidn-off' });
  await createTag(node.url, {
    tag: 'hidn-rul',
    mode: 'rule',
    template: '{counter:6}',
    min_counter: 1,
    max_counter: 999_999,
    reset_seconds: 0,
  });
  await createTag(node.url, { tag: 'hidn-snw', mode: 'snowflake' });
  await createTag(node.url, { tag: 'open-seg' });
  const tokens: Record<string, string> = {};
  for (const tag of PROTECTED) {
    const r = await fetch(`${node.url}/v1/admin/tags/${tag}/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{}',
    });
    assert.equal(r.status, 201);
    tokens[tag] = ((await r.json()) as { token: string }).token;
  }
  const off = await fetch(`${node.url}/v1/admin/tags/hidn-off`, {
    method: 'PATCH',
    headers: adminHeaders,
    body: '{"enabled":false}',
  });
  assert.equal(off.status, 200, await off.text());
  return { node, tokens };
}

/** An HTTP answer as the caller sees it: status, content type and body. */
async function http(url: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await fetch(`${url}${path}`, { headers });
  return `${r.status} ${r.headers.get('content-type')} ${await r.text()}`;
}

async function streamAnswer(url: string, tag: string, token?: string): Promise<string> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/stream`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  try {
    const reply = new Promise<string>((resolve) => ws.once('message', (m: Buffer) => resolve(m.toString())));
    ws.send(
      JSON.stringify({ op: 'take', req: 1, tag, count: 3, format: 'json', ...(token === undefined ? {} : { token }) }),
    );
    return await reply;
  } finally {
    ws.close();
  }
}

describe('protected tags look missing to requests without a valid token', () => {
  const names = testNames();
  let node: LocalNode;
  let tokens: Record<string, string>;
  let grpc: IdsClient;
  let udp: UdpClient;

  before(async () => {
    ({ node, tokens } = await startWithTags(names, {}));
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
  });
  after(async () => {
    udp?.close();
    grpc?.close();
    await node?.close();
    await cleanup(names);
  });

  /** The answers of `ask` for every tag without a valid token (none, a wrong one) are one answer. */
  async function oneAnswer(what: string, ask: (tag: string, token?: string) => Promise<string>): Promise<string> {
    const seen = new Map<string, string>();
    for (const tag of [...MISSING, ...PROTECTED])
      for (const token of [undefined, WRONG])
        seen.set(`${tag} token=${token ?? 'none'}`, blank(await ask(tag, token), tag));
    const distinct = new Set(seen.values());
    assert.equal(distinct.size, 1, `${what}: ${JSON.stringify(Object.fromEntries(seen), null, 1)}`);
    return [...distinct][0];
  }

  it('HTTP: GET /v1/ids/:tag and GET /v1/id/:tag answer 404 TAG_NOT_FOUND alike', async () => {
    const auth = (t?: string): Record<string, string> => (t === undefined ? {} : { authorization: `Bearer ${t}` });
    const batch = await oneAnswer('GET /v1/ids', (tag, t) => http(node.url, `/v1/ids/${tag}?count=2`, auth(t)));
    assert.match(
      batch,
      /^404 application\/json; charset=utf-8 \{"error":\{"code":"TAG_NOT_FOUND","message":"tag \\"<tag>\\" does not exist/,
    );
    const one = await oneAnswer('GET /v1/id', (tag, t) =>
      http(node.url, `/v1/id/${tag}`, { 'x-idmint-token': t ?? '' }),
    );
    assert.equal(one, batch);
    // With the token, IDs; an open tag serves without one.
    assert.equal(
      (await fetch(`${node.url}/v1/ids/hidn-seg?count=2`, { headers: auth(tokens['hidn-seg']) })).status,
      200,
    );
    assert.equal((await fetch(`${node.url}/v1/id/open-seg`)).status, 200);
    assert.equal((await fetch(`${node.url}/v1/id/open-seg`, { headers: auth(WRONG) })).status, 200);
  });

  it('the pre-router path: a protected tag held in memory steps aside and answers as a missing one', async () => {
    // The token's request puts the tag's block in this process's memory.
    assert.equal(
      (await fetch(`${node.url}/v1/id/hidn-seg`, { headers: { 'x-idmint-token': tokens['hidn-seg'] } })).status,
      200,
    );
    assert.equal((await fetch(`${node.url}/v1/id/open-seg`)).status, 200);
    const fast = fastIdPath({
      ids: node.rt.ids,
      metrics: node.rt.metrics,
      log: node.rt.log,
      requestId: () => 'req-test',
      open: () => true,
    });
    const written: unknown[] = [];
    const res = {
      writeHead: (...a: unknown[]) => written.push(a),
      end: (b: unknown) => written.push(b),
    } as unknown as ServerResponse;
    const req = (tag: string) => ({ method: 'GET', url: `/v1/id/${tag}`, headers: {} }) as unknown as IncomingMessage;
    assert.equal(fast(req('open-seg'), res), true, 'an open tag in memory is the fast path’s');
    written.length = 0;
    assert.equal(fast(req('hidn-seg'), res), false);
    assert.deepEqual(written, [], 'the fast path wrote nothing');
    const missing = blank(await http(node.url, '/v1/id/miss-one'), 'miss-one');
    for (const tag of ['hidn-seg', 'hidn-seg', 'hidn-rul', 'hidn-snw'])
      assert.equal(blank(await http(node.url, `/v1/id/${tag}`), tag), missing, tag);
  });

  it('Leaf routes and decoding: the same 404, whatever mode the route is for', async () => {
    const auth = (t?: string): Record<string, string> => (t === undefined ? {} : { authorization: `Bearer ${t}` });
    const leafSeg = await oneAnswer('segment', (tag, t) => http(node.url, `/api/segment/get/${tag}`, auth(t)));
    const leafSnow = await oneAnswer('snowflake', (tag, t) => http(node.url, `/api/snowflake/get/${tag}`, auth(t)));
    const decoded = await oneAnswer('decode', (tag, t) => http(node.url, `/v1/decode/${tag}/1`, auth(t)));
    const batch = blank(await http(node.url, '/v1/ids/miss-one?count=1'), 'miss-one');
    assert.deepEqual([leafSeg, leafSnow, decoded], [batch, batch, batch]);
    assert.match(await http(node.url, '/api/segment/get/hidn-seg', auth(tokens['hidn-seg'])), /^200 text\/plain/);
    assert.match(await http(node.url, '/api/snowflake/get/hidn-snw', auth(tokens['hidn-snw'])), /^200 text\/plain/);
    // The token's holder is told the tag's mode and state.
    assert.match(await http(node.url, '/api/snowflake/get/hidn-seg', auth(tokens['hidn-seg'])), /^400 /);
    assert.match(await http(node.url, '/v1/ids/hidn-off?count=1', auth(tokens['hidn-off'])), /^409 .*TAG_DISABLED/);
    assert.match(await http(node.url, '/v1/decode/hidn-seg/1', auth(tokens['hidn-seg'])), /^200 /);
  });

  it('Tinyid routes: token error (code 5) and "" alike', async () => {
    for (const route of ['nextId', 'nextIdSimple', 'nextSegmentId', 'nextSegmentIdSimple']) {
      const a = await oneAnswer(route, (tag, t) =>
        http(node.url, `/tinyid/id/${route}?bizType=${tag}${t === undefined ? '' : `&token=${t}`}`),
      );
      if (route.endsWith('Simple')) assert.equal(a, '200 text/plain;charset=UTF-8 ');
      else assert.equal(a, '200 application/json;charset=UTF-8 {"data":null,"code":5,"message":"token is error"}');
    }
    assert.match(
      await http(node.url, `/tinyid/id/nextIdSimple?bizType=hidn-seg&token=${tokens['hidn-seg']}`),
      /^200 text\/plain;charset=UTF-8 \d+$/,
    );
  });

  it('gRPC: Next, Take and Decode fail NOT_FOUND (TAG_NOT_FOUND) alike', async () => {
    const md = (t?: string) => IdsClient.md(t === undefined ? {} : { authorization: `Bearer ${t}` });
    const shown = (f: { code: number; idmint: string; details: string }) => `${f.code} ${f.idmint} ${f.details}`;
    const next = await oneAnswer('Next', async (tag, t) => shown(await failure(grpc.next({ tag, app: 'a' }, md(t)))));
    assert.match(next, new RegExp(`^${status.NOT_FOUND} TAG_NOT_FOUND `));
    const byField = await oneAnswer('Next (token field)', async (tag, t) =>
      shown(await failure(grpc.next({ tag, app: 'a', token: t ?? '' }))),
    );
    const take = await oneAnswer('Take', async (tag, t) => {
      const r = await grpc.take({ tag, count: '3', app: 'a' }, md(t));
      assert.equal(r.blocks.length, 0);
      assert.ok(r.error);
      return `${r.error.code} ${String(r.error.metadata.get('idmint-code')[0])} ${r.error.details}`;
    });
    const decode = await oneAnswer('Decode', async (tag, t) =>
      shown(await failure(grpc.decode({ tag, id: '1' }, md(t)))),
    );
    assert.deepEqual([byField, take, decode], [next, next, next]);
    assert.equal((await grpc.next({ tag: 'hidn-seg' }, md(tokens['hidn-seg']))).length, 1);
    assert.equal((await grpc.decode({ tag: 'hidn-seg', id: '1' }, md(tokens['hidn-seg']))).mode, 'segment');
  });

  it('websocket stream: the same error message', async () => {
    const a = await oneAnswer('stream', (tag, t) => streamAnswer(node.url, tag, t));
    assert.match(a, /"code":"TAG_NOT_FOUND"/);
    assert.match(await streamAnswer(node.url, 'hidn-seg', tokens['hidn-seg']), /"op":"block"/);
  });

  it('UDP: get and monitor answer -1 alike', async () => {
    for (const action of ['get', 'monitor']) {
      // The reply echoes the request: its token field (the caller's own) is taken out as well.
      const a = await oneAnswer(`UDP ${action}`, async (tag, t) => {
        const raw = await udp.exchange(
          node.udpPort!,
          JSON.stringify({ action, rule_name: tag, app_name: 'a', ...(t === undefined ? {} : { token: t }) }),
        );
        return t === undefined ? raw : raw.replace(`,"token":"${t}"`, '');
      });
      assert.match(a, /"code":-1,/);
    }
    const ok = await udp.request(node.udpPort!, {
      action: 'get',
      rule_name: 'hidn-rul',
      app_name: 'a',
      token: tokens['hidn-rul'],
    });
    assert.equal(ok.code, 0, JSON.stringify(ok));
  });
});

describe('REVEAL_PROTECTED_TAGS=1: a protected tag is told apart from a missing one', () => {
  const names = testNames();
  let node: LocalNode;
  let grpc: IdsClient;
  let udp: UdpClient;

  before(async () => {
    ({ node } = await startWithTags(names, { REVEAL_PROTECTED_TAGS: '1' }));
    grpc = new IdsClient(node.grpcPort!);
    udp = await UdpClient.open();
  });
  after(async () => {
    udp?.close();
    grpc?.close();
    await node?.close();
    await cleanup(names);
  });

  it('answers UNAUTHORIZED for a protected tag and TAG_NOT_FOUND for a missing one on every transport', async () => {
    assert.match(await http(node.url, '/v1/id/hidn-seg'), /^401 .*"UNAUTHORIZED"/);
    assert.match(
      await http(node.url, '/v1/ids/hidn-off?count=1', { authorization: `Bearer ${WRONG}` }),
      /^401 .*"UNAUTHORIZED"/,
    );
    assert.match(await http(node.url, '/api/snowflake/get/hidn-seg'), /^401 /);
    assert.match(
      await http(node.url, '/v1/id/miss-one'),
      /^404 .*"TAG_NOT_FOUND","message":"tag \\"miss-one\\" does not exist"/,
    );
    assert.equal((await failure(grpc.next({ tag: 'hidn-seg' }))).code, status.UNAUTHENTICATED);
    assert.equal((await failure(grpc.next({ tag: 'miss-one' }))).code, status.NOT_FOUND);
    assert.match(await streamAnswer(node.url, 'hidn-seg'), /"code":"UNAUTHORIZED"/);
    assert.equal((await udp.request(node.udpPort!, { action: 'get', rule_name: 'hidn-rul', app_name: 'a' })).code, -8);
    assert.equal((await udp.request(node.udpPort!, { action: 'get', rule_name: 'miss-one', app_name: 'a' })).code, -1);
    // Tinyid's answers are Tinyid's own: one token error for both.
    const tiny = (tag: string) => http(node.url, `/tinyid/id/nextId?bizType=${tag}`);
    assert.equal(await tiny('hidn-seg'), await tiny('miss-one'));
  });
});
