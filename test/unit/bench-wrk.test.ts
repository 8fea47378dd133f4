// bench:wrk's reading of wrk's summary and its table: ratios taken within a round against the
// bare route of that round, the server's CPU per request, and the verdict on whether wrk was the limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clientVerdict,
  combineRounds,
  cpuSaved,
  failureKinds,
  parseWrkSummary,
  tableRows,
  WRK_DONE_SCRIPT,
  wrkFailures,
  type Measured,
} from '../../bench/wrk/summary.js';

const m = (name: string, round: number, rps: number, wrkCpu = 40, serverCpu = 100): Measured => ({
  name,
  round,
  rps,
  p99Ms: 1.5,
  serverCpu,
  wrkCpu,
  redisCpu: 0,
  otherCpu: 2,
});

describe('bench:wrk summary', () => {
  it("reads the line of the Lua done hook among wrk's own output", () => {
    const s = parseWrkSummary([
      'Running 10s test @ http://127.0.0.1:1/v1/id/bench',
      '{"wrk":1,"requests":500000,"durationUs":10000000,"bytes":1,"connect":0,"read":0,"write":0,"status":3,"timeout":1,"p50Us":900,"p99Us":2100,"maxUs":9000}',
      'Requests/sec:  50000.00',
    ]);
    assert.ok(s);
    assert.equal(s.requests, 500000);
    assert.equal(s.p99Us, 2100);
    assert.equal(wrkFailures(s), 4);
    assert.equal(failureKinds(s), 'non-2xx 3, timeout 1');
    assert.equal(parseWrkSummary(['Requests/sec: 1']), undefined);
    // the hook only: a `response` or `request` function would make wrk parse every answer or build every request
    assert.doesNotMatch(WRK_DONE_SCRIPT, /\b(response|request)\s*=\s*function/);
  });

  it('divides by the bare route of the same round and takes the median over rounds', () => {
    // The machine was twice as fast in round 2: the medians of req/s would say 1.0, yet node
    // ran at 0.9 of the bare route in every round.
    const runs = [
      m('bare', 1, 100),
      m('node', 1, 90),
      m('bare', 2, 200),
      m('node', 2, 180),
      m('bare', 3, 150),
      m('node', 3, 135),
      m('global', 3, 75),
    ];
    const rows = combineRounds(runs, ['bare', 'node', 'global', 'absent'], 'bare');
    assert.deepEqual(
      rows.map((r) => r.name),
      ['bare', 'node', 'global'],
    );
    const node = rows[1];
    assert.equal(node.rps, 135);
    assert.ok(Math.abs(node.ratio - 0.9) < 1e-12);
    assert.equal(node.ratios.length, 3);
    assert.equal(node.minRps, 90);
    assert.equal(node.maxRps, 180);
    // a whole core over 135 requests per second
    assert.ok(Math.abs(node.serverUsPerReq - 1e6 / 135) < 1e-6);
    assert.equal(rows[2].ratio, 0.5);
    assert.deepEqual(tableRows(rows)[2].slice(0, 5), ['node', '135', '90–180', '1.50', '0.900']);
  });

  it('says wrk was the limit when it used a whole core, whatever the wider case answered', () => {
    const free = combineRounds(
      [m('bare', 1, 100, 40), m('bare -c100', 1, 101, 45), m('node', 1, 95, 38)],
      ['bare', 'bare -c100', 'node'],
      'bare',
    );
    const v = clientVerdict(free, 'bare -c100');
    assert.equal(v.ok, true);
    assert.match(v.line, /at most 45%/);
    assert.match(v.line, /bare -c100 ran at 1\.010x the bare route/);
    const saturated = combineRounds(
      [m('bare', 1, 100, 99), m('bare -c100', 1, 100, 99)],
      ['bare', 'bare -c100'],
      'bare',
    );
    assert.equal(clientVerdict(saturated, 'bare -c100').ok, false);
  });

  it('gives the CPU per request one server spends more than another, round by round, median over rounds', () => {
    // A whole core each; routed answers fewer requests per second, so more µs per request:
    // round 1 1e6/50 - 1e6/100 = 10000, round 2 1e6/80 - 1e6/100 = 2500, round 3 1e6/100 - 1e6/100 = 0.
    const runs = [
      m('node', 1, 100),
      m('node routed', 1, 50),
      m('node', 2, 100),
      m('node routed', 2, 80),
      m('node', 3, 100),
      m('node routed', 3, 100),
    ];
    const line = cpuSaved(runs, 'node', 'node routed');
    assert.match(
      line,
      /^node routed − node: 2,500\.00 server µs\/req \(median over rounds; per round 10,000\.00 2,500\.00 0\.00\)$/,
    );
    assert.match(cpuSaved([m('node', 1, 100)], 'node', 'node routed'), /no round measured both/);
  });
});
