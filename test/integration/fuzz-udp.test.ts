// suite: single — malformed input at the transports, long (npm run fuzz)
// Fuzzing the UDP listener of a real idmint child process (real Redis and MySQL): randomised
// datagrams (fast-check). Every well-formed request gets exactly one reply with a documented
// code and a message, never a refusal longer than the datagram nor an answer over twice its
// size; and the process is still alive and healthy at the end.
//
// FUZZ_RUNS scales the number of generated cases (`npm run fuzz` runs many more); FUZZ_SEED
// (and FUZZ_PATH, both printed by fast-check when a property fails) replays a failing run.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { UdpClient, type Json } from '../../tools/udp-client.js';
import { udpRequestShape } from '../helpers/udp-oracle.js';
import { params, REQUEST_TIMEOUT_MS, UDP_MAX_BYTES, UDP_RUNS } from '../helpers/fuzz-run.js';
import { show, tally } from '../helpers/fuzz-http-checks.js';
import { checkUdp, datagramArb } from '../helpers/fuzz-udp.js';
import { openFuzzNode } from '../helpers/fuzz-node.js';

describe('fuzzing HTTP, websocket and UDP input against a child process', () => {
  const fuzzed = openFuzzNode();
  let udpPort: number;
  before(() => {
    ({ udpPort } = fuzzed);
  });

  it(`answers every well-formed UDP request exactly once, with a documented code, never a refusal longer than the datagram nor an answer over twice its size (${UDP_RUNS} runs)`, {
    timeout: 600_000,
  }, async (t) => {
    const c = await UdpClient.open();
    const seen = new Map<string, number>();
    let sent = 0;
    let probes = 0;
    try {
      await fc.assert(
        fc.asyncProperty(datagramArb, async (buf) => {
          let raw: string;
          if (udpRequestShape(buf, UDP_MAX_BYTES).code === 0) {
            // Well-formed: always answered (a refusal's short form fits in any such request).
            raw = await c.exchange(udpPort, buf, REQUEST_TIMEOUT_MS);
          } else {
            // Refused as it is read: answered only by a reply no longer than the datagram.
            const marker = `probe-${++probes}`;
            const probe = JSON.stringify({ action: 'get', rule_name: 'seg', app_name: 'p', seq: marker });
            const replies = await c.exchangeOrNone(udpPort, buf, probe, marker, REQUEST_TIMEOUT_MS);
            sent++;
            assert.ok(replies.length <= 1, `${replies.length} replies to ${buf.toString('utf8', 0, 300)}`);
            if (replies.length === 0) return void tally(seen, 'none');
            raw = replies[0];
            assert.ok(
              Buffer.byteLength(raw) <= buf.length,
              `a reply of ${Buffer.byteLength(raw)} bytes to ${buf.length}: ${raw}`,
            );
          }
          sent++;
          const limit = (JSON.parse(raw) as Json).code === 0 ? 2 * buf.length : buf.length;
          assert.ok(
            Buffer.byteLength(raw) <= limit,
            `a reply of ${Buffer.byteLength(raw)} bytes to ${buf.length}: ${raw}`,
          );
          checkUdp(buf, raw);
          tally(seen, String((JSON.parse(raw) as Json).code));
        }),
        params(UDP_RUNS),
      );
      t.diagnostic(`codes: ${show(seen)}`);
      if (UDP_RUNS >= 1000)
        for (const code of ['0', '-1', '-2', '-3', '-4', '-5', '-7', 'none'])
          assert.ok(seen.has(code), `no code ${code} in ${UDP_RUNS} datagrams: ${show(seen)}`);
      await sleep(200);
      assert.equal(c.received, sent, 'a datagram got more than one reply');
      // Still serving.
      const ok = await c.request(udpPort, { action: 'get', rule_name: 'rule', app_name: 'shop' });
      assert.equal(ok.code, 0, JSON.stringify(ok));
    } finally {
      c.close();
    }
  });
});
