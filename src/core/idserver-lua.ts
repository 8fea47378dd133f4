// Reads an id_server rule file (Lua) into an idmint rule: the four functions min_counter,
// max_counter, reset_seconds and create_id, in the shape id_server's examples use:
//
//   function max_counter()  return 9999  end
//   function create_id(counter, now, salt)
//     local seq = counter:generate_counter()
//     local new_id = string.format("%01d%02d%02d%04d", now:year()%10, now:month(), now:day(), seq)
//     return new_id
//   end
//
// Nothing is evaluated: comments are set aside as Lua sets them aside (`--` lines, long
// comments `--[[ ]]` and `--[==[ ]==]`), each remaining line is matched against that shape,
// and anything else is refused with the file, the line and what was not understood, so a
// rule is never imported with a template that renders other IDs than id_server did. A
// function defined twice is refused too (Lua would run the last one). Pure: the caller reads
// the file.
import { SpecProblems } from './spec-problems.js';

export interface IdServerRule {
  readonly minCounter: number;
  readonly maxCounter: number;
  readonly resetSeconds: number;
  /** The idmint template of create_id, e.g. `{year%10}{MM}{dd}{counter:4}`. */
  readonly template: string;
}

const NUMERIC = ['min_counter', 'max_counter', 'reset_seconds'] as const;
type Numeric = (typeof NUMERIC)[number];

/** What one create_id argument is, as idmint tokens per printf conversion. */
type Arg =
  | { kind: 'time'; what: 'year' | 'year%10' | 'year%100' | 'month' | 'day' | 'hour' | 'minute' | 'second' }
  | { kind: 'counter' }
  | { kind: 'salt' };

class Refusal extends Error {}

/** The level of a long bracket opening at src[start] (`[[` is 0, `[==[` is 2), or -1. */
function longBracket(src: string, start: number): number {
  if (src[start] !== '[') return -1;
  let end = start + 1;
  while (src[end] === '=') end++;
  return src[end] === '[' ? end - start - 1 : -1;
}

/**
 * The source with every comment blanked as Lua reads it: `--` to the end of the line, and
 * long comments `--[[ ... ]]` / `--[==[ ... ]==]` whatever lines they span. Strings ("...",
 * '...', long strings `[[ ... ]]`) are kept whole, so a `--` inside one is no comment.
 * Comment characters become spaces and newlines stay, so line numbers are kept.
 */
function blankComments(file: string, src: string): string {
  const out: string[] = [];
  const lineAt = (i: number) => src.slice(0, i).split('\n').length;
  const blank = (from: number, to: number) => out.push(src.slice(from, to).replace(/[^\n]/g, ' '));
  let pos = 0;
  while (pos < src.length) {
    const char = src[pos];
    if (char === '-' && src[pos + 1] === '-') {
      const level = longBracket(src, pos + 2);
      let end: number;
      if (level >= 0) {
        const close = src.indexOf(`]${'='.repeat(level)}]`, pos + 4 + level);
        if (close < 0)
          throw new SpecProblems([
            `${file}:${lineAt(pos)}: a long comment that is never closed (Lua refuses the file)`,
          ]);
        end = close + level + 2;
      } else {
        const nl = src.indexOf('\n', pos);
        end = nl < 0 ? src.length : nl;
      }
      blank(pos, end);
      pos = end;
      continue;
    }
    const level = longBracket(src, pos);
    let end = pos + 1;
    if (level >= 0) {
      const close = src.indexOf(`]${'='.repeat(level)}]`, pos + 2 + level);
      if (close < 0)
        throw new SpecProblems([`${file}:${lineAt(pos)}: a long string that is never closed (Lua refuses the file)`]);
      end = close + level + 2;
    } else if (char === '"' || char === "'") {
      while (end < src.length && src[end] !== char && src[end] !== '\n') end += src[end] === '\\' ? 2 : 1;
      end = Math.min(end + 1, src.length);
    }
    out.push(src.slice(pos, end));
    pos = end;
  }
  return out.join('');
}

/** An integer expression: a literal or a product of literals (`24*3600`). */
function integerOf(expr: string): number {
  const parts = expr.split('*').map((p) => p.trim());
  if (!parts.every((p) => /^\d{1,16}$/.test(p)))
    throw new Refusal(`expected a whole number (or a product of whole numbers), found "${expr}"`);
  const product = parts.reduce((a, p) => a * Number(p), 1);
  if (!Number.isSafeInteger(product)) throw new Refusal(`${expr} is too large`);
  return product;
}

/** The text of a Lua string literal (double or single quotes, simple escapes). */
function luaString(src: string): { text: string; rest: string } {
  const quote = src[0];
  if (quote !== '"' && quote !== "'") throw new Refusal('expected a string literal as the format');
  let text = '';
  for (let i = 1; i < src.length; i++) {
    const char = src[i];
    if (char === quote) return { text, rest: src.slice(i + 1) };
    if (char === '\\') {
      const escaped = src[++i];
      if (escaped === '\\' || escaped === '"' || escaped === "'") text += escaped;
      else throw new Refusal(`the escape \\${escaped ?? ''} in the format string`);
    } else text += char;
  }
  throw new Refusal('the format string is not closed on this line');
}

