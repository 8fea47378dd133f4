// Tinyid compatibility, pure part: the segment of a counter run (Tinyid's field meanings),
// the IDs a Tinyid client issues from it, the answers' bytes, Spring's Integer binding.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seqOf } from '../../src/core/layout.js';
import {
  bindInteger,
  BindError,
  idsOfSegment,
  longestRun,
  responseJson,
  segmentJson,
  segmentOfRun,
  segmentText,
} from '../../src/core/tinyid.js';

describe('Tinyid segments', () => {
  it('stride 1: (currentId, maxId] is the run, loadingId 20 % in', () => {
    const s = segmentOfRun({ stride: 1, offset: 0 }, [1, 100], 0.2);
    assert.deepEqual(s, { currentId: 0n, loadingId: 20n, maxId: 100n, delta: 1, remainder: 0 });
    assert.deepEqual(
      idsOfSegment(s),
      Array.from({ length: 100 }, (_, i) => BigInt(i + 1)),
    );
  });

  it("the client issues exactly the values of the run's counters, for any stride and offset", () => {
    for (const stride of [1, 2, 3, 10, 997]) {
      for (let offset = 0; offset < Math.min(stride, 4); offset++) {
        for (const run of [
          [1, 1],
          [1, 57],
          [1000, 1049],
          [2 ** 40, 2 ** 40 + 9],
        ] as [number, number][]) {
          const i = { stride, offset };
          const s = segmentOfRun(i, run, 0.2);
          const want: bigint[] = [];
          for (let k = run[0]; k <= run[1]; k++) want.push(seqOf(i, k));
          assert.deepEqual(idsOfSegment(s), want, JSON.stringify({ i, run }));
          assert.equal(s.delta, stride);
          assert.equal(s.remainder, offset);
          assert.equal(s.currentId % BigInt(stride), BigInt(offset), "Tinyid's client keeps currentId as it is");
          assert.ok(s.loadingId >= s.currentId && s.loadingId <= s.maxId);
        }
      }
    }
  });

  it("loadingId follows the tag's prefetch in integer arithmetic, as Tinyid's step * 20 / 100", () => {
    for (const width of [1, 4, 5, 99, 100, 101, 100000, 123457]) {
      assert.equal(
        segmentOfRun({ stride: 1, offset: 0 }, [1, width], 0.2).loadingId,
        BigInt(Math.floor((width * 20) / 100)),
      );
    }
    assert.equal(segmentOfRun({ stride: 2, offset: 1 }, [1, 10], 0.5).loadingId, 1n + 10n);
  });

  it('takes the longest run', () => {
    assert.deepEqual(
      longestRun([
        [1, 5],
        [10, 30],
        [40, 60],
      ]),
      [10, 30],
    );
    assert.deepEqual(longestRun([[7, 7]]), [7, 7]);
  });

  it("writes Tinyid's bytes", () => {
    const s = segmentOfRun({ stride: 2, offset: 1 }, [1, 10], 0.2);
    assert.equal(
      responseJson(segmentJson(s)),
      '{"data":{"maxId":21,"loadingId":5,"currentId":1,"delta":2,"remainder":1},"code":200,"message":""}',
    );
    assert.equal(segmentText(s), '1,5,21,2,1');
    assert.equal(responseJson('null', 5, 'token is error'), '{"data":null,"code":5,"message":"token is error"}');
    assert.equal(
      responseJson('null', 6, 'tag "a" is disabled'),
      '{"data":null,"code":6,"message":"tag \\"a\\" is disabled"}',
    );
  });
});

describe('bindInteger (Spring MVC)', () => {
  it('binds what Spring binds', () => {
    const cases: [string | undefined, number | null][] = [
      [undefined, null],
      ['', null],
      ['1', 1],
      ['+7', 7],
      ['-3', -3],
      ['007', 7],
      [' 1 2 ', 12],
      ['0x10', 16],
      ['#ff', 255],
      ['-0X10', -16],
      ['2147483647', 2147483647],
      ['-2147483648', -2147483648],
    ];
    for (const [raw, want] of cases) assert.equal(bindInteger(raw), want, String(raw));
  });

  it('refuses the rest as NumberFormatException', () => {
    for (const raw of ['abc', '1.5', '1e3', '2147483648', '+0x10', '0x', ' ']) {
      assert.throws(
        () => bindInteger(raw),
        (e: unknown) => e instanceof BindError && e.message.startsWith('For input string: "'),
        raw,
      );
    }
  });
});
