// suite: single — malformed input at the transports, long (npm run fuzz)
// Fuzzing the websocket stream of a real idmint child process (real Redis and MySQL):
// randomised malformed frames (fast-check). Every reply must be an error frame or a documented
// close code, never a hang or an INTERNAL, while a bystander's takes keep working; and the
// process is still alive and healthy at the end.
//
// FUZZ_RUNS scales the number of generated cases (`npm run fuzz` runs many more); FUZZ_SEED
// (and FUZZ_PATH, both printed by fast-check when a property fails) replays a failing run.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { params, REQUEST_TIMEOUT_MS, WS_RUNS } from '../helpers/fuzz-run.js';
import { show, tally } from '../helpers/fuzz-http-checks.js';
import { CLOSE_CODES, StreamProbe, wsActionArb } from '../helpers/fuzz-stream.js';
import { openFuzzNode } from '../helpers/fuzz-node.js';

describe('fuzzing HTTP, websocket and UDP input against a child process', () => {
  const fuzzed = openFuzzNode();
  let url: string;
  before(() => {
    ({ url } = fuzzed);
  });

  it(`answers random websocket frames with documented errors or close codes (${WS_RUNS} sessions)`, {
    timeout: 600_000,
  }, async (t) => {
    const seen = new Map<string, number>();
    // A bystander: its takes keep working whatever the fuzzed sockets do.
    const bystander = await StreamProbe.open(url);
    let bystanderReq = 1000;
    await fc.assert(
      fc.asyncProperty(fc.array(wsActionArb, { minLength: 1, maxLength: 12 }), async (actions) => {
        const probes: StreamProbe[] = [await StreamProbe.open(url)];
        const cur = () => probes[probes.length - 1];
        const reopen = async () => {
          try {
            probes.push(await StreamProbe.open(url));
          } catch (err) {
            assert.fail(`a stream socket could not be opened: ${(err as Error).message}`);
          }
        };
        try {
          for (const a of actions) {
            if (a.t === 'text' || a.t === 'binary') cur().send(a.data);
            else if (a.t === 'oversize') {
              cur().send(JSON.stringify({ op: 'take', req: 1, tag: 'seg', count: 1, pad: 'x'.repeat(17 * 1024) }));
              await Promise.race([cur().closedP, sleep(REQUEST_TIMEOUT_MS)]);
              assert.equal(cur().closed?.code, 1009, 'a control frame over 16 KiB closes the socket with 1009');
              await reopen();
            } else if (a.t === 'terminate') {
              cur().ws.terminate();
              await reopen();
            } else if (a.t === 'reopen') {
              await cur().settle();
              await cur().close();
              await reopen();
            } else if (a.t === 'flood') {
              // More takes in flight than a socket may hold (16 by default): the rest are refused.
              for (let i = 0; i < a.n; i++)
                cur().send(
                  JSON.stringify({
                    op: 'take',
                    req: 100 + i,
                    tag: 'seg',
                    count: 50_000,
                    block: 1000,
                    format: 'binary',
                  }),
                );
            } else {
              // Rapid open/close: sockets that send a take and vanish at once.
              for (let i = 0; i < a.n; i++) {
                const s = await StreamProbe.open(url);
                s.send(JSON.stringify({ op: 'take', req: i, tag: 'seg', count: 100_000, format: 'binary' }));
                if (i % 2) s.ws.terminate();
                else s.ws.close();
              }
            }
          }
          await cur().settle();
          for (const [i, p] of probes.entries()) {
            assert.deepEqual(
              p.problems,
              [],
              `socket ${i}: frames off the protocol: ${p.problems.slice(0, 3).join('; ')}`,
            );
            for (const [k, n] of p.seen) seen.set(k, (seen.get(k) ?? 0) + n);
            if (p.closed) tally(seen, `close ${p.closed.code}`);
            if (p.closed && p.closed.code !== 1005 && p.closed.code !== 1006 && p.closed.code !== 1000) {
              assert.ok(CLOSE_CODES.has(p.closed.code), `socket ${i} closed with ${p.closed.code} ${p.closed.reason}`);
            }
          }
          const last = cur();
          if (!last.closed)
            assert.equal(
              last.ended,
              last.sent,
              `${last.sent} messages sent, ${last.ended} answered with done or error`,
            );
          // The bystander still gets its IDs.
          const before = bystander.ended;
          bystander.send(JSON.stringify({ op: 'take', req: bystanderReq++, tag: 'seg', count: 5, format: 'json' }));
          await bystander.settle();
          assert.equal(bystander.ended, before + 1, 'the bystander got no answer');
          assert.deepEqual(bystander.problems, [], 'bystander');
        } finally {
          for (const p of probes) if (!p.closed) p.ws.terminate();
        }
      }),
      // No shrinking: a shrink step can wait out the reply timeout, and the session is short anyway.
      { ...params(WS_RUNS), endOnFailure: true },
    );
    t.diagnostic(`replies: ${show(seen)}`);
    if (WS_RUNS >= 100)
      for (const k of ['done', 'error INVALID_ARGUMENT', 'error LIMIT_EXCEEDED', 'close 1009'])
        assert.ok(seen.has(k), `no ${k} in ${WS_RUNS} sessions: ${show(seen)}`);
    assert.equal(bystander.closed, undefined, 'the bystander socket was closed');
    await bystander.close();
  });
});
