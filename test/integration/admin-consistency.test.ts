// suite: cluster
// Once an admin call has answered, every request that arrives afterwards on the same process
// sees the change; on another process, every request that arrives after the announcement was
// delivered there sees it. No request gets the old definition because another request is
// already reading the new one. Each kind of change (create after a cached TAG_NOT_FOUND, a
// rule's template, disable, enable, delete, token create and revoke) is checked with bursts of
// concurrent requests over the dispenser itself (fired in the same turn, so the old race cannot
// hide), HTTP, UDP and the websocket stream, several times, on one process and across two.
// Also: requests after a change do not join a read of the definition that began before it
// (MySQL's answers to it held back by a proxy), and a tag moved (forced) off a named Redis
// that died is served from the new server by the requests after the move, instead of their
// trying the dead one.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import type { Node } from '../../src/process/serve.js';
import type { IdOptions, IdService } from '../../src/service/id-service.js';
import { isCluster } from '../../src/store/redis/connection.js';
import { ADMIN_TOKEN, cleanup, mysqlUrlFor, skipOnCluster, testNames } from '../../tools/env.js';
import { adminHeaders, createTag, spawnNode, startLocalNode, type ChildNode } from '../../tools/node.js';
import { RedisServer } from '../../tools/redis-server.js';
import { freePort } from '../../tools/child.js';
import { ReplyHoldProxy } from '../../tools/proxies/reply-hold-proxy.js';

/** One ID straight from a node's ID service, as a promise whether it was answered at once or not. */
function issued(node: { rt: { ids: IdService } }, tag: string, opts: IdOptions = {}): Promise<string[]> {
  try {
    return Promise.resolve(node.rt.ids.issue({ ...opts, tag, as: 'ids', count: 1 }));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Times each change is made, per place it is made from. */
const REPEAT = 3;
/** Concurrent requests per transport in a burst. */
const DIRECT = 8;
const HTTP = 8;
const UDP = 4;
const WS = 4;

/** The API's code for a UDP reply's (-7 covers a disabled tag and an unavailable one). */
function udpOutcome(code: number, message: string | undefined): string {
  if (code === -1) return 'TAG_NOT_FOUND';
  if (code === -8) return 'UNAUTHORIZED';
  if (code === -7) return /is disabled/.test(message ?? '') ? 'TAG_DISABLED' : 'UNAVAILABLE';
  return `udp ${code} ${message}`;
}

interface Probe {
  readonly tag: string;
  /** A rule's app name. */
  readonly app?: string;
  readonly token?: string;
  /** What an ID says about the definition that made it ('' when nothing). */
  readonly mark?: (id: string) => string;
}

/** 'OK' (with the ID's mark) or the error code, per transport. */
type Outcomes = Record<'direct' | 'http' | 'udp' | 'ws', string[]>;

const ok = (p: Probe, id: string) => (p.mark ? `OK:${p.mark(id)}` : 'OK');

/** Open UDP sockets and websockets, ready to send one request each at once. */
class Burst {
  private constructor(
    private readonly node: Node & { url: string },
    private readonly p: Probe,
    private readonly socks: Socket[],
    private readonly wss: WebSocket[],
  ) {}

  static async open(node: Node & { url: string }, p: Probe): Promise<Burst> {
    const socks = await Promise.all(
      Array.from({ length: UDP }, async () => {
        const s = createSocket('udp4');
        await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
        return s;
      }),
    );
    const wss = await Promise.all(
      Array.from({ length: WS }, async () => {
        const ws = new WebSocket(`${node.url.replace('http', 'ws')}/v1/stream`);
        await new Promise((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        });
        return ws;
      }),
    );
    return new Burst(node, p, socks, wss);
  }

  /**
   * Sends every request now: the ID service's own calls within this very turn, then the
   * datagrams, stream takes and HTTP requests. Resolves with every outcome.
   */
  fire(): Promise<Outcomes> {
    const { p, node } = this;
    const opts = { app: p.app, token: p.token };
    const direct = Array.from({ length: DIRECT }, () =>
      issued(node, p.tag, opts).then(
        ([id]) => ok(p, id),
        (e: { code?: string }) => String(e.code),
      ),
    );
    const udp = this.socks.map(
      (s) =>
        new Promise<string>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('no UDP reply within 5 s')), 5000);
          s.once('message', (m) => {
            clearTimeout(t);
            const r = JSON.parse(m.toString()) as { code: number; message?: string; data?: string };
            resolve(r.code === 0 ? ok(p, String(r.data)) : udpOutcome(r.code, r.message));
          });
          s.send(
            // Padded (the pad is not echoed), so that a refusal's whole message fits in its reply.
            JSON.stringify({ action: 'get', rule_name: p.tag, app_name: p.app ?? 'a', ...(p.token ? { token: p.token } : {}), pad: 'p'.repeat(200) }),
            node.udpPort!,
            '127.0.0.1',
          );
        }),
    );
    const ws = this.wss.map(
      (w, i) =>
        new Promise<string>((resolve) => {
          const ids: string[] = [];
          const onMessage = (m: WebSocket.RawData) => {
            const msg = JSON.parse(m.toString()) as { op: string; code?: string; ids?: string[] };
            if (msg.op === 'block') ids.push(...(msg.ids ?? []));
            if (msg.op === 'error' || msg.op === 'done') {
              w.off('message', onMessage);
              resolve(msg.op === 'error' ? String(msg.code) : ids.length === 1 ? ok(p, ids[0]) : `ids ${ids.length}`);
            }
          };
          w.on('message', onMessage);
          w.send(
            JSON.stringify({
              op: 'take',
              req: i + 1,
              tag: p.tag,
              count: 1,
              format: 'json',
              ...(p.app ? { app: p.app } : {}),
              ...(p.token ? { token: p.token } : {}),
            }),
          );
        }),
    );
    const query = p.app ? `?app=${p.app}` : '';
    const headers: Record<string, string> = p.token ? { 'x-idmint-token': p.token } : {};
    const http = Array.from({ length: HTTP }, async () => {
      const res = await fetch(`${node.url}/v1/id/${p.tag}${query}`, { headers });
      const body = (await res.json()) as { id?: string; error?: { code: string } };
      return res.status === 200 ? ok(p, String(body.id)) : String(body.error?.code);
    });
    return (async () => ({ direct: await Promise.all(direct), udp: await Promise.all(udp), ws: await Promise.all(ws), http: await Promise.all(http) }))();
  }

  close(): void {
    for (const s of this.socks) s.close();
    for (const w of this.wss) w.close();
  }
}

