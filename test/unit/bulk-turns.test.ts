// The turns of bulk takes (src/api/bulk-turns.ts): while the process is also asked for single
// IDs, a window whose bulk work already spent its share puts the next turn off to the window's
// end; without single requests, or within the share, turns come at once. Driven by a clock the
// test moves and a scheduler that records how each turn was asked for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BulkTurns, WINDOW_MS, type TurnClock } from '../../src/api/bulk-turns.js';

/** A clock, a single-request count and a scheduler the test drives; `asked` lists how turns were scheduled. */
function fakeClock() {
  const pending: (() => void)[] = [];
  const state = { now: 1000, singles: 0, asked: [] as string[] };
  const clock: TurnClock = {
    now: () => state.now,
    singles: () => state.singles,
    immediate: (turn) => {
      state.asked.push('now');
      pending.push(turn);
    },
    later: (turn, ms) => {
      state.asked.push(`in ${ms} ms`);
      pending.push(turn);
    },
  };
  /** Runs the turns scheduled so far, in order. */
  const run = async () => {
    while (pending.length > 0) pending.shift()!();
    await Promise.resolve();
  };
  return { state, clock, run };
}

describe('bulk turns', () => {
  it('gives turns at once while no single request is served, however much bulk work was charged', async () => {
    const { state, clock, run } = fakeClock();
    const turns = new BulkTurns(0.2, clock);
    for (let i = 0; i < 5; i++) {
      const turn = turns.next();
      await run();
      await turn;
      turns.charge(WINDOW_MS);
    }
    assert.deepEqual(state.asked, ['now', 'now', 'now', 'now', 'now']);
    assert.equal(turns.deferred, 0);
  });

  it('puts a turn off to the window end once bulk work spent its share while singles are served', async () => {
    const { state, clock, run } = fakeClock();
    const turns = new BulkTurns(0.2, clock);
    let turn = turns.next();
    await run();
    await turn;
    state.singles++;
    turns.charge(0.2 * WINDOW_MS - 0.1);
    state.now += 1;
    turn = turns.next();
    await run();
    await turn;
    assert.deepEqual(state.asked, ['now', 'now'], 'within the share: at once');
    turns.charge(0.1);
    state.now += 1;
    turn = turns.next();
    await run();
    await turn;
    assert.deepEqual(state.asked.at(-1), `in ${WINDOW_MS - 2} ms`, 'the share spent: at the window end');
    assert.equal(turns.deferred, 1);
    // The next window: a new share, and the singles of the last window still count.
    state.now += WINDOW_MS;
    turn = turns.next();
    await run();
    await turn;
    assert.equal(state.asked.at(-1), 'now');
    turns.charge(WINDOW_MS);
    turn = turns.next();
    await run();
    await turn;
    assert.equal(state.asked.at(-1), `in ${WINDOW_MS} ms`);
  });

  it('runs bulk work unbounded again once a whole window passed with no single request', async () => {
    const { state, clock, run } = fakeClock();
    const turns = new BulkTurns(0.2, clock);
    const ask = async () => {
      const turn = turns.next();
      await run();
      await turn;
      return state.asked.at(-1);
    };
    /** A turn, a window's worth of bulk work charged in it, and how the next turn came. */
    const spendThenAsk = async () => {
      await ask();
      turns.charge(WINDOW_MS);
      return ask();
    };
    await ask();
    state.singles++;
    assert.match((await spendThenAsk()) ?? '', /^in /, 'singles in this window');
    state.now += WINDOW_MS;
    assert.match((await spendThenAsk()) ?? '', /^in /, 'singles in the last window');
    state.now += WINDOW_MS;
    assert.equal(await spendThenAsk(), 'now', 'none in the last window nor in this one');
  });

  it('never puts a turn off with a share of 1', async () => {
    const { state, clock, run } = fakeClock();
    const turns = new BulkTurns(1, clock);
    state.singles++;
    turns.charge(10 * WINDOW_MS);
    const turn = turns.next();
    await run();
    await turn;
    assert.deepEqual(state.asked, ['now']);
  });

  it('at the first look, tells that single requests are served only if any ever came', () => {
    const { state, clock } = fakeClock();
    assert.equal(new BulkTurns(0.05, clock).servingSingles(), false, 'a process that never served a single');
    state.singles = 3;
    assert.equal(new BulkTurns(0.05, clock).servingSingles(), true, 'a process that served some');
  });

  it('tells whether single requests are being served: at the first look, then while the count moved within two windows', () => {
    const { state, clock } = fakeClock();
    state.singles = 1;
    const turns = new BulkTurns(0.05, clock);
    assert.equal(turns.servingSingles(), true, 'the first look counts any single that ever came');
    state.now += 2 * WINDOW_MS - 0.1;
    assert.equal(turns.servingSingles(), true);
    state.now += 0.2;
    assert.equal(turns.servingSingles(), false, 'no single for two windows');
    state.singles++;
    state.now += 100;
    assert.equal(turns.servingSingles(), true, 'a single came since the last look');
    state.now += 2 * WINDOW_MS;
    assert.equal(turns.servingSingles(), false);
  });
});
