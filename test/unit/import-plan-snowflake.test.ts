// Planning an import from Leaf's snowflake mode (pure): the tag created lies above every ID
// Leaf could have issued by the import (any worker id, any sequence start, a Leaf clock ahead
// by up to the allowance), for every idmint worker id and clock from the import on; a re-run
// changes nothing; everything else is refused with its reason.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_CLOCK_SKEW_MS,
  LEAF_TWEPOCH_MS,
  leafMaxId,
  planLeafSnowflake,
  smallestIdFrom,
  type LeafBits,
} from '../../src/core/import-plan-snowflake.js';
import type { Current, CurrentTag } from '../../src/core/import-plan.js';
import { encode, PRESETS, type SnowflakeLayout } from '../../src/core/snowflake-layout.js';
import { specFromCreate } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';
import { specOfMode, type TagSpec } from '../../src/core/tag-kinds.js';
import { none, refusal } from '../helpers/import-plan-current.js';

const layoutOf = (s: TagSpec) => specOfMode(s, 'snowflake', 'the test').snowflake;

const LEAF: LeafBits = { timeBits: 41, workerBits: 10, seqBits: 12 };

/** Leaf's SnowflakeIDGenImpl: (ms - twepoch) << (worker + seq bits) | worker << seq bits | seq. */
function leafId(twepoch: number, bits: LeafBits, ms: number, worker: number, seq: number): bigint {
  return (
    (BigInt(ms - twepoch) << BigInt(bits.workerBits + bits.seqBits)) |
    (BigInt(worker) << BigInt(bits.seqBits)) |
    BigInt(seq)
  );
}

function withTag(body: Record<string, unknown>, epoch = 4): Current {
  const spec = specFromCreate(body);
  const t: CurrentTag = {
    spec,
    epoch,
    counterFloor: 0,
    marks: new Map(),
    lowestLive: new Map(),
    tokenHashes: new Set(),
  };
  return { live: new Map([[spec.tag, t]]), deleted: new Set() };
}