function assertAll(got: Outcomes, want: string, what: string): void {
  const wrong = Object.entries(got).flatMap(([via, outcomes]) => {
    const bad = outcomes.filter((o) => o !== want);
    return bad.length === 0 ? [] : [`${bad.length} of ${outcomes.length} ${via} requests answered ${JSON.stringify(bad)}`];
  });
  assert.equal(wrong.length, 0, `${what}, instead of ${want}: ${wrong.join('; ')}`);
}

async function admin(url: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url + path, {
    method,
    headers: body === undefined ? { authorization: `Bearer ${ADMIN_TOKEN}` } : adminHeaders,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

interface Change {
  readonly name: string;
  /** Sets up the tag (through the node given) and answers how requests probe it. */
  prepare(url: string, tag: string): Promise<Probe>;
  /** What every probe answers before the change, and after it. */
  readonly before: string;
  readonly after: string;
  /** Makes the change through the node at url. */
  change(url: string, tag: string, p: Probe): Promise<void>;
}

const RULE_T0 = '{yyyy}{counter:6}';
const RULE_T1 = 'N{yyyy}{counter:6}';
const letterOrDigit = (id: string) => (/^\d/.test(id) ? 'digits' : id[0]);
const tokenOf = async (url: string, tag: string) => (await admin(url, 'POST', `/v1/admin/tags/${tag}/tokens`, {})) as { id: number; token: string };

/** A rule of the given order whose template changes: its IDs start with a digit, then with N. */
function templateChange(name: string, order: 'node' | 'global'): Change {
  return {
    name,
    prepare: async (url, tag) => {
      await createTag(url, { tag, mode: 'rule', order, template: RULE_T0, max_counter: 999999 });
      return { tag, app: 'shop', mark: letterOrDigit };
    },
    before: 'OK:digits',
    after: 'OK:N',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { template: RULE_T1 })),
  };
}

