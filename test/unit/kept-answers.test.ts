// The answers a process kept for idempotency keys, held for their replays (src/service/
// kept-answers.ts): given until the time its keeper set and never more than MOST_MS, never once
// that time has passed; at most MOST_IDS IDs in all, the oldest answers let go first; a copy,
// so a caller that changes its list changes no later replay; given only over the connection to
// Redis it was read from (its session), never once that connection closed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeptAnswers, MOST_MS } from '../../src/service/kept-answers.js';

/** The session of the connection the answers in these tests came over. */
const SESSION = 1;

describe('kept answers', () => {
  it('gives a held answer until its time, and not from then on', () => {
    let now = 1000;
    const kept = new KeptAnswers(() => now);
    kept.hold('k', 'fp', ['7', '8'], 1500, SESSION);
    assert.deepEqual(kept.find('k', SESSION), { fingerprint: 'fp', ids: ['7', '8'], until: 1500, session: SESSION });
    now = 1499.9;
    assert.ok(kept.find('k', SESSION));
    now = 1500;
    assert.equal(kept.find('k', SESSION), undefined);
    assert.equal(kept.size, 0);
  });

  it('holds no answer longer than MOST_MS, whatever time its keeper set', () => {
    let now = 0;
    const kept = new KeptAnswers(() => now);
    kept.hold('k', 'fp', ['1'], 86_400_000, SESSION);
    now = MOST_MS - 1;
    assert.ok(kept.find('k', SESSION));
    now = MOST_MS;
    assert.equal(kept.find('k', SESSION), undefined);
  });

  it('lets the oldest answers go once more than its most IDs are held, and holds none larger than that', () => {
    const kept = new KeptAnswers(() => 0, 5);
    kept.hold('a', 'fp', ['1', '2'], 100, SESSION);
    kept.hold('b', 'fp', ['3', '4'], 100, SESSION);
    kept.hold('c', 'fp', ['5', '6'], 100, SESSION);
    assert.equal(kept.find('a', SESSION), undefined);
    assert.deepEqual(kept.find('b', SESSION)?.ids, ['3', '4']);
    assert.deepEqual(kept.find('c', SESSION)?.ids, ['5', '6']);
    kept.hold('d', 'fp', ['1', '2', '3', '4', '5', '6'], 100, SESSION);
    assert.equal(kept.find('d', SESSION), undefined);
    assert.equal(kept.size, 2);
  });

  it('holds a copy of the list it is given', () => {
    const kept = new KeptAnswers(() => 0);
    const ids = ['1', '2'];
    kept.hold('k', 'fp', ids, 100, SESSION);
    ids.push('3');
    assert.deepEqual(kept.find('k', SESSION)?.ids, ['1', '2']);
  });

  it('gives an answer only over the connection it came over, and none read while no connection was ready', () => {
    const kept = new KeptAnswers(() => 0);
    kept.hold('k', 'fp', ['1'], 100, SESSION);
    assert.equal(kept.find('k', SESSION + 1), undefined, 'a new connection: the server may have lost the record');
    assert.equal(kept.find('k', SESSION), undefined, 'dropped once seen stale');
    assert.equal(kept.find('k', undefined), undefined);
    kept.hold('k', 'fp', ['1'], 100, undefined);
    assert.equal(kept.size, 0);
  });

  it('holds an answer for the time it is told at most, and none when told 0', () => {
    let now = 0;
    const briefly = new KeptAnswers(() => now, undefined, 50);
    briefly.hold('k', 'fp', ['1'], 100, SESSION);
    now = 49;
    assert.ok(briefly.find('k', SESSION));
    now = 50;
    assert.equal(briefly.find('k', SESSION), undefined);
    const never = new KeptAnswers(() => 0, undefined, 0);
    never.hold('k', 'fp', ['1'], 100, SESSION);
    assert.equal(never.size, 0);
  });
});
