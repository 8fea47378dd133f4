// The option reader of the benchmarks and the soak (tools/args.ts): values inline or next, ranges, clear errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pick, readOptions, type Option } from '../../tools/args.js';

const USAGE = 'bench [--rounds N] [--rate X] [--name S] [--cases a,b] [--env K=V] [--flag]';

/** Reads argv with a reader that knows --rounds (whole 1..20), --rate (number >= 0), --name, --cases and --flag. */
function read(argv: string[]) {
  const o: {
    rounds?: number;
    rate?: number;
    name?: string;
    cases?: string[];
    env?: Record<string, string>;
    flag?: boolean;
  } = {};
  readOptions(argv, USAGE, (a: Option) => {
    switch (a.flag) {
      case '--rounds':
        o.rounds = a.whole(1, 20);
        break;
      case '--rate':
        o.rate = a.number(0);
        break;
      case '--name':
        o.name = a.text();
        break;
      case '--cases':
        o.cases = pick(a.flag, a.list(), ['a', 'b', 'c']);
        break;
      case '--env': {
        const [k, v] = a.keyValue();
        o.env = { ...o.env, [k]: v };
        break;
      }
      case '--flag':
        o.flag = true;
        break;
      default:
        return false;
    }
    return true;
  });
  return o;
}

describe('bench option reader', () => {
  it('takes values from the next argument or after =', () => {
    assert.deepEqual(read(['--rounds', '3', '--rate=2.5', '--name', 'x=y', '--flag']), {
      rounds: 3,
      rate: 2.5,
      name: 'x=y',
      flag: true,
    });
    assert.deepEqual(read(['--name=a=b']), { name: 'a=b' });
    assert.deepEqual(read([]), {});
  });

  it('reads KEY=VALUE pairs (the value may hold =) and refuses one without a key', () => {
    assert.deepEqual(read(['--env', 'A=1', '--env=B=x=y', '--env', 'C=']).env, { A: '1', B: 'x=y', C: '' });
    assert.throws(() => read(['--env', 'A']), /--env needs KEY=VALUE, got "A"/);
    assert.throws(() => read(['--env', '=1']), /--env needs KEY=VALUE, got "=1"/);
  });

  it('keeps the cases of a list in their own order and refuses unknown ones', () => {
    assert.deepEqual(read(['--cases', 'c, a,,']).cases, ['a', 'c']);
    assert.throws(() => read(['--cases', 'a,d']), /--cases: unknown case "d" \(cases: a, b, c\)/);
  });

  it('refuses numbers out of range, fractions for whole numbers and non-numbers', () => {
    assert.throws(() => read(['--rounds', '0']), /--rounds needs a number from 1 to 20, got "0"/);
    assert.throws(() => read(['--rounds', '21']), /from 1 to 20/);
    assert.throws(() => read(['--rounds', '2.5']), /--rounds needs a whole number, got 2.5/);
    assert.throws(() => read(['--rate', 'fast']), /--rate needs a number >= 0, got "fast"/);
    assert.throws(() => read(['--rate=']), /--rate needs a number >= 0, got ""/);
    assert.throws(() => read(['--rate', '-1']), /--rate needs a number >= 0/);
  });

  it('names a missing value and an unknown option, with the usage', () => {
    assert.throws(
      () => read(['--rounds']),
      (e: Error) => e.message === `--rounds needs a value\nusage: ${USAGE}`,
    );
    assert.throws(
      () => read(['--round', '3']),
      (e: Error) => e.message === `unknown option --round\nusage: ${USAGE}`,
    );
    assert.throws(() => read(['3']), /unknown option 3/);
  });
});
