// suite: cluster
// The websocket stream (GET /v1/stream) against real Redis and MySQL: exact and unique takes
// in every format, several takes per socket and several sockets, disjoint from HTTP IDs served
// at the same time; a slow reader bounded by the buffer limit; a dropped socket whose IDs are
// never reissued; bad input answered with errors; and a shutdown that does not wait on readers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { cleanup, testNames } from '../../tools/env.js';
import { createTag, fetchIds, startLocalNode } from '../../tools/node.js';
import { assertIncreasing } from '../../tools/order.js';
import { idsOf } from '../helpers/answers.js';
import { waitFor } from '../helpers/fault-load.js';

const BUFFER_BYTES = 1024 * 1024;
const MAX_SOCKETS = 8;
const MAX_IN_FLIGHT = 4;
const MAX_BLOCK = 65536;
const MAX_COUNT = 50_000_000;

interface TakeResult {
  ids: bigint[];
  strings: string[];
  ranges: [bigint, bigint][];
  blocks: number;
  largestBlock: number;
  error?: { code: string; message: string };
}

/** A raw websocket client of the stream: collects the replies of each req. */
class Probe {
  readonly ws: WebSocket;
  /** Errors without a req (refused control messages). */
  readonly loose: { code: string; message: string; req: number | null }[] = [];
  private readonly takes = new Map<number, { r: TakeResult; resolve: (r: TakeResult) => void }>();
  private looseWaiter?: () => void;
  closed?: { code: number; reason: string };
  private readonly closedP: Promise<void>;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closedP = new Promise((resolve) =>
      ws.once('close', (code, reason) => {
        this.closed = { code, reason: reason.toString() };
        resolve();
      }),
    );
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        const req = data.readUInt32LE(0);
        const count = data.readUInt32LE(4);
        assert.equal(data.length, 8 + 8 * count, 'binary frame length');
        const t = this.takes.get(req);
        assert.ok(t, `binary block for unknown req ${req}`);
        for (let i = 0; i < count; i++) t.r.ids.push(data.readBigUInt64LE(8 + 8 * i));
        t.r.blocks++;
        t.r.largestBlock = Math.max(t.r.largestBlock, count);
        return;
      }
      const m = JSON.parse(data.toString()) as { op: string; req: number | null; ids?: string[]; ranges?: [string, string][]; code?: string; message?: string };
      if (m.op === 'error' && m.req === null) {
        this.loose.push({ code: m.code!, message: m.message!, req: null });
        this.looseWaiter?.();
        return;
      }
      const t = this.takes.get(m.req!);
      if (!t) {
        this.loose.push({ code: m.code ?? m.op, message: m.message ?? '', req: m.req });
        this.looseWaiter?.();
        return;
      }
      if (m.op === 'block') {
        t.r.blocks++;
        if (m.ids) {
          t.r.largestBlock = Math.max(t.r.largestBlock, m.ids.length);
          for (const s of m.ids) t.r.strings.push(s);
        }
        if (m.ranges) {
          let n = 0;
          for (const [a, b] of m.ranges) {
            t.r.ranges.push([BigInt(a), BigInt(b)]);
            n += Number(BigInt(b) - BigInt(a)) + 1;
          }
          t.r.largestBlock = Math.max(t.r.largestBlock, n);
        }
      } else {
        if (m.op === 'error') t.r.error = { code: m.code!, message: m.message! };
        this.takes.delete(m.req!);
        t.resolve(t.r);
      }
    });
  }

  static open(url: string): Promise<Probe> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/stream`);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Probe(ws)));
      ws.once('error', reject);
    });
  }

  /** Sends a take and resolves with everything it received up to done or error. */
  take(msg: Record<string, unknown>): Promise<TakeResult> {
    const req = msg.req as number;
    return new Promise((resolve) => {
      this.takes.set(req, { r: { ids: [], strings: [], ranges: [], blocks: 0, largestBlock: 0 }, resolve });
      this.ws.send(JSON.stringify({ op: 'take', ...msg }));
    });
  }

  /** Sends raw data and resolves with the next error that has no take of this probe. */
  async refused(data: string | Buffer): Promise<{ code: string; message: string; req: number | null }> {
    const before = this.loose.length;
    const got = new Promise<void>((r) => (this.looseWaiter = r));
    this.ws.send(data, { binary: typeof data !== 'string' });
    if (this.loose.length === before) await Promise.race([got, sleep(3000)]);
    assert.ok(this.loose.length > before, `no error for ${String(data).slice(0, 80)}`);
    return this.loose[this.loose.length - 1];
  }

  async close(): Promise<void> {
    this.ws.close();
    await Promise.race([this.closedP, sleep(2000)]);
  }

  whenClosed(): Promise<void> {
    return this.closedP;
  }
}

/**
 * A take of 1,000,000 IDs of the `witness` tag in blocks of 1,000 on a socket of its own, read
 * to its end: a thousand sends, each after a turn of the server's event loop, that must all have
 * happened before it returns. Where a test checks that the server did not do something, it
 * waits for this instead of a fixed time: on a slow machine it takes longer too.
 */
async function witnessTake(node: Awaited<ReturnType<typeof startLocalNode>>): Promise<void> {
  const sockets = () => node.app!.websocketServer.clients.size;
  const before = sockets();
  const w = await Probe.open(node.url);
  const r = await w.take({ req: 1, tag: 'witness', count: 1_000_000, block: 1000, format: 'ranges' });
  assert.equal(r.error, undefined);
  assert.equal(
    r.ranges.reduce((n, [a, b]) => n + Number(b - a) + 1, 0),
    1_000_000,
  );
  await w.close();
  // Its place freed, as the tests after it count them.
  await waitFor('the server to close the witness socket', () => sockets() === before, 10_000, 5);
}

/** Asserts that no ID occurs twice among all the lists (IDs below 2^53). */
function assertDistinct(lists: readonly (readonly bigint[])[]): number {
  let n = 0;
  for (const l of lists) n += l.length;
  const all = new Float64Array(n);
  let i = 0;
  for (const l of lists) for (const v of l) all[i++] = Number(v);
  all.sort();
  for (let j = 1; j < n; j++) if (all[j] === all[j - 1]) assert.fail(`ID ${all[j]} was handed out twice`);
  return n;
}

describe('websocket stream', () => {
  const names = testNames();
  let node: Awaited<ReturnType<typeof startLocalNode>>;
  let url: string;

  before(async () => {
    node = await startLocalNode(names, {
      STREAM_MAX_BUFFER_BYTES: String(BUFFER_BYTES),
      STREAM_MAX_SOCKETS_PER_CLIENT: String(MAX_SOCKETS),
      STREAM_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
      STREAM_MAX_BLOCK: String(MAX_BLOCK),
      STREAM_MAX_COUNT: String(MAX_COUNT),
    });
    url = node.url;
    const big = { step: 2_000_000, min_step: 1000, max_step: 20_000_000 };
    await createTag(url, { tag: 'bulk', ...big });
    await createTag(url, { tag: 'slow', ...big });
    await createTag(url, { tag: 'drop', ...big });
    await createTag(url, { tag: 'witness', ...big });
    await createTag(url, { tag: 'user', layout: 'sharded', shards: 8, app_id: 5, step: 100_000, max_step: 1_000_000 });
    await createTag(url, { tag: 'evt', mode: 'snowflake' });
    await createTag(url, {
      tag: 'day',
      mode: 'rule',
      template: '{yyyy}{MM}{dd}-{counter:6}',
      min_counter: 0,
      max_counter: 999999,
      reset_seconds: 86400,
      time_zone: 'UTC',
    });
    await createTag(url, { tag: 'tiny', step: 100, min_step: 100, max_id_limit: 500 });
  });
  after(async () => {
    await node.close();
    await cleanup(names);
  });

  it('serves 1,000,000 IDs in each format on one socket, exact, unique and disjoint from HTTP IDs served meanwhile', async () => {
    const p = await Probe.open(url);
    const N = 1_000_000;
    let streaming = true;
    const http: bigint[][] = [];
    const httpLoop = (async () => {
      while (streaming) http.push(await fetchIds(url, 'bulk', 1000));
    })();
    const [bin, json, ranges] = await Promise.all([
      p.take({ req: 1, tag: 'bulk', count: N, block: 50_000, format: 'binary' }),
      p.take({ req: 2, tag: 'bulk', count: N, block: 20_000, format: 'json' }),
      p.take({ req: 3, tag: 'bulk', count: N, block: MAX_BLOCK, format: 'ranges' }),
    ]);
    streaming = false;
    await httpLoop;
    for (const [r, name, block] of [
      [bin, 'binary', 50_000],
      [json, 'json', 20_000],
      [ranges, 'ranges', MAX_BLOCK],
    ] as const) {
      assert.equal(r.error, undefined, `${name}: ${JSON.stringify(r.error)}`);
      assert.ok(r.largestBlock <= block, `${name}: a block of ${r.largestBlock} IDs exceeds ${block}`);
    }
    assert.equal(bin.blocks, 20);
    const lists = [idsOf(bin), idsOf(json), idsOf(ranges)];
    for (const [i, l] of lists.entries()) {
      assert.equal(l.length, N, `take ${i + 1} count`);
      assertIncreasing(l, `take ${i + 1}`);
    }
    assert.ok(ranges.ranges.length < 100, `ranges come as runs (${ranges.ranges.length})`);
    assert.ok(http.length > 0, 'HTTP requests ran during the takes');
    assert.equal(assertDistinct([...lists, ...http]), 3 * N + 1000 * http.length);
    await p.close();
  });

  it('runs several takes in flight on several sockets, all unique', async () => {
    const probes = await Promise.all([1, 2, 3, 4].map(() => Probe.open(url)));
    const formats = ['binary', 'json', 'ranges'] as const;
    const results = await Promise.all(
      probes.flatMap((p, i) =>
        [0, 1, 2].map((j) => p.take({ req: 10 + j, tag: 'bulk', count: 200_000 + i * 1000 + j, block: 25_000, format: formats[(i + j) % 3] })),
      ),
    );
    const lists = results.map((r) => {
      assert.equal(r.error, undefined);
      return idsOf(r);
    });
    lists.forEach((l, k) => assert.equal(l.length, 200_000 + Math.floor(k / 3) * 1000 + (k % 3)));
    assertDistinct(lists);
    await Promise.all(probes.map((p) => p.close()));
  });

  it('serves sharded, snowflake and rule tags in the formats that carry them', async () => {
    const p = await Probe.open(url);
    const [bin, json] = await Promise.all([
      p.take({ req: 1, tag: 'user', key: 'alice', count: 30_000, block: 7000, format: 'binary' }),
      p.take({ req: 2, tag: 'user', key: 'alice', count: 30_000, block: 7000, format: 'json' }),
    ]);
    const [viaHttp] = await fetchIds(url, 'user', 1, '&key=alice');
    const sharded = [idsOf(bin), idsOf(json)];
    for (const l of sharded) {
      assert.equal(l.length, 30_000);
      assertIncreasing(l, 'sharded');
      // shards 8 → 3 shard bits over 8 app bits: every ID of one key shares the low 11 bits.
      for (const id of l) assert.equal(id & 0x7ffn, viaHttp & 0x7ffn);
    }
    assertDistinct([...sharded, [viaHttp]]);
    const refused = await p.take({ req: 3, tag: 'user', key: 'alice', count: 10, format: 'ranges' });
    assert.equal(refused.error?.code, 'INVALID_ARGUMENT');
    assert.match(refused.error!.message, /sharded/);

    const sf = await Promise.all(
      (['binary', 'json', 'ranges'] as const).map((format, i) => p.take({ req: 10 + i, tag: 'evt', count: 100_000, block: 30_000, format })),
    );
    const sfLists = sf.map((r) => {
      assert.equal(r.error, undefined);
      const l = idsOf(r);
      assert.equal(l.length, 100_000);
      assertIncreasing(l, 'snowflake');
      return l;
    });
    const all = new Set(sfLists.flat());
    assert.equal(all.size, 300_000, 'snowflake IDs are unique');
    // Runs break at tick boundaries only: far fewer runs than IDs.
    assert.ok(sf[2].ranges.length < 100_000 / 100, `snowflake runs: ${sf[2].ranges.length}`);

    const rule = await p.take({ req: 20, tag: 'day', app: 'shop', count: 5000, block: 2000, format: 'json' });
    assert.equal(rule.error, undefined);
    assert.equal(new Set(rule.strings).size, 5000);
    assert.match(rule.strings[0], /^\d{8}-\d{6}$/);
    for (const format of ['binary', 'ranges']) {
      const r = await p.take({ req: 21, tag: 'day', app: 'shop', count: 10, format });
      assert.equal(r.error?.code, 'INVALID_ARGUMENT');
      assert.match(r.error!.message, /"json" only/);
    }
    await p.close();
  });

  it('keeps a slow reader under the buffer bound and finishes its take once it reads', async () => {
    const p = await Probe.open(url);
    const N = 10_000_000;
    const tag = await node.rt.ids.reads.access('slow', undefined);
    const taken = async () => (await node.rt.segments.stats({ tag: 'slow', epoch: tag.epoch, shard: 0 })).taken;
    const before = await taken();
    const serverSockets = () => [...node.app!.websocketServer.clients];
    let maxBuffered = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const s of serverSockets()) maxBuffered = Math.max(maxBuffered, s.bufferedAmount);
        await sleep(2);
      }
    })();
    const rss0 = process.memoryUsage().rss;
    p.ws.pause(); // stop reading: the socket's kernel buffers fill, then the server waits
    const done = p.take({ req: 1, tag: 'slow', count: N, block: MAX_BLOCK, format: 'binary' });
    // The server fills what the kernel holds, then its own buffer up to the bound: from there on
    // it waits for room, with a block's worth or less to go.
    const frame = 8 + 8 * MAX_BLOCK;
    await waitFor('the server to hold a full buffer for the reader', () => serverSockets().some((s) => s.bufferedAmount + frame > BUFFER_BYTES), 30_000, 5);
    // A thousand turns of its event loop for the server to send what still fits; then, a
    // thousand turns later, it has taken nothing more.
    await witnessTake(node);
    const atBound = (await taken()) - before;
    assert.ok(atBound < N / 2, `the server took ${atBound} of ${N} IDs while nobody read`);
    await witnessTake(node);
    const takenWhilePaused = (await taken()) - before;
    const rssPaused = process.memoryUsage().rss;
    assert.equal(takenWhilePaused, atBound, 'the server waits for the reader instead of taking on');
    assert.ok(maxBuffered <= BUFFER_BYTES, `buffered ${maxBuffered} > ${BUFFER_BYTES}`);
    assert.ok(rssPaused - rss0 < 64 * 1024 * 1024, `RSS grew by ${rssPaused - rss0} bytes while paused`);
    p.ws.resume();
    const r = await done;
    sampling = false;
    await sampler;
    assert.equal(r.error, undefined);
    assert.equal(r.ids.length, N);
    assertIncreasing(r.ids, 'slow take');
    assert.ok(maxBuffered <= BUFFER_BYTES, `buffered ${maxBuffered} > ${BUFFER_BYTES}`);
    await p.close();
  });

  it('never reissues the IDs of a socket dropped mid-take, and stops taking for it', async () => {
    const tag = await node.rt.ids.reads.access('drop', undefined);
    const taken = async () => (await node.rt.segments.stats({ tag: 'drop', epoch: tag.epoch, shard: 0 })).taken;
    const p = await Probe.open(url);
    const got: bigint[] = [];
    p.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) return;
      for (let i = 8; i < data.length; i += 8) got.push(data.readBigUInt64LE(i));
      if (got.length >= 200_000) p.ws.terminate();
    });
    const socketsBefore = node.app!.websocketServer.clients.size;
    const take = p.take({ req: 1, tag: 'drop', count: 20_000_000, block: 10_000, format: 'binary' });
    await p.whenClosed();
    void take;
    // The server notices the drop (its socket is gone) and stops taking: the count of IDs taken
    // stays put while a thousand turns of its event loop go by, twice over.
    await waitFor('the server to drop the socket', () => node.app!.websocketServer.clients.size === socketsBefore - 1, 10_000, 5);
    await witnessTake(node);
    const t1 = await taken();
    await witnessTake(node);
    assert.equal(await taken(), t1, 'the server kept taking IDs for a closed socket');
    assert.ok(t1 < 20_000_000, `took ${t1} IDs for a socket that read ${got.length}`);
    const highest = got.reduce((m, v) => (v > m ? v : m), 0n);
    const again = await Probe.open(url);
    const later = [...(await fetchIds(url, 'drop', 1000)), ...idsOf(await again.take({ req: 1, tag: 'drop', count: 100_000, format: 'binary' }))];
    assert.equal(later.length, 101_000);
    for (const id of later) assert.ok(id > highest, `${id} was issued again after the drop (highest sent: ${highest})`);
    assert.ok(later[0] > BigInt(t1), 'new IDs lie above everything taken for the dropped socket');
    await again.close();
  });

  it('answers bad input with errors, keeps the socket usable and the process up', async () => {
    const p = await Probe.open(url);
    const cases: [string, string, number | null][] = [
      ['not json', 'INVALID_ARGUMENT', null],
      ['[1,2]', 'INVALID_ARGUMENT', null],
      ['"take"', 'INVALID_ARGUMENT', null],
      ['{"req":4}', 'INVALID_ARGUMENT', 4],
      ['{"op":"nope","req":3}', 'INVALID_ARGUMENT', 3],
      ['{"op":"take","tag":"bulk","count":1}', 'INVALID_ARGUMENT', null],
      ['{"op":"take","req":-1,"tag":"bulk","count":1}', 'INVALID_ARGUMENT', null],
      ['{"op":"take","req":5,"count":1}', 'INVALID_ARGUMENT', 5],
      ['{"op":"take","req":6,"tag":"bad name","count":1}', 'INVALID_ARGUMENT', 6],
      ['{"op":"take","req":7,"tag":"bulk"}', 'INVALID_ARGUMENT', 7],
      ['{"op":"take","req":8,"tag":"bulk","count":0}', 'INVALID_ARGUMENT', 8],
      ['{"op":"take","req":9,"tag":"bulk","count":1.5}', 'INVALID_ARGUMENT', 9],
      ['{"op":"take","req":10,"tag":"bulk","count":"5"}', 'INVALID_ARGUMENT', 10],
      ['{"op":"take","req":11,"tag":"bulk","count":1e15}', 'INVALID_ARGUMENT', 11],
      [`{"op":"take","req":12,"tag":"bulk","count":${MAX_COUNT + 1}}`, 'INVALID_ARGUMENT', 12],
      ['{"op":"take","req":13,"tag":"bulk","count":10,"block":0}', 'INVALID_ARGUMENT', 13],
      [`{"op":"take","req":14,"tag":"bulk","count":10,"block":${MAX_BLOCK + 1}}`, 'INVALID_ARGUMENT', 14],
      ['{"op":"take","req":15,"tag":"bulk","count":10,"format":"xml"}', 'INVALID_ARGUMENT', 15],
      ['{"op":"take","req":16,"tag":"bulk","count":10,"colour":"red"}', 'INVALID_ARGUMENT', 16],
      ['{"op":"take","req":17,"tag":"bulk","count":10,"key":7}', 'INVALID_ARGUMENT', 17],
      ['{"op":"take","req":4294967296,"tag":"bulk","count":10}', 'INVALID_ARGUMENT', null],
    ];
    for (const [data, code, req] of cases) {
      const e = await p.refused(data);
      assert.equal(e.code, code, data);
      assert.equal(e.req, req, data);
    }
    const bin = await p.refused(Buffer.from([1, 2, 3, 4]));
    assert.equal(bin.code, 'INVALID_ARGUMENT');
    assert.match(bin.message, /text frames/);

    // Refusals that need the tag: they come for the take's req.
    const tagCases: [Record<string, unknown>, string][] = [
      [{ tag: 'nope', count: 1 }, 'TAG_NOT_FOUND'],
      [{ tag: 'user', count: 1 }, 'INVALID_ARGUMENT'],
      [{ tag: 'bulk', count: 1, key: 'k' }, 'INVALID_ARGUMENT'],
      [{ tag: 'evt', count: 1, key: 'k' }, 'INVALID_ARGUMENT'],
      [{ tag: 'evt', count: 1, app: 'shop' }, 'INVALID_ARGUMENT'],
      [{ tag: 'day', count: 1 }, 'INVALID_ARGUMENT'],
      [{ tag: 'tiny', count: 1000, format: 'json' }, 'ID_SPACE_EXHAUSTED'],
    ];
    let req = 100;
    for (const [msg, code] of tagCases) {
      const r = await p.take({ req: req++, ...msg });
      assert.equal(r.error?.code, code, JSON.stringify(msg));
    }

    // A req already in flight, and more takes in flight than allowed.
    const inFlight = [200, 201, 202, 203].map((r) => p.take({ req: r, tag: 'bulk', count: 2_000_000, block: MAX_BLOCK, format: 'binary' }));
    const dup = await p.refused(JSON.stringify({ op: 'take', req: 500, tag: 'bulk', count: 1 }));
    assert.equal(dup.code, 'LIMIT_EXCEEDED');
    const results = await Promise.all(inFlight);
    for (const r of results) assert.equal(r.ids.length, 2_000_000);
    const first = p.take({ req: 300, tag: 'bulk', count: 1_000_000, format: 'binary' });
    const again = await p.refused(JSON.stringify({ op: 'take', req: 300, tag: 'bulk', count: 1 }));
    assert.match(again.message, /already in flight/);
    assert.equal((await first).ids.length, 1_000_000);
    // A faulty message under a req in flight is refused without that req: the take keeps it,
    // with every block and its done (under the req, the client would end the take there).
    const held = p.take({ req: 301, tag: 'bulk', count: 1_000_000, format: 'binary' });
    const faulty = await p.refused(JSON.stringify({ op: 'take', req: 301, tag: 'bulk', count: 1, block: -1 }));
    assert.equal(faulty.code, 'INVALID_ARGUMENT');
    assert.equal(faulty.req, null);
    const kept = await held;
    assert.equal(kept.error, undefined, 'the take in flight goes on');
    assert.equal(kept.ids.length, 1_000_000);

    // The socket still serves.
    const ok = await p.take({ req: 400, tag: 'bulk', count: 10, format: 'json' });
    assert.equal(ok.strings.length, 10);

    // An oversized control frame closes that socket only.
    const big = await Probe.open(url);
    big.ws.send(JSON.stringify({ op: 'take', req: 1, tag: 'bulk', count: 1, pad: 'x'.repeat(64 * 1024) }));
    await big.whenClosed();
    assert.equal(big.closed?.code, 1009);

    // The same while blocks are still queued for a client that is not reading: the close
    // frame waits behind them and arrives once the client reads again (not a cut connection).
    const busy = await Probe.open(url);
    busy.ws.pause();
    void busy.take({ req: 1, tag: 'bulk', count: 5_000_000, format: 'binary' });
    const clients = () => [...node.app!.websocketServer.clients];
    await waitFor('blocks queued for the reader that does not read', () => clients().some((s) => s.bufferedAmount > 0), 30_000, 5);
    busy.ws.send(JSON.stringify({ op: 'take', req: 2, tag: 'bulk', count: 1, pad: 'x'.repeat(64 * 1024) }));
    await waitFor('the server to begin closing the socket', () => clients().some((s) => s.readyState === s.CLOSING), 30_000, 5);
    busy.ws.resume();
    await Promise.race([busy.whenClosed(), sleep(10_000)]);
    assert.equal(busy.closed?.code, 1009, 'an oversized message closes with 1009 even while blocks are queued');

    // A client that keeps sending bad messages without reading the replies is cut off.
    const spammer = await Probe.open(url);
    spammer.ws.pause();
    for (let i = 0; i < 60_000; i++) spammer.ws.send('x');
    await waitFor('the server to begin closing the spammer', () => clients().some((s) => s.readyState === s.CLOSING), 30_000, 5);
    spammer.ws.resume();
    await Promise.race([spammer.whenClosed(), sleep(10_000)]);
    assert.equal(spammer.closed?.code, 1008, 'a client that does not read its replies is closed');

    // The cap on sockets per client address; a closed socket frees its place.
    const extra: Probe[] = [];
    while (extra.length < MAX_SOCKETS) {
      const q = await Probe.open(url);
      // Served (a take answers) or refused (the socket closes): either comes, neither is waited out.
      await Promise.race([q.take({ req: 1, tag: 'bulk', count: 1, format: 'json' }), q.whenClosed()]);
      if (q.closed) {
        assert.equal(q.loose[0]?.code, 'LIMIT_EXCEEDED');
        assert.equal(q.closed.code, 1008);
        break;
      }
      extra.push(q);
    }
    assert.equal(extra.length, MAX_SOCKETS - 1, 'the probe of this test holds one place');
    const open = clients().length;
    await extra.pop()!.close();
    await waitFor('the server to free the closed socket', () => clients().length < open, 10_000, 5);
    const again2 = await Probe.open(url);
    const r2 = await again2.take({ req: 1, tag: 'bulk', count: 3, format: 'json' });
    assert.equal(r2.strings.length, 3);
    await Promise.all([...extra, again2, p].map((q) => q.close()));

    const res = await fetch(`${url}/v1/id/bulk`);
    assert.equal(res.status, 200, 'the process still serves HTTP');
  });
});

describe('websocket stream shutdown', () => {
  it('closes a node without waiting on a reader that stopped reading', async () => {
    const names = testNames();
    const node = await startLocalNode(names, { STREAM_MAX_BUFFER_BYTES: String(BUFFER_BYTES) });
    try {
      await createTag(node.url, { tag: 'bulk', step: 1_000_000, max_step: 10_000_000 });
      const p = await Probe.open(node.url);
      p.ws.pause();
      void p.take({ req: 1, tag: 'bulk', count: 10_000_000, block: 50_000, format: 'binary' });
      const queued = () => [...node.app!.websocketServer.clients].some((s) => s.bufferedAmount > 0);
      await waitFor('blocks queued for the reader that does not read', queued, 30_000, 5);
      const t0 = Date.now();
      await node.close();
      assert.ok(Date.now() - t0 < 5000, `close took ${Date.now() - t0} ms`);
      p.ws.terminate();
    } finally {
      await node.close();
      await cleanup(names);
    }
  });
});
