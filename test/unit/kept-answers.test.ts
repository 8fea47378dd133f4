// The answers a process kept for idempotency keys, held for their replays (src/service/
// kept-answers.ts): given until the time its keeper set and never more than MOST_MS, never once
// that time has passed; at most MOST_IDS IDs in all, the oldest answers let go first; a copy,
// so a caller that changes its list changes no later replay.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeptAnswers, MOST_MS } from '../../src/service/kept-answers.js';

describe('kept answers', () => {
  it('gives a held answer until its time, and not from then on', () => {
    let now = 1000;
    const kept = new KeptAnswers(() => now);
    kept.hold('k', 'fp', ['7', '8'], 1500);
    assert.deepEqual(kept.find('k'), { fingerprint: 'fp', ids: ['7', '8'], until: 1500 });
    now = 1499.9;
    assert.ok(kept.find('k'));
    now = 1500;
    assert.equal(kept.find('k'), undefined);
    assert.equal(kept.size, 0);
  });

  it('holds no answer longer than MOST_MS, whatever time its keeper set', () => {
    let now = 0;
    const kept = new KeptAnswers(() => now);
    kept.hold('k', 'fp', ['1'], 86_400_000);
    now = MOST_MS - 1;
    assert.ok(kept.find('k'));
    now = MOST_MS;
    assert.equal(kept.find('k'), undefined);
  });

  it('lets the oldest answers go once more than its most IDs are held, and holds none larger than that', () => {
    const kept = new KeptAnswers(() => 0, 5);
    kept.hold('a', 'fp', ['1', '2'], 100);
    kept.hold('b', 'fp', ['3', '4'], 100);
    kept.hold('c', 'fp', ['5', '6'], 100);
    assert.equal(kept.find('a'), undefined);
    assert.deepEqual(kept.find('b')?.ids, ['3', '4']);
    assert.deepEqual(kept.find('c')?.ids, ['5', '6']);
    kept.hold('d', 'fp', ['1', '2', '3', '4', '5', '6'], 100);
    assert.equal(kept.find('d'), undefined);
    assert.equal(kept.size, 2);
  });

  it('holds a copy of the list it is given', () => {
    const kept = new KeptAnswers(() => 0);
    const ids = ['1', '2'];
    kept.hold('k', 'fp', ids, 100);
    ids.push('3');
    assert.deepEqual(kept.find('k')?.ids, ['1', '2']);
  });
});
