// Generators the fuzz tests of every transport share: strings that stress parsers and number
// texts at the edges of what the API reads.
import fc from 'fast-check';

// ---- shared generators ----

/** Strings that stress parsers: unicode, control characters, long runs, escapes. */
export const nastyString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '..',
    '%',
    '%zz',
    '\ud800',
    'é',
    '😀',
    '\n',
    '"',
    '\\',
    '{}',
    '[]',
    'null',
    'true',
    '1e309',
    'NaN',
    '-1',
    '__proto__',
    'constructor',
  ),
  fc.integer({ min: 65, max: 1500 }).map((n) => 'x'.repeat(n)),
);

/** Numbers at the edges, including ones JSON cannot say exactly. */
export const edgeNumberText = fc.constantFrom(
  '0',
  '-0',
  '-1',
  '1',
  '1.5',
  '1e309',
  '-1e309',
  '1e-400',
  '9007199254740993',
  '18446744073709551616',
  '99999999999999999999999999',
  '4294967296',
  '4294967295',
  '100000',
  '100001',
  '1e5',
  '0x10',
  '1_000',
);
