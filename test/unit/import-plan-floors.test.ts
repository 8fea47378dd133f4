// The floors of an import on interleaved counters (stride, offset), against sequences written
// independently of the code under test: the next value is the first above the old one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ruleFloor } from '../../src/core/import-plan-rules.js';
import { segmentFloor } from '../../src/core/import-plan-segments.js';
import { specFromCreate, type TagSpec } from '../../src/core/tag-spec.js';
import { rng, SEED } from '../../tools/prng.js';
import { specOfMode } from '../../src/core/tag-kinds.js';

describe('floors of interleaved counters', () => {
  const interleaved = (body: Record<string, unknown>, stride: number, offset: number) =>
    ({ ...specFromCreate(body), stride, offset }) as TagSpec;

  it('the counter after a segment floor writes the first sequence value above the old maximum', () => {
    const rand = rng(SEED);
    for (let n = 0; n < 5000; n++) {
      const stride = rand.int(1, 9);
      const offset = rand.int(0, stride - 1);
      const maxId = BigInt(rand.int(0, 1e12));
      const f = BigInt(segmentFloor(interleaved({ tag: 't' }, stride, offset), maxId));
      const seq = (k: bigint) => k * BigInt(stride) + BigInt(offset);
      assert.ok(seq(f + 1n) > maxId, `stride ${stride} offset ${offset} max ${maxId}: floor ${f}`);
      assert.ok(f === 0n || seq(f) <= maxId, `stride ${stride} offset ${offset} max ${maxId}: floor ${f} skips values`);
    }
  });

  it('the sequence after a rule floor writes the first counter of the residue above the saved one', () => {
    const rand = rng(SEED + 1);
    for (let n = 0; n < 5000; n++) {
      const stride = rand.int(1, 5);
      const offset = rand.int(0, stride - 1);
      const min = rand.int(0, 20);
      const max = min + rand.int(stride, 500);
      const spec = interleaved(
        { tag: 'r', mode: 'rule', template: '{counter:4}', min_counter: min, max_counter: max },
        stride,
        offset,
      );
      const saved = rand.int(0, max + 10);
      const f = ruleFloor(specOfMode(spec, 'rule', 'the test'), saved);
      // Counters of the residue from min on, written independently of the code under test.
      const values: number[] = [];
      for (let v = min; v <= max; v++) if (v % stride === offset) values.push(v);
      assert.equal(
        f,
        values.filter((v) => v <= saved).length,
        `stride ${stride} offset ${offset} min ${min} saved ${saved}`,
      );
    }
  });
});
