// suite: single — per-source limits live in one process's memory; no Redis key layout involved
// Per-source limits against a real node (Redis, MySQL) with small settings: 1 ID of a finite
// tag and 1 refusal a second per source, in bursts of 10. Sources are loopback addresses
// (127.0.0.x: the whole 127/8 is local), one per case, so each case starts with full buckets.
// A source flooding a small open rule tag, a permuted tag (Tinyid), a segment tag with a
// lowered max_id_limit (Leaf) or a batch route is answered 429 LIMIT_EXCEEDED with Retry-After
// once its burst is spent, takes nothing then (the next ID of another source follows the last
// one served), and the tag keeps serving other sources; a caller holding the tag's token, and
// a tag whose space is not finite, are not limited; a source whose requests keep being refused
// is refused everything for a while; over UDP, datagrams of a source over a limit get no reply
// and are counted, while another source is still answered. Each figure is on /metrics.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../tools/child.js';
import { cleanup, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, startLocalNode } from '../../tools/node.js';

const BURST = 10;
const RULE = {
  mode: 'rule',
  template: '{yyyy}{MM}{dd}{counter:2}',
  min_counter: 0,
  max_counter: 99,
  reset_seconds: 86400,
  time_zone: 'UTC',
};

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** GET `path` from the local address `from`, on a connection of its own. */
function get(base: string, path: string, from: string, headers: Record<string, string> = {}): Promise<Answer> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, headers, localAddress: from, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const errorCode = (a: Answer): string | undefined => (JSON.parse(a.body) as { error?: { code: string } }).error?.code;

/** A 429 as every limited route answers it: LIMIT_EXCEEDED in the API's error shape, Retry-After in whole seconds. */
function assertLimited(a: Answer, what: string): void {
  assert.equal(a.status, 429, `${what}: ${a.status} ${a.body}`);
  assert.equal(errorCode(a), 'LIMIT_EXCEEDED', what);
  const retry = Number(a.headers['retry-after']);
  assert.ok(Number.isInteger(retry) && retry >= 1, `${what}: Retry-After ${a.headers['retry-after']}`);
}

/** A UDP socket bound to one local address, keeping what it receives. */
class UdpSource {
  readonly inbox: Record<string, unknown>[] = [];
  private constructor(private readonly sock: Socket) {
    sock.on('message', (m) => this.inbox.push(JSON.parse(m.toString()) as Record<string, unknown>));
  }
  static async open(address: string): Promise<UdpSource> {
    const sock = createSocket('udp4');
    await new Promise<void>((resolve) => sock.bind(0, address, resolve));
    return new UdpSource(sock);
  }
  send(port: number, body: Record<string, unknown> | string): Promise<void> {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) =>
      this.sock.send(data, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())),
    );
  }
  /** Waits until `n` replies are in, or `ms` passed. */
  async replies(n: number, ms: number): Promise<Record<string, unknown>[]> {
    const until = Date.now() + ms;
    while (this.inbox.length < n && Date.now() < until) await sleep(10);
    return this.inbox;
  }
  close(): void {
    this.sock.close();
  }
}

/** The counter of a rule ID of RULE's template (its last two digits). */
const counterOf = (id: string): number => Number(id.slice(-2));

