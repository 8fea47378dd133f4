// The per-source buckets (src/core/rate-bucket.ts) on a fake clock: IDs of finite tags and
// refusals per source, bursts, batches larger than the bucket, refunds, limits turned off, the
// bounded table; the source keys (an IPv6 /64); which tags have a finite space.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasFiniteSpace } from '../../src/core/finite-space.js';
import { SourceRates, sourceKey } from '../../src/core/rate-bucket.js';

/** A clock the test moves. */
function fakeClock(start = 1000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('SourceRates', () => {
  it('lets a source take its burst of finite IDs, then its rate, and says how long to wait', () => {
    const clock = fakeClock();
    const r = new SourceRates({ idsPerSecond: 10, refusalsPerSecond: 0, burstSeconds: 2, now: clock.now });
    for (let i = 0; i < 20; i++) assert.equal(r.admit('10.0.0.1', 1), 0, `ID ${i} of the burst`);
    const wait = r.admit('10.0.0.1', 1);
    assert.equal(wait, 100, 'one ID comes back every 100 ms');
    assert.equal(r.limitedBy, 'ids');
    clock.advance(99);
    assert.ok(r.admit('10.0.0.1', 1) > 0, 'not before');
    clock.advance(1);
    assert.equal(r.admit('10.0.0.1', 1), 0);
    assert.ok(r.admit('10.0.0.1', 1) > 0);
    // Another source has a bucket of its own.
    assert.equal(r.admit('10.0.0.2', 20), 0);
    // A refused request charged nothing: waiting is enough.
    clock.advance(10_000);
    for (let i = 0; i < 20; i++) assert.equal(r.admit('10.0.0.1', 1), 0, 'refilled, never above the burst');
    assert.ok(r.admit('10.0.0.1', 1) > 0, 'the bucket held no more than its burst');
  });

  it('serves a batch larger than the bucket once it is full, leaving the source in debt', () => {
    const clock = fakeClock();
    const r = new SourceRates({ idsPerSecond: 100, refusalsPerSecond: 0, burstSeconds: 1, now: clock.now });
    assert.equal(r.admit('a', 1), 0);
    assert.equal(r.admit('a', 1000), 10, 'waits until the bucket is full again (1 ID, 10 ms)');
    clock.advance(10);
    assert.equal(r.admit('a', 1000), 0, 'a full bucket serves the batch');
    // 900 in debt plus the one asked: 9.01 s at 100 a second.
    assert.equal(r.admit('a', 1), 9010);
    clock.advance(9010);
    assert.equal(r.admit('a', 1), 0, 'the long-run rate holds for any batch size');
  });

  it('gives back IDs of a request that took none, never above the burst', () => {
    const clock = fakeClock();
    const r = new SourceRates({ idsPerSecond: 5, refusalsPerSecond: 0, burstSeconds: 1, now: clock.now });
    assert.equal(r.admit('a', 5), 0);
    assert.ok(r.admit('a', 1) > 0);
    r.refund('a', 3);
    for (let i = 0; i < 3; i++) assert.equal(r.admit('a', 1), 0);
    assert.ok(r.admit('a', 1) > 0);
    r.refund('a', 100);
    for (let i = 0; i < 5; i++) assert.equal(r.admit('a', 1), 0);
    assert.ok(r.admit('a', 1) > 0, 'a refund fills the bucket at most');
    r.refund('never-seen', 5);
    assert.equal(r.size, 1, 'a refund to an unknown source adds nothing');
  });

  it('cuts a source off everything once its refusals are over their limit, until they refill', () => {
    const clock = fakeClock();
    const r = new SourceRates({ idsPerSecond: 10, refusalsPerSecond: 2, burstSeconds: 2, now: clock.now });
    for (let i = 0; i < 4; i++) assert.equal(r.refused('a'), true, `refusal ${i} may be answered`);
    assert.equal(r.refused('a'), false, 'the fifth goes unanswered');
    assert.equal(r.limitedBy, 'refusals');
    assert.equal(r.admit('a', 0), 500, 'a request taking nothing waits for one refusal (500 ms)');
    assert.equal(r.limitedBy, 'refusals');
    assert.equal(r.admit('a', 1), 500, 'a request for finite IDs too');
    assert.equal(r.admit('b', 1), 0, 'another source is served');
    // An unanswered refusal costs nothing: half a second brings one back.
    clock.advance(500);
    assert.equal(r.admit('a', 0), 0);
    assert.equal(r.refused('a'), true);
    assert.equal(r.refused('a'), false);
  });

  it('does nothing for a limit of 0, and adds no source it need not charge', () => {
    const clock = fakeClock();
    const off = new SourceRates({ idsPerSecond: 0, refusalsPerSecond: 0, burstSeconds: 10, now: clock.now });
    for (let i = 0; i < 1000; i++) {
      assert.equal(off.admit('a', 10_000), 0);
      assert.equal(off.refused('a'), true);
    }
    assert.equal(off.size, 0);
    const idsOnly = new SourceRates({ idsPerSecond: 1, refusalsPerSecond: 0, burstSeconds: 1, now: clock.now });
    assert.equal(idsOnly.admit('a', 0), 0, 'a request taking no finite ID');
    assert.equal(idsOnly.size, 0, 'is not written down');
    assert.equal(idsOnly.refused('a'), true);
    assert.equal(idsOnly.size, 0);
    assert.equal(idsOnly.admit('a', 1), 0);
    assert.equal(idsOnly.size, 1);
    const refusalsOnly = new SourceRates({ idsPerSecond: 0, refusalsPerSecond: 1, burstSeconds: 1, now: clock.now });
    assert.equal(refusalsOnly.admit('a', 1_000_000), 0);
    assert.equal(refusalsOnly.size, 0);
  });

  it('keeps at most maxSources sources, dropping the oldest first', () => {
    const clock = fakeClock();
    const r = new SourceRates({
      idsPerSecond: 1,
      refusalsPerSecond: 0,
      burstSeconds: 1,
      maxSources: 3,
      now: clock.now,
    });
    for (const s of ['a', 'b', 'c']) assert.equal(r.admit(s, 1), 0);
    for (const s of ['a', 'b', 'c']) assert.ok(r.admit(s, 1) > 0, `${s} spent its burst`);
    assert.equal(r.admit('d', 1), 0);
    assert.equal(r.size, 3);
    assert.equal(r.admit('a', 1), 0, 'the oldest was dropped: it starts over (and drops b)');
    assert.ok(r.admit('c', 1) > 0, 'c is still there');
    assert.equal(r.size, 3);
  });

  it('takes no time from a clock that stands still or steps back', () => {
    const clock = fakeClock();
    const r = new SourceRates({ idsPerSecond: 1, refusalsPerSecond: 0, burstSeconds: 1, now: clock.now });
    assert.equal(r.admit('a', 1), 0);
    clock.advance(-5000);
    assert.ok(r.admit('a', 1) > 0);
    clock.advance(1000);
    assert.ok(r.admit('a', 1) > 0, 'the bucket refills from where it was last seen, not before');
    clock.advance(5000);
    assert.equal(r.admit('a', 1), 0);
  });
});

describe('sourceKey', () => {
  it('keeps IPv4 addresses, IPv4-mapped ones and unknown ones whole', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '::ffff:127.0.0.2', '']) assert.equal(sourceKey(a), a);
  });

  it('limits an IPv6 address by its /64, however it is written', () => {
    const k = sourceKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd');
    assert.equal(k, '2001:db8:1:2::/64');
    for (const a of ['2001:db8:1:2::1', '2001:DB8:1:2:0:0:0:ffff', '2001:0db8:0001:0002::', '2001:db8:1:2::abcd%eth0'])
      assert.equal(sourceKey(a), k, a);
    assert.notEqual(sourceKey('2001:db8:1:3::1'), k);
    assert.equal(sourceKey('::1'), '0:0:0:0::/64');
    assert.equal(sourceKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(sourceKey('fe80::1'), 'fe80:0:0:0::/64');
  });
});