const CHANGES: Change[] = [
  {
    name: 'a segment tag created after a cached TAG_NOT_FOUND',
    prepare: async (_url, tag) => ({ tag }),
    before: 'TAG_NOT_FOUND',
    after: 'OK',
    change: async (url, tag) => void (await createTag(url, { tag, mode: 'segment' })),
  },
  {
    name: 'a rule created after a cached TAG_NOT_FOUND',
    prepare: async (_url, tag) => ({ tag, app: 'shop' }),
    before: 'TAG_NOT_FOUND',
    after: 'OK',
    change: async (url, tag) => void (await createTag(url, { tag, mode: 'rule', template: RULE_T0, max_counter: 999999 })),
  },
  templateChange("a rule's template changed", 'node'),
  // Served from its app counter's coalescer once warm, like an order: node rule from memory.
  templateChange("an order: global rule's template changed", 'global'),
  {
    name: 'an order: node tag disabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_DISABLED',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false })),
  },
  {
    name: 'a disabled tag enabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag, enabled: false });
      return { tag };
    },
    before: 'TAG_DISABLED',
    after: 'OK',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: true })),
  },
  {
    name: 'an order: node tag deleted',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_NOT_FOUND',
    change: async (url, tag) => void (await admin(url, 'DELETE', `/v1/admin/tags/${tag}`)),
  },
  {
    name: 'an order: global tag disabled',
    prepare: async (url, tag) => {
      await createTag(url, { tag });
      return { tag };
    },
    before: 'OK',
    after: 'TAG_DISABLED',
    change: async (url, tag) => void (await admin(url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false })),
  },
  {
    name: 'a token created for a snowflake tag',
    prepare: async (url, tag) => {
      await createTag(url, { tag, mode: 'snowflake' });
      return { tag };
    },
    before: 'OK',
    // A tag with tokens answers a request without a valid one as a missing tag.
    after: 'TAG_NOT_FOUND',
    change: async (url, tag) => void (await tokenOf(url, tag)),
  },
  {
    name: 'a token revoked (another stays)',
    prepare: async (url, tag) => {
      await createTag(url, { tag, order: 'node' });
      const revoked = await tokenOf(url, tag);
      await tokenOf(url, tag);
      return { tag, token: revoked.token, revokeId: revoked.id } as Probe;
    },
    before: 'OK',
    // A tag with tokens answers a request without a valid one as a missing tag.
    after: 'TAG_NOT_FOUND',
    change: async (url, tag, p) => void (await admin(url, 'DELETE', `/v1/admin/tags/${tag}/tokens/${(p as Probe & { revokeId: number }).revokeId}`)),
  },
];

describe('an admin change is seen by the very next request', () => {
  const names = testNames();
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    const udpPort = await freePort();
    // Definitions stay cached for a minute: only the change itself can make them be read again.
    b = await startLocalNode(names, { UDP_PORT: String(udpPort), TAG_CACHE_MS: '60000', NODE_ID: 'consistency-b' });
    a = await spawnNode(names, { NODE_ID: 'consistency-a', TAG_CACHE_MS: '60000' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await cleanup(names);
    assert.equal(code, 0);
  });

  for (const where of ['same', 'other'] as const) {
    for (const [n, c] of CHANGES.entries()) {
      it(`${c.name}, ${where === 'same' ? 'on the process that answered the admin call' : 'on another process, once the announcement is delivered'}`, {
        timeout: 60000,
      }, async () => {
        for (let round = 0; round < REPEAT; round++) {
          const tag = `c${n}${where[0]}${round}`;
          const p = await c.prepare(b.url, tag);
          const burst = await Burst.open(b, p);
          try {
            // Twice: the first reads the definition, the second is served from the cache
            // (and the in-memory blocks) exactly as the change will find it.
            assertAll(await burst.fire(), c.before, `round ${round}, before the change (reading it)`);
            assertAll(await burst.fire(), c.before, `round ${round}, before the change (cached)`);
            const got = await afterChange(where, b, tag, burst, () => c.change(where === 'same' ? b.url : a.url, tag, p));
            assertAll(got, c.after, `round ${round}, after the change`);
            assertAll(await burst.fire(), c.after, `round ${round}, later`);
          } finally {
            burst.close();
          }
        }
      });
    }
  }
});