describe('per-source limits on HTTP and UDP', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;
  let udpPort: number;
  let token: string;

  before(async () => {
    udpPort = await freePort();
    node = await startLocalNode(names, {
      UDP_PORT: String(udpPort),
      SOURCE_MAX_FINITE_IDS_PER_SECOND: '1',
      SOURCE_MAX_REFUSALS_PER_SECOND: '1',
      SOURCE_BURST_SECONDS: String(BURST),
      LOG_LEVEL: 'error',
    });
    url = node.url;
    await createTag(url, { tag: 'small', ...RULE });
    await createTag(url, { tag: 'udprule', ...RULE });
    await createTag(url, { tag: 'locked', ...RULE });
    await createTag(url, { tag: 'perm', permute: { digits: 6 } });
    await createTag(url, { tag: 'lowseg', max_id_limit: 100_000 });
    await createTag(url, { tag: 'seg' });
    const res = await fetch(`${url}/v1/admin/tags/locked/tokens`, {
      method: 'POST',
      headers: adminHeaders,
      body: '{}',
    });
    assert.equal(res.status, 201);
    token = ((await res.json()) as { token: string }).token;
  });
  after(async () => {
    await node?.close();
    await cleanup(names);
  });

  it('keeps the pre-router path on: it does the work of the limit hooks', () => {
    assert.equal(node.app?.preRouter, true);
  });

  it('answers a source flooding a small open rule tag 429 once its burst is spent; it takes nothing then, and others are served', async () => {
    const flood = await Promise.all(
      Array.from({ length: 2 * BURST }, () => get(url, '/v1/id/small?app=a', '127.0.0.2')),
    );
    const served = flood.filter((a) => a.status === 200).map((a) => (JSON.parse(a.body) as { id: string }).id);
    // All were admitted within a second or so: the burst, and at most a refill or two.
    assert.ok(served.length >= BURST && served.length <= BURST + 2, `${served.length} of ${flood.length} served`);
    for (const a of flood.filter((x) => x.status !== 200)) assertLimited(a, 'over the burst');
    // Still limited: a sequential request right after is refused too.
    assertLimited(await get(url, '/v1/id/small?app=a', '127.0.0.2'), 'right after the flood');
    // Another source gets the next counter: the refused requests took nothing.
    const other = await get(url, '/v1/id/small?app=a', '127.0.0.3');
    assert.equal(other.status, 200, other.body);
    const next = (JSON.parse(other.body) as { id: string }).id;
    const last = Math.max(...served.map(counterOf));
    if (next.slice(0, -2) === served[0].slice(0, -2))
      assert.equal(counterOf(next), last + 1, `after ${served.join(',')}: ${next}`);
    assert.equal(new Set([...served, next]).size, served.length + 1);
  });

  it('charges a batch by its IDs, and Leaf and Tinyid routes as the others', async () => {
    // /v1/ids: 6 of the 10, then 6 more do not fit (a refill of 2 would take 2 s).
    assert.equal((await get(url, '/v1/ids/small?app=b&count=6', '127.0.0.4')).status, 200);
    assertLimited(await get(url, '/v1/ids/small?app=b&count=6', '127.0.0.4'), 'a batch over what is left');
    assert.equal((await get(url, '/v1/ids/small?app=b&count=6', '127.0.0.5')).status, 200, 'another source');
    // Leaf's route, on a segment tag with a lowered max_id_limit.
    const leaf = await Promise.all(
      Array.from({ length: BURST + 5 }, () => get(url, '/api/segment/get/lowseg', '127.0.0.6')),
    );
    assert.ok(leaf.filter((a) => a.status === 200).length <= BURST + 2);
    assertLimited(leaf.find((a) => a.status !== 200)!, 'Leaf');
    // Tinyid's, on a permuted tag: two batches of 5 are the burst; a third must wait 5 s.
    for (let i = 0; i < 2; i++) {
      const a = await get(url, '/tinyid/id/nextIdSimple?bizType=perm&batchSize=5', '127.0.0.7');
      assert.equal(a.status, 200);
      assert.equal(a.body.split(',').length, 5, a.body);
    }
    assertLimited(await get(url, '/tinyid/id/nextIdSimple?bizType=perm&batchSize=5', '127.0.0.7'), 'Tinyid');
    assert.match(
      (await get(url, '/tinyid/id/nextIdSimple?bizType=perm&batchSize=5', '127.0.0.8')).body,
      /^\d+(,\d+){4}$/,
      'another source',
    );
  });

  it('does not limit a caller holding the tag token, nor a tag whose space is not finite', async () => {
    const withToken = await Promise.all(
      Array.from({ length: 3 * BURST }, () =>
        get(url, '/v1/id/locked?app=a', '127.0.0.9', { 'x-idmint-token': token }),
      ),
    );
    assert.deepEqual(
      withToken.map((a) => a.status),
      withToken.map(() => 200),
    );
    const seg = await Promise.all(Array.from({ length: 3 * BURST }, () => get(url, '/v1/id/seg', '127.0.0.10')));
    assert.deepEqual(
      seg.map((a) => a.status),
      seg.map(() => 200),
    );
    const batch = await get(url, '/v1/ids/seg?count=10000', '127.0.0.10');
    assert.equal(batch.status, 200);
  });

  it('refuses everything to a source whose requests keep being refused, until its bucket refills', async () => {
    const from = '127.0.0.11';
    let refused = 0;
    let first: Answer | undefined;
    for (let i = 0; i < 3 * BURST && first === undefined; i++) {
      // Unknown tags, a protected tag without its token, a bad count: each refused.
      const path = ['/v1/id/no-such-tag', `/v1/id/nope-${i}`, '/v1/id/locked?app=a', '/v1/ids/seg?count=0'][i % 4];
      const a = await get(url, path, from);
      if (a.status === 429) first = a;
      else {
        assert.ok([400, 404].includes(a.status), `${path}: ${a.status} ${a.body}`);
        refused++;
      }
    }
    assert.ok(first !== undefined, 'the refusals were never limited');
    assertLimited(first, 'the refusal after the burst');
    assert.ok(refused >= BURST && refused <= BURST + 3, `${refused} refusals answered`);
    // A request that would be served is refused too, on the pre-router path as on the router's.
    assertLimited(await get(url, '/v1/id/seg', from), 'a good request from the same source');
    assertLimited(await get(url, '/v1/ids/seg?count=2', from), 'a batch from the same source');
    assert.equal((await get(url, '/v1/id/seg', '127.0.0.12')).status, 200, 'another source');
  });

  it('drops the datagrams of a UDP source over its limit unanswered, counted, and answers another', async () => {
    const before = await metrics();
    const flooder = await UdpSource.open('127.0.0.13');
    const other = await UdpSource.open('127.0.0.14');
    try {
      const get1 = (seq: number) => ({ action: 'get', rule_name: 'udprule', app_name: 'u', seq: String(seq) });
      for (let i = 0; i < BURST + 5; i++) await flooder.send(udpPort, get1(i));
      const answered = await flooder.replies(BURST + 5, 1500);
      assert.ok(answered.length >= BURST && answered.length <= BURST + 2, `${answered.length} answered`);
      for (const r of answered) assert.equal(r.code, 0, JSON.stringify(r));
      // Another source is answered, with the next counter: the dropped datagrams took nothing.
      await other.send(udpPort, get1(100));
      const [reply] = await other.replies(1, 3000);
      assert.equal(reply?.code, 0, JSON.stringify(reply));
      const ids = answered.map((r) => String(r.data));
      if (String(reply.data).slice(0, -2) === ids[0].slice(0, -2))
        assert.equal(counterOf(String(reply.data)), Math.max(...ids.map(counterOf)) + 1);
      // Nothing more arrived for the flooder meanwhile.
      await sleep(200);
      assert.equal(flooder.inbox.length, answered.length);
      const after = await metrics();
      const dropped = BURST + 5 - answered.length;
      assert.equal(
        after('idmint_source_limited_total{transport="udp",limit="ids"}') -
          before('idmint_source_limited_total{transport="udp",limit="ids"}'),
        dropped,
      );
      assert.equal(
        after('idmint_errors_total{transport="udp",code="LIMIT_EXCEEDED"}') -
          before('idmint_errors_total{transport="udp",code="LIMIT_EXCEEDED"}'),
        dropped,
      );
    } finally {
      flooder.close();
      other.close();
    }
  });

  it('leaves UDP refusals past the limit unanswered, malformed datagrams included', async () => {
    const before = await metrics();
    const flooder = await UdpSource.open('127.0.0.15');
    const other = await UdpSource.open('127.0.0.16');
    try {
      for (let i = 0; i < BURST + 4; i++)
        await flooder.send(udpPort, { action: 'get', rule_name: `nope-${i}`, app_name: 'u', seq: String(i) });
      await flooder.replies(BURST, 3000);
      await sleep(100); // the rest are dropped (waiting longer would refill the bucket)
      const answered = [...flooder.inbox];
      assert.ok(answered.length >= BURST && answered.length <= BURST + 2, `${answered.length} answered`);
      for (const r of answered) assert.equal(r.code, -1, JSON.stringify(r));
      // Once over, a malformed datagram (its refusal would fit: it is long enough) goes unanswered too.
      await flooder.send(
        udpPort,
        `{"action":"get","rule_name":"udprule","app_name":"u","seq":"bad","padding":"${'x'.repeat(80)}"`,
      );
      await other.send(udpPort, { action: 'get', rule_name: 'nope', app_name: 'u', seq: 'x' });
      assert.equal((await other.replies(1, 3000))[0]?.code, -1, 'another source is told');
      await sleep(200);
      assert.deepEqual(flooder.inbox, answered, 'no reply to the malformed datagram');
      const after = await metrics();
      const series = 'idmint_source_limited_total{transport="udp",limit="refusals"}';
      assert.equal(after(series) - before(series), BURST + 5 - answered.length);
      // Counted as what they were (unknown rules, the other source's included, and a malformed
      // datagram), or, for a datagram refused at once (its source already over), LIMIT_EXCEEDED.
      const delta = (series: string) => after(series) - before(series);
      assert.equal(
        delta('idmint_errors_total{transport="udp",code="TAG_NOT_FOUND"}') +
          delta('idmint_errors_total{transport="udp",code="LIMIT_EXCEEDED"}'),
        BURST + 5,
      );
      assert.equal(
        after('idmint_errors_total{transport="udp",code="INVALID_ARGUMENT"}') -
          before('idmint_errors_total{transport="udp",code="INVALID_ARGUMENT"}'),
        1,
      );
    } finally {
      flooder.close();
      other.close();
    }
  });

  it('counts every HTTP 429 in idmint_source_limited_total and idmint_errors_total', async () => {
    const m = await metrics();
    assert.ok(m('idmint_source_limited_total{transport="http",limit="ids"}') >= 1);
    assert.ok(m('idmint_source_limited_total{transport="http",limit="refusals"}') >= 3);
    assert.ok(m('idmint_source_limited_total{transport="leaf",limit="ids"}') >= 1);
    assert.ok(m('idmint_source_limited_total{transport="tinyid",limit="ids"}') >= 1);
    const http = ['http', 'leaf', 'tinyid'].map((t) =>
      m(`idmint_errors_total{transport="${t}",code="LIMIT_EXCEEDED"}`),
    );
    const limited = ['http', 'leaf', 'tinyid'].flatMap((t) =>
      ['ids', 'refusals'].map((l) => m(`idmint_source_limited_total{transport="${t}",limit="${l}"}`)),
    );
    assert.equal(
      http.reduce((a, b) => a + b, 0),
      limited.reduce((a, b) => a + b, 0),
      'each 429 counted once in each',
    );
  });

  /** The samples of /metrics: series (as written there) to value, 0 when absent. */
  async function metrics(): Promise<(series: string) => number> {
    const text = await (await fetch(`${url}/metrics`)).text();
    const values = new Map<string, number>();
    for (const line of text.split('\n')) {
      const m = /^(\S+) (\S+)$/.exec(line);
      if (m && !line.startsWith('#')) values.set(m[1], Number(m[2]));
    }
    return (series) => values.get(series) ?? 0;
  }
});