describe('planning a Leaf snowflake import', () => {
  const now = Date.now();

  it("creates a snowflake tag with Leaf's split and an epoch a day and a millisecond before twepoch", () => {
    const plan = planLeafSnowflake({ tag: 'order' }, none, now);
    assert.equal(plan.system, 'leaf-snowflake');
    assert.equal(plan.tags.length, 1);
    const [t] = plan.tags;
    assert.equal(t.mode, 'snowflake');
    assert.equal(t.action, 'create');
    const l = layoutOf(t.spec);
    assert.deepEqual([l.unit, l.timeBits, l.workerBits, l.seqBits], ['ms', 41, 10, 12]);
    assert.equal(l.epochMs, LEAF_TWEPOCH_MS - DEFAULT_CLOCK_SKEW_MS - 1);
    assert.equal(t.oldMax, String(leafMaxId(LEAF_TWEPOCH_MS, LEAF, now + DEFAULT_CLOCK_SKEW_MS)));
    assert.ok(t.notes.some((n) => n.includes('runs out at 2080-')));
    assert.ok(t.notes.some((n) => n.includes('2^53-1')));
  });

  it("idmint's default layout (epoch 2020) would lie below Leaf's IDs of today: the plan's does not", () => {
    const leafNow = leafId(LEAF_TWEPOCH_MS, LEAF, now, 0, 0);
    assert.ok(
      smallestIdFrom(PRESETS.snowflake, now + 365 * 86_400_000) < leafNow,
      'the default layout a year from now',
    );
    const l = layoutOf(planLeafSnowflake({ tag: 'order' }, none, now).tags[0].spec);
    assert.ok(encode(l, now - l.epochMs, 0, 0) > leafId(LEAF_TWEPOCH_MS, LEAF, now, 1023, 4095));
  });

  it('every ID idmint can issue from now on lies above every ID Leaf issued with its clock up to the allowance ahead (random layouts, twepochs, workers, sequences)', () => {
    const r = rng(SEED);
    for (let i = 0; i < 2000; i++) {
      const workerBits = r.int(1, 12);
      const seqBits = r.int(1, r.pick([3, 22 - workerBits]));
      const timeBits = r.int(41, Math.min(50, 63 - workerBits - seqBits));
      const bits = { timeBits, workerBits, seqBits };
      const twepoch = r.int(Date.UTC(2005, 0, 1), now - 86_400_000);
      const skew = r.pick([0, 1, 1000, 3_600_000, DEFAULT_CLOCK_SKEW_MS]);
      const plan = planLeafSnowflake(
        { tag: 't', twepochMs: twepoch, layout: bits, clockSkewMs: skew, force: true },
        none,
        now,
      );
      const l: SnowflakeLayout = layoutOf(plan.tags[0].spec);
      // Leaf: its clock anywhere from twepoch to now + skew, any worker, any sequence (a new
      // ms starts at 0..99, the sequence runs to its mask within a ms).
      const leafMs = r.pick([now + skew, now + skew - r.int(0, 1000), r.int(twepoch, now + skew)]);
      const leaf = leafId(
        twepoch,
        bits,
        leafMs,
        r.int(0, 2 ** workerBits - 1),
        r.pick([0, r.int(0, 99), 2 ** seqBits - 1]),
      );
      // idmint: any of its clocks from now on, any worker id it leases, any sequence.
      const idmintMs = r.pick([now, now + r.int(0, 10 ** 9)]);
      const mine = encode(
        l,
        idmintMs - l.epochMs,
        r.pick([0, r.int(0, 2 ** workerBits - 1)]),
        r.pick([0, r.int(0, 2 ** seqBits - 1)]),
      );
      assert.ok(
        mine > leaf,
        `case ${i} (seed ${SEED}): idmint ${mine} at ${idmintMs} is not above Leaf ${leaf} at ${leafMs}, bits ${JSON.stringify(bits)}`,
      );
      assert.ok(BigInt(plan.tags[0].oldMax) >= leaf);
    }
  });

  it('a re-run finds the tag above Leaf and leaves it as it is', () => {
    const created = planLeafSnowflake({ tag: 'evt', twepochMs: 1_600_000_000_000 }, none, now - 3_600_000).tags[0].spec;
    const body = {
      tag: 'evt',
      mode: 'snowflake',
      epoch: layoutOf(created).epochMs,
      time_bits: 41,
      worker_bits: 10,
      seq_bits: 12,
    };
    const plan = planLeafSnowflake({ tag: 'evt', twepochMs: 1_600_000_000_000 }, withTag(body), now);
    assert.equal(plan.tags[0].action, 'unchanged');
    assert.equal(plan.tags[0].epoch, 4);
    assert.equal(layoutOf(plan.tags[0].spec).epochMs, layoutOf(created).epochMs);
  });

  it("refuses an idmint snowflake tag whose IDs lie below Leaf's (idmint's default epoch), naming both", () => {
    const msg = refusal(() => planLeafSnowflake({ tag: 'evt' }, withTag({ tag: 'evt', mode: 'snowflake' }), now));
    assert.match(
      msg,
      /tag "evt" exists in idmint as a snowflake tag \(epoch 2020-01-01T00:00:00.000Z, layout 41\/10\/12\) whose smallest ID from now on, \d+, is not above \d+/,
    );
    assert.match(msg, /import under another --tag/);
    // A larger allowance than the tag was created with needs an earlier epoch: refused too.
    const made = layoutOf(planLeafSnowflake({ tag: 'evt', clockSkewMs: 1000 }, none, now).tags[0].spec);
    const cur = withTag({ tag: 'evt', mode: 'snowflake', epoch: made.epochMs });
    assert.equal(planLeafSnowflake({ tag: 'evt', clockSkewMs: 1000 }, cur, now).tags[0].action, 'unchanged');
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'evt', clockSkewMs: 7 * 86_400_000 }, cur, now)),
      /is not above/,
    );
  });

  it('refuses a name idmint has with another mode, or deleted', () => {
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'seg' }, withTag({ tag: 'seg' }), now)),
      /tag "seg" exists in idmint as a segment tag; Leaf's snowflake .* needs a snowflake tag/,
    );
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'gone' }, { live: new Map(), deleted: new Set(['gone']) }, now)),
      /tag "gone" was deleted in idmint/,
    );
  });

  it('refuses bad options, each with its reason, all at once', () => {
    const msg = refusal(() =>
      planLeafSnowflake(
        { tag: 'a b', twepochMs: -5, layout: { timeBits: 45, workerBits: 10, seqBits: 12 }, clockSkewMs: -1 },
        none,
        now,
      ),
    );
    assert.match(msg, /--tag "a b" is not a valid idmint tag name/);
    assert.match(msg, /twepoch must be milliseconds since 1970/);
    assert.match(msg, /clock-skew allowance must be a whole number/);
    assert.match(msg, /layout 45\/10\/12: time_bits \+ worker_bits \+ seq_bits must not exceed 63/);
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'a', twepochMs: now + 2 * DEFAULT_CLOCK_SKEW_MS }, none, now)),
      /no Leaf node issued under it/,
    );
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'a', twepochMs: 1000 }, none, now)),
      /lies before 1970/,
    );
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'a', layout: { timeBits: 30, workerBits: 10, seqBits: 12 } }, none, now)),
      /has outgrown the layout's 30 time bits/,
    );
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'a', layout: { timeBits: 41, workerBits: 0, seqBits: 12 } }, none, now)),
      /worker_bits must be/,
    );
  });

  it('refuses a layout that runs out within 10 years unless forced, as tag creation does', () => {
    const bits = { timeBits: 39, workerBits: 12, seqBits: 12 };
    assert.match(
      refusal(() => planLeafSnowflake({ tag: 'a', layout: bits }, none, now)),
      /runs out at .* send "force": true/,
    );
    const plan = planLeafSnowflake({ tag: 'a', layout: bits, force: true }, none, now);
    assert.ok(plan.tags[0].notes.some((n) => / years from now/.test(n)));
  });
});