/** Splits a call's argument list at top-level commas. */
function splitArgs(src: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const char of src) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += char;
  }
  if (cur.trim() !== '') out.push(cur.trim());
  return out;
}

const TIME_METHODS: Record<string, Arg & { kind: 'time' }> = {
  'year()': { kind: 'time', what: 'year' },
  'year()%10': { kind: 'time', what: 'year%10' },
  'year()%100': { kind: 'time', what: 'year%100' },
  'month()': { kind: 'time', what: 'month' },
  'day()': { kind: 'time', what: 'day' },
  'hour()': { kind: 'time', what: 'hour' },
  'minute()': { kind: 'time', what: 'minute' },
  'second()': { kind: 'time', what: 'second' },
};

interface Names {
  readonly counter: string;
  readonly now: string;
  readonly salt: string;
  /** Locals bound to counter:generate_counter(). */
  readonly seqs: Set<string>;
}

function argOf(expr: string, names: Names): Arg {
  const compact = expr.replace(/\s+/g, '');
  if (names.seqs.has(compact) || compact === `${names.counter}:generate_counter()`) return { kind: 'counter' };
  if (compact === names.salt) return { kind: 'salt' };
  if (compact.startsWith(`${names.now}:`)) {
    const time = TIME_METHODS[compact.slice(names.now.length + 1)];
    if (time) return time;
  }
  throw new Refusal(
    `the argument "${expr}" (expected ${names.now}:year()%10, ${names.now}:year()%100, ${names.now}:month(), ${names.now}:day(), ${names.now}:hour(), ${names.now}:minute(), ${names.now}:second(), the counter or ${names.salt})`,
  );
}

/** Two-digit fields and the idmint token each is written as. */
const TWO_DIGITS: Record<string, string> = {
  month: '{MM}',
  day: '{dd}',
  hour: '{HH}',
  minute: '{mm}',
  second: '{ss}',
  'year%100': '{yy}',
};

/** One printf conversion applied to one argument, as idmint template text. */
function tokenFor(conv: string, arg: Arg, argText: string): string {
  const match = /^%(0?)(\d*)([ds])$/.exec(conv);
  if (!match) throw new Refusal(`the conversion ${conv} (only %d, %0Nd and %s are understood)`);
  const [, zero, widthText, type] = match;
  const width = widthText === '' ? 0 : Number(widthText);
  if (arg.kind === 'salt') {
    if (conv !== '%s') throw new Refusal(`the salt is written with ${conv}; only %s is understood for it`);
    return '{salt}';
  }
  if (type !== 'd') throw new Refusal(`${argText} is written with ${conv}; a number needs %d or %0Nd`);
  if (width > 1 && zero !== '0')
    throw new Refusal(`${conv} pads ${argText} with spaces; only zero padding (%0${width}d) is understood`);
  if (arg.kind === 'counter') {
    if (width > 18) throw new Refusal(`${conv}: a counter of more than 18 digits`);
    return width <= 1 ? '{counter}' : `{counter:${width}}`;
  }
  const what = arg.what;
  if (what === 'year') {
    if (width <= 4) return '{yyyy}';
    return '0'.repeat(width - 4) + '{yyyy}';
  }
  if (what === 'year%10') return width <= 1 ? '{year%10}' : '0'.repeat(width - 1) + '{year%10}';
  // Fields of two digits: %d would write 1 to 9 with one digit, and IDs of different
  // dates could read the same ("1" "11" and "11" "1"): only a width of 2 or more is exact.
  if (width < 2)
    throw new Refusal(`${argText} is written with ${conv}, in 1 or 2 digits; idmint writes it in exactly 2 (%02d)`);
  return '0'.repeat(width - 2) + TWO_DIGITS[what];
}

/** The idmint template of a string.format call's arguments. */
function templateOf(args: string[], names: Names): string {
  const { text: fmt, rest } = luaString(args[0]);
  if (rest.trim() !== '') throw new Refusal(`unexpected text after the format string: "${rest.trim()}"`);
  const values = args.slice(1);
  let out = '';
  let used = 0;
  for (let i = 0; i < fmt.length; i++) {
    const char = fmt[i];
    if (char !== '%') {
      if (char === '{') out += '{{';
      else if (char === '}') out += '}}';
      else out += char;
      continue;
    }
    if (fmt[i + 1] === '%') {
      out += '%';
      i++;
      continue;
    }
    const match = /^%[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]/.exec(fmt.slice(i));
    if (!match) throw new Refusal(`an incomplete conversion at the end of the format "${fmt}"`);
    if (used >= values.length) throw new Refusal(`the format "${fmt}" has more conversions than arguments`);
    const argText = values[used++];
    out += tokenFor(match[0], argOf(argText, names), argText);
    i += match[0].length - 1;
  }
  if (used !== values.length) throw new Refusal(`string.format has ${values.length} arguments for ${used} conversions`);
  return out;
}