describe('hasFiniteSpace', () => {
  const DEFAULT = String(Number.MAX_SAFE_INTEGER);
  it('holds for rule tags and segment tags below the default limit (permuted, or lowered)', () => {
    assert.equal(hasFiniteSpace({ mode: 'rule', maxIdLimit: '9999' }), true);
    assert.equal(
      hasFiniteSpace({ mode: 'rule', maxIdLimit: '99999999999999999' }),
      true,
      'a rule always: its counter ends each period',
    );
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: '999999' }), true, 'a permuted tag of 6 digits');
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: '999999999999999' }), true, '15 digits');
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: String(2 ** 52 - 1) }), true, '52 bits');
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: '9007199254740990' }), true, 'one below the default');
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: '60' }), true);
  });

  it('does not hold for default or larger segment tags, nor for snowflake tags', () => {
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: DEFAULT }), false);
    assert.equal(
      hasFiniteSpace({ mode: 'segment', maxIdLimit: '9999999999999999' }),
      false,
      'a permuted tag of 16 digits',
    );
    assert.equal(hasFiniteSpace({ mode: 'segment', maxIdLimit: String(2n ** 63n - 1n) }), false);
    assert.equal(hasFiniteSpace({ mode: 'snowflake', maxIdLimit: '1' }), false);
  });
});
