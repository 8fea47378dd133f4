// suite: cluster
// The websocket stream (GET /v1/stream) against real Redis and MySQL, given bad input: every
// malformed or refused take answered with its error, under its req or none; oversized frames
// and clients that do not read their replies closed; the cap on sockets per client; and the
// socket and the process still serving after all of it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cleanup, testNames } from '../../tools/env.js';
import { waitFor } from '../helpers/fault-load.js';
import { MAX_BLOCK, MAX_COUNT, MAX_SOCKETS, startStreamNode, type StreamNode } from '../helpers/stream-node.js';
import { Probe } from '../helpers/stream-probe.js';

describe('websocket stream', () => {
  const names = testNames();
  let node: StreamNode;
  let url: string;

  before(async () => {
    node = await startStreamNode(names);
    url = node.url;
  });
  after(async () => {
    await node.close();
    await cleanup(names);
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
    const inFlight = [200, 201, 202, 203].map((r) =>
      p.take({ req: r, tag: 'bulk', count: 2_000_000, block: MAX_BLOCK, format: 'binary' }),
    );
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
    await waitFor(
      'blocks queued for the reader that does not read',
      () => clients().some((s) => s.bufferedAmount > 0),
      30_000,
      5,
    );
    busy.ws.send(JSON.stringify({ op: 'take', req: 2, tag: 'bulk', count: 1, pad: 'x'.repeat(64 * 1024) }));
    await waitFor(
      'the server to begin closing the socket',
      () => clients().some((s) => s.readyState === s.CLOSING),
      30_000,
      5,
    );
    busy.ws.resume();
    await waitFor('the client that read again to see its socket closed', () => busy.closed !== undefined, 60_000, 5);
    assert.equal(busy.closed?.code, 1009, 'an oversized message closes with 1009 even while blocks are queued');

    // A client that keeps sending bad messages without reading the replies is cut off.
    const known = new Set(clients());
    const spammer = await Probe.open(url);
    await waitFor("the server to hold the spammer's socket", () => clients().some((s) => !known.has(s)), 30_000, 5);
    const spamSocket = clients().find((s) => !known.has(s))!;
    spammer.ws.pause();
    for (let i = 0; i < 60_000; i++) spammer.ws.send('x');
    await waitFor(
      'the server to begin closing the spammer',
      () => spamSocket.readyState >= spamSocket.CLOSING,
      30_000,
      5,
    );
    spammer.ws.resume();
    await waitFor('the spammer to see its socket closed', () => spammer.closed !== undefined, 60_000, 5);
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
