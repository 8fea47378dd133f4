// The clock policy (nextTick): a new tick starts at sequence 0, the same tick takes the next
// sequence, a used-up sequence waits for the next tick, a small step back waits, a large one
// is refused. And the movable clock tests use.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commit, ManualClock, nextTick, systemClock, type SequenceState } from '../../src/core/clock.js';

const MAX_SEQ = 3;
const BACK = 10;

describe('nextTick', () => {
  it('starts a new tick at sequence 0', () => {
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 2 }, 101, MAX_SEQ, BACK), { kind: 'issue', time: 101, seq: 0 });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ }, 5000, MAX_SEQ, BACK), {
      kind: 'issue',
      time: 5000,
      seq: 0,
    });
    // A fresh state (nothing issued yet) issues at once.
    assert.deepEqual(nextTick({ lastTime: -1, lastSeq: 0 }, 0, MAX_SEQ, BACK), { kind: 'issue', time: 0, seq: 0 });
  });

  it('takes the next sequence within the same tick', () => {
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: -1 }, 100, MAX_SEQ, BACK), {
      kind: 'issue',
      time: 100,
      seq: 0,
    });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 0 }, 100, MAX_SEQ, BACK), { kind: 'issue', time: 100, seq: 1 });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ - 1 }, 100, MAX_SEQ, BACK), {
      kind: 'issue',
      time: 100,
      seq: MAX_SEQ,
    });
  });

  it('waits for the next tick when the sequence is used up', () => {
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ }, 100, MAX_SEQ, BACK), { kind: 'wait', time: 101 });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ }, 100, MAX_SEQ, 0), { kind: 'wait', time: 101 });
  });

  it('waits out a small step back, up to and including the bound', () => {
    // Sequence left at lastTime: wait until the clock is back at lastTime.
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 1 }, 99, MAX_SEQ, BACK), { kind: 'wait', time: 100 });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 1 }, 100 - BACK, MAX_SEQ, BACK), { kind: 'wait', time: 100 });
    // Sequence used up at lastTime: wait for the tick after it.
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ }, 95, MAX_SEQ, BACK), { kind: 'wait', time: 101 });
  });

  it('refuses a step back beyond the bound', () => {
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 1 }, 100 - BACK - 1, MAX_SEQ, BACK), {
      kind: 'backwards',
      behindUnits: BACK + 1,
    });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: MAX_SEQ }, 0, MAX_SEQ, BACK), {
      kind: 'backwards',
      behindUnits: 100,
    });
    assert.deepEqual(nextTick({ lastTime: 100, lastSeq: 0 }, 99, MAX_SEQ, 0), { kind: 'backwards', behindUnits: 1 });
  });

  it('never issues a (time, seq) pair twice or out of order, whatever the clock does', () => {
    // Drive the policy with a wandering clock: every issued pair must be strictly greater than
    // the one before, and a wait must name a time at or after lastTime.
    let s = 12345;
    const rand = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s % n;
    };
    const state: SequenceState = { lastTime: 1000, lastSeq: MAX_SEQ };
    let clock = 1000;
    let last = [1000, MAX_SEQ];
    let issued = 0;
    let refused = 0;
    let waited = 0;
    for (let i = 0; i < 20000; i++) {
      clock += rand(7) - 2 - (rand(50) === 0 ? 15 : 0);
      const t = nextTick(state, clock, MAX_SEQ, BACK);
      if (t.kind === 'issue') {
        assert.ok(t.time > last[0] || (t.time === last[0] && t.seq > last[1]), `pair ${t.time}/${t.seq} after ${last}`);
        assert.equal(t.time, clock);
        commit(state, t);
        assert.deepEqual(state, { lastTime: t.time, lastSeq: t.seq });
        last = [t.time, t.seq];
        issued++;
      } else if (t.kind === 'wait') {
        assert.ok(t.time >= state.lastTime && t.time > clock - 1, `wait for ${t.time} at ${clock}`);
        waited++;
      } else {
        assert.ok(state.lastTime - clock > BACK);
        assert.equal(t.behindUnits, state.lastTime - clock);
        refused++;
      }
    }
    // The walk exercised every branch.
    assert.ok(issued > 1000 && waited > 100 && refused > 10, `issued ${issued}, waited ${waited}, refused ${refused}`);
  });
});

describe('clocks', () => {
  it('ManualClock reads what it was set to and moves only by hand', () => {
    const c = new ManualClock(1_000);
    assert.equal(c.now(), 1_000);
    assert.equal(c.now(), 1_000);
    c.advance(25);
    assert.equal(c.now(), 1_025);
    c.set(500);
    assert.equal(c.now(), 500);
    c.advance(-100);
    assert.equal(c.now(), 400);
  });

  it('systemClock reads the wall clock', () => {
    const before = Date.now();
    const t = systemClock.now();
    assert.ok(t >= before && t <= Date.now());
  });
});
