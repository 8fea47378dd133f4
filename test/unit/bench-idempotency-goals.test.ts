// The goals of bench:idempotency judged against the floor (bench/idempotency/goals.ts), and the
// report's floor rows and notes (bench/idempotency/report.ts) from made-up measurements.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idempotencyCases, type Case } from '../../bench/idempotency/cases.js';
import { goalNote, medianRatio, verdictOf } from '../../bench/idempotency/goals.js';
import type { Measured } from '../../bench/idempotency/load-run.js';
import { idempotencyReport } from '../../bench/idempotency/report.js';

const measure = { label: 'keyed, new key', what: 'a new key', goal: 0.8, clients: 50, floorOverIdmint: 0.7 };

describe('bench:idempotency goals', () => {
  it('takes the median of the per-round ratios', () => {
    assert.equal(medianRatio([{ rps: 50 }, { rps: 90 }, { rps: 60 }], [{ rps: 100 }, { rps: 100 }, { rps: 200 }]), 0.5);
  });

  it('passes a goal idmint reaches, whatever the floor', () => {
    assert.equal(verdictOf({ goal: 0.8, idmint: 0.8, floor: 0.5 }), 'PASS');
    assert.match(
      goalNote({ ...measure, idmint: 0.85, floor: 0.9 }),
      /^order global, keyed, new key: PASS, 0\.85x the unkeyed throughput at 50 clients \(goal 0\.8x\); the floor itself runs a new key at 0\.90x/,
    );
  });

  it('names the floor as the bound of a miss when the floor is below the goal too', () => {
    assert.equal(verdictOf({ goal: 0.8, idmint: 0.51, floor: 0.6 }), 'MISS (the floor is below the goal)');
    assert.equal(
      goalNote({ ...measure, idmint: 0.51, floor: 0.6 }),
      "order global, keyed, new key: MISS, 0.51x the unkeyed throughput at 50 clients (goal 0.8x); the floor itself runs a new key at 0.60x of its unkeyed take (0.70x idmint's unkeyed throughput): no implementation around the same Redis calls reaches 0.8x here",
    );
  });

  it("puts a miss on idmint's own work when the floor reaches the goal", () => {
    assert.equal(verdictOf({ goal: 0.9, idmint: 0.85, floor: 0.9 }), 'MISS (the floor reaches the goal)');
    assert.match(
      goalNote({ ...measure, idmint: 0.5, floor: 0.85 }),
      /MISS.*at or above the goal: what is missing is idmint's own work around the calls$/,
    );
  });
});

describe('bench:idempotency report with the floor', () => {
  const cases = idempotencyCases(50, false);
  const rpsOf = (c: Case): number => {
    const base = c.clients === 1 ? 1000 : 10_000;
    const factor: Partial<Record<Case['kind'], number>> = {
      incr: 0.8,
      floorUnkeyed: 1.25,
      floorFresh: 0.75,
      floorReplay: 1.2,
      fresh: 0.5,
      replay: 0.9,
    };
    return base * (factor[c.kind] ?? 1);
  };
  const one = (c: Case): Measured => ({
    rps: rpsOf(c),
    p50us: 1e6 / rpsOf(c),
    p99us: 2e6 / rpsOf(c),
    serverUsPerReq: 50,
    client: 30,
    redis: 10,
    other: 5,
  });
  const results = new Map(cases.map((c) => [c, [one(c), one(c), one(c)]]));
  const alone = { incr: 0.3, take: 10, inKey: 30, claim: 20, record: 15, replay: 4, replayInKey: 6 };
  const { rows, notes } = idempotencyReport({ rounds: 3, connections: 50 }, cases, results, alone);

  it('rows each floor case, its keyed ones over its unkeyed one', () => {
    const header = rows[0];
    const row = (name: string, clients: string) => rows.find((r) => r[0] === name && r[1] === clients)!;
    const extra = header.indexOf('extra µs');
    // 1e6/7500 - 1e6/12500 µs per request at 50 clients.
    assert.equal(row('floor, keyed, new key', '50')[extra], '53.3');
    assert.equal(row('floor, unkeyed', '50')[extra], '-');
    assert.ok(
      rows.some((r) => r[0] === 'Redis alone: the key’s call, kept key (replay, order global)' && r.at(-1) === '6.00'),
    );
  });

  it('notes each goal of order global against the floor', () => {
    assert.ok(
      notes.includes(
        "the floor's unkeyed request (one take per turn, nothing of idmint around it) ran at 1.25x idmint's unkeyed order-global throughput at 50 clients",
      ),
    );
    const fresh = notes.find((n) => n.startsWith('order global, keyed, new key:'))!;
    assert.match(
      fresh,
      /MISS, 0\.50x .* the floor itself runs a new key at 0\.60x of its unkeyed take \(0\.75x idmint's unkeyed throughput\): no implementation/,
    );
    const replay = notes.find((n) => n.startsWith('order global, keyed, replay:'))!;
    assert.match(replay, /^order global, keyed, replay: PASS, 0\.90x/);
    assert.ok(notes.some((n) => n.startsWith('order node, keyed, new key: 0.50x')));
  });
});
