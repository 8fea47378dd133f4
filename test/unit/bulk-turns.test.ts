// The turns of bulk takes (src/api/bulk-turns.ts): while the process is also asked for single
// IDs, a window whose bulk work already spent its share puts the next turn off to the window's
// end; without single requests, or within the share, turns come at once. Driven by a clock the
// test moves and a scheduler that records how each turn was asked for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BulkTurns, WINDOW_MS, type TurnClock } from '../../src/api/bulk-turns.js';
import { params, RUNS } from '../helpers/fuzz-run.js';

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
    busy: () => 0,
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
    // The put-off turn ran (here before its time by the clock, as a timer may): it began the
    // next window at the last one's end, 1005. In it: a new share, and the singles of the last
    // window still count.
    state.now += WINDOW_MS;
    turn = turns.next();
    await run();
    await turn;
    assert.equal(state.asked.at(-1), 'now');
    turns.charge(WINDOW_MS);
    turn = turns.next();
    await run();
    await turn;
    assert.equal(state.asked.at(-1), `in ${WINDOW_MS - 2} ms`, 'to the end of the window that began at 1005');
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

describe('bulk turns under a take that never stops', () => {
  /**
   * One take asking turn after turn for `windows` windows' time, each turn timed work of `cost`
   * ms and a message written that costs the loop `hidden` ms more that no timer sees (HTTP/2's
   * send of it, the store's reply), while single requests come at `perMs` a millisecond (none:
   * 0); the clock and the loop's busy time move by the work and the clock by each put-off.
   * Answers when each turn's work began.
   */
  async function drive(
    turns: BulkTurns,
    state: { now: number; busy: number; perMs: number },
    pending: { turn: () => void; ms: number }[],
    cost: number,
    hidden: number,
    windows: number,
  ): Promise<number[]> {
    const began: number[] = [];
    const until = state.now + windows * WINDOW_MS;
    while (state.now < until) {
      const turn = turns.next();
      const { turn: run, ms } = pending.shift()!;
      state.now += Math.max(ms, 0);
      run();
      await turn;
      began.push(state.now);
      turns.timed(() => {
        state.now += cost;
        state.busy += cost;
      });
      turns.sent();
      state.now += hidden;
      state.busy += hidden;
    }
    return began;
  }

  function takeTurns(share: number, perMs: number) {
    const pending: { turn: () => void; ms: number }[] = [];
    const state = { now: 1000, busy: 0, perMs };
    const clock: TurnClock = {
      now: () => state.now,
      singles: () => Math.floor(state.now * state.perMs),
      immediate: (turn) => pending.push({ turn, ms: 0 }),
      later: (turn, ms) => pending.push({ turn, ms }),
      busy: () => state.busy,
    };
    return { turns: new BulkTurns(share, clock), state, pending };
  }

  /**
   * The work of the turns that began from the third window on (`full` ms each) is within the
   * share of the windows it spans and a turn over each; `over` scales the share where each turn
   * is charged less than it costs (an estimate below the cost).
   */
  function check(began: number[], full: number, share: number, over = 1): void {
    // Until a window saw singles come, bulk work runs unbounded.
    const counted = began.filter((t) => t >= began[0] + 2 * WINDOW_MS);
    // Windows last WINDOW_MS or more, so the span from the first turn's start to the last one's
    // end meets at most span / WINDOW_MS + 2 of them, each with the share and at most one turn
    // past it.
    const span = counted.at(-1)! + full - counted[0];
    const bound = (share * WINDOW_MS * over + full) * (Math.floor(span / WINDOW_MS) + 2);
    const work = counted.length * full;
    assert.ok(
      work <= bound + 1e-9,
      `${work.toFixed(3)} ms of bulk work in ${span.toFixed(3)} ms, more than ${bound.toFixed(3)} (share ${share}, a turn ${full} ms)`,
    );
  }

  it('holds bulk work to the share of each window and one turn over it, whatever the cost of a turn', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.01, max: 0.5, noNaN: true }),
        fc.double({ min: 0.005, max: 2, noNaN: true }),
        fc.constantFrom(0.5, 4, 40),
        async (share, cost, perMs) => {
          const { turns, state, pending } = takeTurns(share, perMs);
          turns.messageCostMs = 0;
          // The estimate stays 0: every window has singles, so no message is measured.
          check(await drive(turns, state, pending, cost, 0, 40), cost, share);
          assert.equal(turns.messageCostMs, 0);
        },
      ),
      params(RUNS / 20),
    );
  });

  it('learns what a message costs beyond its timed work while bulk runs alone, and holds that to the share too', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.double({ min: 0.01, max: 0.5, noNaN: true }),
        fc.double({ min: 0.005, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(4, 40),
        async (share, cost, hidden, perMs) => {
          const { turns, state, pending } = takeTurns(share, 0);
          // Alone: the estimate moves to what each message cost beyond its timed work.
          await drive(turns, state, pending, cost, hidden, 200);
          // Windows end between a message's timed work and the rest of it, so each window's
          // measure is off by a part of a message, and the average moves with them.
          const estimate = turns.messageCostMs;
          assert.ok(
            Math.abs(estimate - hidden) <= 0.1 * (cost + hidden) + 1e-9,
            `estimate ${estimate} ms against ${hidden} ms`,
          );
          // Beside singles: the work no timer sees is held to the share with the timed work.
          state.perMs = perMs;
          const charged = cost + Math.min(estimate, hidden);
          check(await drive(turns, state, pending, cost, hidden, 40), cost + hidden, share, (cost + hidden) / charged);
          // Singles came in every window: the estimate stayed.
          assert.equal(turns.messageCostMs, estimate);
        },
      ),
      params(RUNS / 20),
    );
  });
});
