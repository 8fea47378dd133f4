// The options the benchmarks share (bench/common-options.ts): each read only where its script
// names it, with the script's range, and every other option left to the script's own reader.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readBenchOptions } from '../../bench/common-options.js';

const USAGE = 'bench [--rounds N] [--duration S] [--connections N] [--pin] [--no-write] [--env KEY=VALUE] [--ids N]';

/**
 * Reads argv as a script that takes --rounds (1..20), --duration (>= 0.5), --connections (>= 2), --pin, --no-write,
 * --env and its own --ids.
 */
function read(argv: string[]) {
  const o = {
    rounds: 3,
    duration: 5,
    connections: 50,
    pin: false,
    write: true,
    env: {} as Record<string, string>,
    ids: 0,
  };
  readBenchOptions(
    argv,
    USAGE,
    { rounds: [1, 20], duration: [0.5], connections: [2], pin: true, write: true, env: true },
    o,
    (a) => {
      if (a.flag !== '--ids') return false;
      o.ids = a.whole(1);
      return true;
    },
  );
  return o;
}

describe('shared bench options', () => {
  it('keeps the defaults when no option is given', () => {
    assert.deepEqual(read([]), { rounds: 3, duration: 5, connections: 50, pin: false, write: true, env: {}, ids: 0 });
  });

  it('reads the shared options, whole or not as each is, beside the script’s own', () => {
    assert.deepEqual(
      read([
        '--rounds',
        '7',
        '--duration=0.5',
        '--connections',
        '2',
        '--pin',
        '--no-write',
        '--env',
        'A=1',
        '--env=B=x=y',
        '--ids',
        '9',
      ]),
      {
        rounds: 7,
        duration: 0.5,
        connections: 2,
        pin: true,
        write: false,
        env: { A: '1', B: 'x=y' },
        ids: 9,
      },
    );
  });

  it('checks each against the script’s range, with the option reader’s errors', () => {
    assert.throws(
      () => read(['--rounds', '21']),
      (e: Error) => e.message === `--rounds needs a number from 1 to 20, got "21"\nusage: ${USAGE}`,
    );
    assert.throws(() => read(['--rounds', '1.5']), /--rounds needs a whole number, got 1.5/);
    assert.throws(() => read(['--connections', '1']), /--connections needs a number >= 2, got "1"/);
    assert.throws(() => read(['--connections', '2.5']), /--connections needs a whole number, got 2.5/);
    assert.throws(() => read(['--duration', '0.4']), /--duration needs a number >= 0.5, got "0.4"/);
    assert.throws(() => read(['--duration']), /--duration needs a value/);
    assert.throws(() => read(['--env', 'A']), /--env needs KEY=VALUE, got "A"/);
  });

  it('refuses a shared option its script does not take, as any unknown option', () => {
    for (const flag of [
      '--warmup',
      '--requests',
      '--seconds',
      '--concurrency',
      '--channels',
      '--no-record',
      '--write',
      '--pins',
    ]) {
      assert.throws(
        () => read([flag, '1']),
        (e: Error) => e.message === `unknown option ${flag}\nusage: ${USAGE}`,
      );
    }
    const o = { rounds: 1 };
    assert.throws(
      () => readBenchOptions(['--pin'], USAGE, { rounds: [1] }, o),
      (e: Error) => e.message === `unknown option --pin\nusage: ${USAGE}`,
    );
    assert.throws(() => readBenchOptions(['--no-write'], USAGE, { rounds: [1] }, o), /unknown option --no-write/);
    assert.throws(() => readBenchOptions(['--env', 'A=1'], USAGE, { rounds: [1] }, o), /unknown option --env/);
  });
});
