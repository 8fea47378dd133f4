// SourceLimits (src/api/source-limits.ts) on a fake clock and a table of tags: which requests
// are charged IDs (open tags with a finite space only), the 429 a limited HTTP request gets (its
// Retry-After in whole seconds, at least 1), what a dropped datagram counts, and which statuses
// count as refusals.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countsAsRefusal, SourceLimits, type LimitedTag } from '../../src/api/source-limits.js';

const tag = (t: Partial<LimitedTag>): LimitedTag => ({
  mode: 'segment',
  maxIdLimit: String(Number.MAX_SAFE_INTEGER),
  nodeBlock: 1000,
  ...t,
});
const TAGS: Record<string, LimitedTag> = {
  rule: tag({ mode: 'rule', maxIdLimit: '9999' }),
  locked: tag({ mode: 'rule', maxIdLimit: '9999', tokenHashes: new Set(['h']) }),
  unlocked: tag({ mode: 'rule', maxIdLimit: '9999', tokenHashes: new Set() }),
  perm: tag({ maxIdLimit: '999999' }),
  seg: tag({}),
  sf: tag({ mode: 'snowflake' }),
};

function setup(finiteIdsPerSecond: number, refusalsPerSecond: number) {
  let t = 0;
  const limited: string[] = [];
  const errors: string[] = [];
  const warnings: unknown[] = [];
  const limits = new SourceLimits(
    { finiteIdsPerSecond, refusalsPerSecond, burstSeconds: 1, now: () => t },
    { peek: (n) => TAGS[n], get: async (n) => TAGS[n] },
    {
      limited: { inc: (l) => limited.push(`${l.transport} ${l.limit}`) },
      errors: { inc: (l) => errors.push(`${l.transport} ${l.code}`) },
    },
    { warn: (o: unknown) => warnings.push(o) },
  );
  return { limits, limited, errors, warnings, advance: (ms: number) => (t += ms) };
}

describe('SourceLimits', () => {
  it('charges IDs of open tags whose space is finite, never of a tag with tokens', () => {
    const { limits } = setup(10, 0);
    assert.equal(limits.chargeOf(TAGS.rule, 3), 3);
    assert.equal(limits.chargeOf(TAGS.unlocked, 3), 3, 'a tag whose tokens were all revoked is open');
    assert.equal(limits.chargeOf(TAGS.perm, 3), 3);
    assert.equal(limits.chargeOf(TAGS.locked, 3), 0);
    assert.equal(limits.chargeOf(TAGS.seg, 3), 0);
    assert.equal(limits.chargeOf(TAGS.sf, 3), 0);
    assert.equal(limits.chargeOf(undefined, 3), 0, 'a tag that does not exist takes nothing');
    assert.equal(setup(0, 10).limits.chargeOf(TAGS.rule, 3), 0, 'no limit: nothing charged');
  });

  it('answers an HTTP request over a limit 429 LIMIT_EXCEEDED with Retry-After, counted and logged once a second', () => {
    const { limits, limited, errors, warnings, advance } = setup(2, 0);
    assert.equal(limits.admit('10.0.0.1', 2, 'http'), undefined);
    const e = limits.admit('10.0.0.1', 1, 'leaf');
    assert.equal(e?.code, 'LIMIT_EXCEEDED');
    assert.equal(e?.status, 429);
    assert.equal(e?.retryAfter, 1, '500 ms rounds up to a second');
    assert.match(e!.message, /finite ID space faster than 2 a second; retry in 1 s/);
    assert.deepEqual(limited, ['leaf ids']);
    assert.deepEqual(errors, [], 'the error handler counts the 429 where it is answered');
    limits.admit('10.0.0.1', 1, 'http');
    assert.equal(warnings.length, 1, 'one log line a second');
    advance(1000);
    assert.equal(limits.admit('10.0.0.1', 2, 'http'), undefined);
    // A batch larger than the bucket, from a full bucket, leaves it 98 in debt: 49.5 s.
    advance(1000);
    assert.equal(limits.admit('10.0.0.1', 100, 'http'), undefined);
    assert.equal(limits.admit('10.0.0.1', 1, 'http')?.retryAfter, 50);
  });

  it('drops a datagram over a limit, counting it as LIMIT_EXCEEDED; an unanswered refusal only as limited', () => {
    const { limits, limited, errors } = setup(1, 1);
    assert.equal(limits.admitDatagram('10.0.0.2', 1), true);
    assert.equal(limits.admitDatagram('10.0.0.2', 1), false);
    assert.deepEqual(errors, ['udp LIMIT_EXCEEDED']);
    assert.equal(limits.refusedDatagram('10.0.0.2'), true);
    assert.equal(limits.refusedDatagram('10.0.0.2'), false);
    assert.deepEqual(limited, ['udp ids', 'udp refusals']);
    assert.deepEqual(errors, ['udp LIMIT_EXCEEDED'], 'the refusal keeps its own code, counted where it was made');
    assert.equal(limits.admitDatagram('10.0.0.2', 0), false, 'over its refusals, a source is refused everything');
    assert.equal(limits.admitDatagram('10.0.0.3', 0), true);
  });

  it('gives IDs back, and charges HTTP refusals without counting a 429 for them', () => {
    const { limits, limited } = setup(1, 1);
    assert.equal(limits.admit('a', 1, 'http'), undefined);
    limits.refund('a', 1);
    assert.equal(limits.admit('a', 1, 'http'), undefined);
    limits.refusedRequest('a');
    limits.refusedRequest('a');
    assert.deepEqual(limited, []);
    assert.match(limits.admit('a', 0, 'tinyid')!.message, /more than 1 refused requests a second/);
    assert.deepEqual(limited, ['tinyid refusals']);
  });

  it('limits IPv6 sources by their /64', () => {
    const { limits } = setup(1, 0);
    assert.equal(limits.admit('2001:db8::1', 1, 'http'), undefined);
    assert.ok(limits.admit('2001:db8::2', 1, 'http'), 'another address of the /64 shares its bucket');
    assert.equal(limits.admit('2001:db8:0:1::1', 1, 'http'), undefined);
  });
});

describe('countsAsRefusal', () => {
  it('counts client errors but those of a tag state, a reused key and a limit', () => {
    for (const s of [400, 401, 403, 404, 408, 413, 415, 431]) assert.equal(countsAsRefusal(s), true, String(s));
    for (const s of [200, 201, 409, 422, 429, 500, 503]) assert.equal(countsAsRefusal(s), false, String(s));
  });
});