/** Waits for the delivery of an announcement of tag at node, calls fn at once, and answers what it returned. */
function onDelivery<T>(node: Node, tag: string, fn: () => T): Promise<{ readonly value: T }> {
  return new Promise((resolve) => {
    const onMessage = (_ch: string, t: string) => {
      if (t !== tag) return;
      node.rt.subscriber.off('message', onMessage);
      resolve({ value: fn() });
    };
    node.rt.subscriber.on('message', onMessage);
  });
}

let markers = 0;

/**
 * Resolves once every announcement published before the call has been delivered at node: a
 * marker (no tag's name) published on every server of its Redis comes after them, for a
 * subscriber gets what one server publishes in the order it ran the PUBLISHes.
 */
async function announcementsDelivered(node: Node): Promise<void> {
  const channel = node.rt.keys.tagsChanged();
  const servers = isCluster(node.rt.redis) ? node.rt.redis.nodes('master') : [node.rt.redis];
  const pending = new Set(servers.map(() => `~delivered-${++markers}`));
  const names = [...pending];
  const delivered = new Promise<void>((resolve) => {
    const onMessage = (ch: string, t: string) => {
      if (ch !== channel || !pending.delete(t) || pending.size > 0) return;
      node.rt.subscriber.off('message', onMessage);
      resolve();
    };
    node.rt.subscriber.on('message', onMessage);
  });
  await Promise.all(servers.map((server, i) => server.publish(channel, names[i])));
  await delivered;
}

/**
 * Makes the change (through `node` when `where` is 'same', else through another process) and
 * answers the outcomes of a burst sent at `node` as soon as the change is visible there: the
 * admin call's answer, or the delivery of the announcement (fired from the listener right
 * after the registry's own, before anything else runs).
 */
async function afterChange(where: 'same' | 'other', node: Node & { url: string }, tag: string, burst: Burst, change: () => Promise<void>): Promise<Outcomes> {
  if (where === 'same') {
    await change();
    return burst.fire();
  }
  // The announcements of the preparation are delivered first.
  await announcementsDelivered(node);
  const fired = onDelivery(node, tag, () => burst.fire());
  await change();
  return await (await fired).value;
}

describe('a tag moved off a named Redis that died is served from the new one by the very next request', {
  skip: skipOnCluster('it starts and kills its own redis-servers'),
}, () => {
  const names = testNames();
  let dead: RedisServer;
  let live: RedisServer;
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    dead = await RedisServer.start();
    live = await RedisServer.start();
    const env = { REDIS_URLS: `old=${dead.url},new=${live.url}`, TAG_CACHE_MS: '60000', REFILL_WAIT_MS: '2000' };
    b = await startLocalNode(names, { ...env, UDP_PORT: String(await freePort()), NODE_ID: 'consistency-mv-b', LOG_LEVEL: 'error' });
    a = await spawnNode(names, { ...env, NODE_ID: 'consistency-mv-a' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await cleanup(names);
    await dead.stop();
    await live.stop();
    assert.equal(code, 0);
  });

  for (const where of ['same', 'other'] as const) {
    it(where === 'same' ? 'on the process that answered the move' : 'on another process, once the announcement is delivered', { timeout: 60000 }, async () => {
      for (let round = 0; round < 2; round++) {
        const tag = `mv${where[0]}${round}`;
        await createTag(b.url, { tag, redis: 'old', step: 100, min_step: 100 });
        // The old server is back from the previous round once this process reaches it again.
        for (const until = Date.now() + 15000; ; ) {
          const res = await fetch(`${b.url}/v1/id/${tag}`);
          if (res.status === 200) break;
          assert.ok(Date.now() < until, `the restarted Redis is not served again: ${res.status} ${await res.text()}`);
          await sleep(100);
        }
        const burst = await Burst.open(b, { tag });
        let killed = false;
        try {
          assertAll(await burst.fire(), 'OK', `round ${round}, before the move`);
          assertAll(await burst.fire(), 'OK', `round ${round}, before the move (cached)`);
          await dead.kill();
          killed = true;
          const got = await afterChange(where, b, tag, burst, async () => {
            const res = await admin(where === 'same' ? b.url : a.url, 'POST', `/v1/admin/tags/${tag}/migrate`, { to: 'new', force: true });
            assert.equal(res.moved, true);
          });
          assertAll(got, 'OK', `round ${round}, after the move`);
        } finally {
          burst.close();
          if (killed) await dead.start();
        }
      }
    });
  }
});