const FORMAT_CALL = /^string\.format\s*\((.*)\)$/;

/**
 * The rule of one id_server Lua file. Throws SpecProblems whose messages read
 * `<file>:<line>: <what is not understood>`.
 */
export function parseIdServerLua(file: string, source: string): IdServerRule {
  const lines = blankComments(file, source).split(/\r?\n/);
  const numbers: Partial<Record<Numeric, number>> = {};
  let template: string | undefined;
  const defined = new Map<string, number>();
  const fail = (line: number, what: string): never => {
    throw new SpecProblems([`${file}:${line}: ${what}`]);
  };
  let cursor = 0;
  const next = (): { no: number; text: string } | undefined => {
    while (cursor < lines.length) {
      const text = lines[cursor++].trim();
      if (text !== '') return { no: cursor, text };
    }
    return undefined;
  };
  for (let l = next(); l; l = next()) {
    const head = /^function\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*$/.exec(l.text);
    if (!head)
      fail(
        l.no,
        `not understood: "${l.text}" (expected "function min_counter()", "function max_counter()", "function reset_seconds()" or "function create_id(counter,now,salt)")`,
      );
    const [, name, params] = head!;
    const first = defined.get(name);
    // Lua would keep the last definition; a file that defines a function twice says two
    // things, and the import does not guess which one id_server ran with.
    if (first !== undefined)
      fail(
        l.no,
        `function ${name} is defined again (first at line ${first}); Lua keeps the last one: remove the other (or comment it out)`,
      );
    defined.set(name, l.no);
    try {
      if ((NUMERIC as readonly string[]).includes(name)) {
        if (params.trim() !== '') throw new Refusal(`${name} takes no parameters`);
        const body = next();
        const ret = body && /^return\s+(.+)$/.exec(body.text);
        if (!body || !ret)
          return fail(
            body?.no ?? l.no,
            `${name} must be "return <number>", found "${body?.text ?? 'the end of the file'}"`,
          );
        try {
          numbers[name as Numeric] = integerOf(ret[1]);
        } catch (error) {
          if (error instanceof Refusal) fail(body.no, `${name}: ${error.message}`);
          throw error;
        }
        const end = next();
        if (end?.text !== 'end')
          fail(end?.no ?? body.no, `${name} must end after its return, found "${end?.text ?? 'the end of the file'}"`);
      } else if (name === 'create_id') {
        const ps = params.split(',').map((p) => p.trim());
        if (ps.length !== 3 || !ps.every((p) => /^[A-Za-z_]\w*$/.test(p)))
          throw new Refusal('create_id must take three parameters (counter, now, salt)');
        const names: Names = { counter: ps[0], now: ps[1], salt: ps[2], seqs: new Set() };
        const formatted = new Map<string, string>();
        for (;;) {
          const line = next();
          if (!line) return fail(lines.length, 'create_id is not closed by "end"');
          if (line.text === 'end') break;
          try {
            const local = /^local\s+([A-Za-z_]\w*)\s*=\s*(.+)$/.exec(line.text);
            const ret = /^return\s+(.+)$/.exec(line.text);
            if (local) {
              const [, variable, expr] = local;
              const value = expr.trim();
              if (value.replace(/\s+/g, '') === `${names.counter}:generate_counter()`) names.seqs.add(variable);
              else {
                const call = FORMAT_CALL.exec(value);
                if (!call)
                  throw new Refusal(
                    `not understood: "${line.text}" (expected ${names.counter}:generate_counter() or string.format(...))`,
                  );
                formatted.set(variable, templateOf(splitArgs(call[1]), names));
              }
            } else if (ret) {
              if (template !== undefined) throw new Refusal('create_id returns twice');
              const returned = ret[1].trim();
              const call = FORMAT_CALL.exec(returned);
              if (call) template = templateOf(splitArgs(call[1]), names);
              else if (formatted.has(returned)) template = formatted.get(returned);
              else
                throw new Refusal(
                  `create_id must return string.format(...) or a local holding one, found "${returned}"`,
                );
            } else {
              throw new Refusal(`not understood: "${line.text}"`);
            }
          } catch (error) {
            if (error instanceof Refusal) fail(line.no, `create_id: ${error.message}`);
            throw error;
          }
        }
        if (template === undefined) fail(l.no, 'create_id returns no string.format(...)');
        if (!template!.includes('{counter'))
          fail(l.no, 'create_id does not write the counter (counter:generate_counter())');
      } else {
        fail(l.no, `function ${name} is not one of min_counter, max_counter, reset_seconds, create_id`);
      }
    } catch (error) {
      if (error instanceof Refusal) fail(l.no, error.message);
      throw error;
    }
  }
  for (const name of NUMERIC) if (numbers[name] === undefined) fail(lines.length, `function ${name} is missing`);
  if (template === undefined) fail(lines.length, 'function create_id is missing');
  return {
    minCounter: numbers.min_counter!,
    maxCounter: numbers.max_counter!,
    resetSeconds: numbers.reset_seconds!,
    template: template!,
  };
}
