// suite: single — the UDP protocol's encoding; rule IDs run on the cluster in rules-two-processes.test.ts
// The id_server-compatible UDP listener against real Redis and MySQL, given datagrams that are
// no request: none is answered with more bytes than it holds, and a few thousand randomized
// malformed datagrams (seed printed; SEED=<n> draws them again) each get at most one reply with
// the documented non-zero code (or cannot be sent at all), after which the process still serves
// UDP and HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Node } from '../../src/process/serve.js';
import { cleanup, testNames } from '../../tools/env.js';
import { rng, SEED } from '../../tools/prng.js';
import { UdpClient, type Json } from '../../tools/udp-client.js';
import { canonical, echoed, expected, UDP_CODE_NAMES } from '../helpers/udp-replies.js';
import { KINDS, malformed } from '../helpers/udp-datagrams.js';
import { startUdpNode, UDP_TAGS } from '../helpers/udp-node.js';

describe('UDP listener (id_server protocol)', () => {
  const names = testNames();
  const MAX = 1024;
  let node: Node;
  let url: string;
  let port: number;
  let c: UdpClient;
  const RULES = UDP_TAGS;

  before(async () => {
    ({ node, url, port } = await startUdpNode(names, MAX));
    c = await UdpClient.open();
  });

  after(async () => {
    c?.close();
    await node?.close();
    await cleanup(names);
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
        assert.ok(
          Buffer.byteLength(r) <= buf.length,
          `a reply of ${Buffer.byteLength(r)} bytes to the ${buf.length}-byte datagram ${JSON.stringify(d)}: ${r}`,
        );
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
              assert.ok(
                Buffer.byteLength(answer) <= 2 * text.length,
                `an answer of ${Buffer.byteLength(answer)} bytes to ${text}`,
              );
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
              for (const rep of replies)
                assert.ok(
                  Buffer.byteLength(rep) <= buf.length,
                  `a reply of ${Buffer.byteLength(rep)} bytes to ${what}`,
                );
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
              if (rep.message !== UDP_CODE_NAMES.get(exp.code))
                assert.deepEqual(rest, full, `not echoed: ${raw.slice(0, 300)} to ${what}`);
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
      clients.forEach((cl, w) =>
        assert.equal(cl.received, sent[w], `worker ${w}: ${cl.received} replies to ${sent[w]} datagrams`),
      );
    } finally {
      for (const cl of clients) cl.close();
    }
    const total = [...byCode.values()].reduce((a, b) => a + b, 0);
    assert.ok(total + dropped >= 2500, `only ${total} malformed datagrams answered and ${dropped} dropped`);
    assert.ok(dropped > 0 && total > dropped, `${total} malformed datagrams answered, ${dropped} dropped`);
    assert.ok(unsendable >= WORKERS * 4, `only ${unsendable} datagrams too large to send`);
    for (const code of [-1, -2, -3, -4, -5])
      assert.ok(
        (byCode.get(code) ?? 0) >= 50,
        `code ${code} answered only ${byCode.get(code) ?? 0} times: ${JSON.stringify([...byCode])}`,
      );
    for (const kind of KINDS)
      assert.ok((byKind.get(kind) ?? 0) >= 100, `only ${byKind.get(kind) ?? 0} datagrams of kind ${kind}`);

    // Still serving, over UDP and HTTP, and the counter went on.
    const all = valid.flat();
    assert.equal(all.length, WORKERS * (PER_WORKER / 50));
    assert.equal(new Set(all).size, all.length);
    for (const ids of valid)
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${ids[i - 1]} then ${ids[i]}`);
    const u = await c.request(port, { action: 'get', rule_name: 'o2o', app_name: 'fz', seq: 'after' });
    assert.equal(u.code, 0, JSON.stringify(u));
    const h = await fetch(`${url}/v1/id/o2o?app=fz`);
    assert.equal(h.status, 200);
    const afterId = ((await h.json()) as { id: string }).id;
    assert.ok(
      afterId > (u.data as string) && (u.data as string) > before.id,
      `${before.id}, ${u.data as string}, ${afterId}`,
    );
    assert.equal(Number(afterId.slice(5)) - Number(before.id.slice(5)), all.length + 2);
  });
});
