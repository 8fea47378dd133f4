// The pieces that bound what gRPC Take calls hold and how they share the event loop: a block
// of IDs encoded straight into its message bytes is exactly what the schema's encoder writes;
// the process-wide budget holds and releases bytes, wakes the calls waiting for room and counts
// waits by bound; turns serve the calls that asked in order, one block per turn of the event loop.
import assert from 'node:assert/strict';
import { setImmediate } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { idsServiceEncodingTakes } from '../../src/api/grpc/proto.js';
import { TakeBudget, type Bound } from '../../src/api/grpc/take-budget.js';
import { encodeIdsBlock, encodeRunsBlock } from '../../src/api/grpc/take-encode.js';
import { idsFromRuns } from '../../src/core/id-runs.js';
import type { Packing } from '../../src/core/layout.js';
import type { Range } from '../../src/core/ranges.js';
import { BulkTurns } from '../../src/api/bulk-turns.js';

const { service, encode } = idsServiceEncodingTakes();

describe('encodeIdsBlock', () => {
  it('writes the bytes the schema writes, for decimal, formatted, long and non-ASCII IDs and any slice', () => {
    const cases: string[][] = [
      ['1', '22', '9223372036854775807', '18446744073709551615'],
      ['ORD-2026-000001', 'x', ''],
      ['a'.repeat(127), 'b'.repeat(128), 'c'.repeat(300)],
      ['é', 'ids-ü-1', '日本'],
      Array.from({ length: 10_000 }, (_, i) => String(40_000_000 + i)),
    ];
    for (const ids of cases) {
      for (const [start, end] of [
        [0, ids.length],
        [1, ids.length - 1],
        [ids.length - 1, ids.length],
      ]) {
        const got = encodeIdsBlock(ids, start, end, encode);
        assert.deepEqual(got, encode({ ids: ids.slice(start, end) }), `${ids[0]}.. [${start}, ${end})`);
      }
    }
  });

  it('is passed through by the service as it is, and a block object is still encoded', () => {
    const serialize = service.Take.responseSerialize as (v: object) => Buffer;
    const bytes = encodeIdsBlock(['7', '8'], 0, 2, encode);
    assert.equal(serialize(bytes), bytes);
    assert.deepEqual(serialize({ ids: ['7', '8'] }), bytes);
    const decoded = service.Take.responseDeserialize(bytes) as { ids: string[] };
    assert.deepEqual(decoded.ids, ['7', '8']);
  });
});

describe('encodeRunsBlock', () => {
  const MAX = 4 * 1024 * 1024;
  it('writes the bytes of the IDs of counter runs as their strings encode, for every packing', () => {
    const plain: Packing = { plain: true, step: 1, base: 0 };
    const cases: [Range[], Packing][] = [
      [[[1, 1]], plain],
      [[[0, 2000]], plain],
      [
        [
          [8, 12],
          [95, 105],
          [99_990, 100_020],
        ],
        plain,
      ],
      [[[9_999_999_999_990, 10_000_000_000_020]], plain],
      [
        [
          [0, 500],
          [997, 1003],
        ],
        { plain: false, step: 3, base: 7 },
      ],
      [[[1, 300]], { plain: false, step: 2 ** 22, base: 5 * 2 ** 22 + 17 }],
      [
        [
          [0, 40],
          [1000, 1040],
        ],
        { plain: false, step: 2 ** 40 + 999, base: 2 ** 41 },
      ],
      [[[1, 2]], { plain: false, step: 1000, base: 999 }],
    ];
    for (const [runs, p] of cases) {
      const count = runs.reduce((n, [a, b]) => n + b - a + 1, 0);
      const ids = idsFromRuns(runs, count, p);
      assert.deepEqual(
        encodeRunsBlock(runs, count, p, MAX),
        encode({ ids }),
        `${JSON.stringify(runs)} ${JSON.stringify(p)}`,
      );
    }
  });

  it('leaves IDs from 2^53 and blocks over the bound to the strings', () => {
    const p: Packing = { plain: false, step: 2 ** 40, base: 0 };
    assert.equal(encodeRunsBlock([[8191, 8192]], 2, p, MAX), undefined);
    assert.notEqual(encodeRunsBlock([[8190, 8191]], 2, p, MAX), undefined);
    const plain: Packing = { plain: true, step: 1, base: 0 };
    assert.equal(encodeRunsBlock([[1_000_000, 1_099_999]], 100_000, plain, 100_000 * 9 - 1), undefined);
    assert.equal(encodeRunsBlock([[1_000_000, 1_099_999]], 100_000, plain, 100_000 * 9)?.length, 100_000 * 9);
  });
});

describe('TakeBudget', () => {
  it('holds and releases bytes, reports them, and wakes the calls waiting for room once', () => {
    const held: number[] = [];
    const waits: Bound[] = [];
    const budget = new TakeBudget(100, { held: (b) => held.push(b), waited: (b) => waits.push(b) });
    assert.ok(budget.fits(100));
    budget.hold(60);
    assert.ok(budget.fits(40));
    assert.ok(!budget.fits(41));
    let woken = 0;
    const wake = () => woken++;
    budget.onRelease(wake);
    budget.waited('process');
    budget.release(10);
    assert.equal(woken, 1);
    budget.release(10);
    assert.equal(woken, 1, 'a wake is called at the next release only');
    budget.onRelease(wake);
    budget.forget(wake);
    budget.release(40);
    assert.equal(woken, 1, 'a forgotten wake is not called');
    assert.equal(budget.held, 0);
    assert.deepEqual(held, [60, 50, 40, 0]);
    assert.deepEqual(waits, ['process']);
  });
});

describe('BulkTurns', () => {
  it('serves callers in the order they asked, one per turn of the event loop', async () => {
    const turns = new BulkTurns(1);
    const served: [number, number][] = [];
    let loop = 0;
    let counting = true;
    const ticks = (async () => {
      while (counting) {
        await setImmediate();
        loop++;
      }
    })();
    await Promise.all([0, 1, 2, 3].map((i) => turns.next().then(() => served.push([i, loop]))));
    counting = false;
    await ticks;
    assert.deepEqual(
      served.map(([i]) => i),
      [0, 1, 2, 3],
    );
    const loops = served.map(([, l]) => l);
    assert.equal(new Set(loops).size, 4, `four callers served in ${new Set(loops).size} turns: ${loops}`);
  });
});