describe('requests after a change do not join a read that began before it', () => {
  const names = testNames();
  let proxy: ReplyHoldProxy;
  let b: Node & { url: string };
  let a: ChildNode;

  before(async () => {
    proxy = await ReplyHoldProxy.start(Number(new URL(names.mysqlUrl).port || 3306));
    // This process reaches MySQL through the proxy; the other process directly.
    const viaProxy = mysqlUrlFor(names.db, `mysql://root@127.0.0.1:${proxy.port}/idmint`);
    // It runs no refill worker: a refill transaction held by the proxy would hold the tag's row
    // lock and keep the other process's admin calls waiting past their bound.
    b = await startLocalNode(names, {
      MYSQL_URL: viaProxy,
      UDP_PORT: String(await freePort()),
      TAG_CACHE_MS: '60000',
      NODE_ID: 'consistency-hold-b',
      REFILL_CONCURRENCY: '0',
    });
    a = await spawnNode(names, { NODE_ID: 'consistency-hold-a', TAG_CACHE_MS: '60000' });
  });
  after(async () => {
    await b.close();
    const code = await a.stop();
    await proxy.close();
    await cleanup(names);
    assert.equal(code, 0);
  });

  it('a change announced while the definition is being read for an earlier one', { timeout: 60000 }, async () => {
    for (let round = 0; round < REPEAT; round++) {
      const tag = `hold${round}`;
      await createTag(a.url, { tag, order: 'node' });
      const burst = await Burst.open(b, { tag });
      try {
        assertAll(await burst.fire(), 'OK', `round ${round}, before the changes (reading it)`);
        assertAll(await burst.fire(), 'OK', `round ${round}, before the changes (cached)`);
        // Idle pool connections, so that reads go out at once (a new connection's handshake
        // would be held back too).
        await Promise.all(Array.from({ length: 8 }, () => b.rt.pool.query('SELECT 1')));
        // The tag's creation is announced here before the changes.
        await announcementsDelivered(b);

        proxy.hold();
        const heldBefore = proxy.heldChunks;
        // A first change: a request at its delivery starts a read, which MySQL runs at once
        // (it sees the tag still enabled); its answer is held back.
        const early = onDelivery(b, tag, () =>
          issued(b, tag).then(
            () => 'OK',
            (e: { code?: string }) => String(e.code),
          ),
        );
        await admin(a.url, 'PATCH', `/v1/admin/tags/${tag}`, { description: `first change, round ${round}` });
        for (const until = Date.now() + 5000; proxy.heldChunks < heldBefore + 2; ) {
          assert.ok(Date.now() < until, 'the read of the first change never reached MySQL');
          await sleep(5);
        }
        // The second change, announced while that read's answer is still on its way.
        const late = onDelivery(b, tag, () => burst.fire());
        await admin(a.url, 'PATCH', `/v1/admin/tags/${tag}`, { enabled: false });
        const fired = await Promise.race([late, new Promise<undefined>((r) => setTimeout(() => r(undefined), 5000))]);
        assert.ok(fired, 'the second announcement was not delivered within 5 s');
        // Let the requests after it start their own reads (if they do), then let every answer through.
        await sleep(100);
        proxy.release();
        assertAll(await fired.value, 'TAG_DISABLED', `round ${round}, after the second change`);
        assert.ok(['OK', 'TAG_DISABLED'].includes(await (await early).value), 'the request before the second change sees either definition');
        assertAll(await burst.fire(), 'TAG_DISABLED', `round ${round}, later`);
      } finally {
        proxy.release();
        burst.close();
      }
    }
  });
});
