// The id_server rule converter: files shaped like id_server's examples become idmint rules
// whose templates render exactly what id_server's string.format wrote (checked against an
// independent printf over random dates, counters and salts); files of any other shape are
// refused with the file, the line and what is not understood.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseIdServerConfig } from '../../src/core/idserver-config.js';
import { parseIdServerLua } from '../../src/core/idserver-lua.js';
import type { LocalParts } from '../../src/core/period.js';
import { render } from '../../src/core/rule-render.js';
import { compileTemplate } from '../../src/core/rule-template.js';
import { SpecProblems } from '../../src/core/spec-problems.js';
import { rng, SEED } from '../../tools/prng.js';

/** A rule file in id_server's shape (its readme, order_id.lua and task.lua). */
function luaFile(
  format: string,
  args: string[],
  opts: { max?: string; reset?: string; inline?: boolean; comments?: boolean } = {},
): string {
  const call = `string.format("${format}",${args.join(' ,')})`;
  const c = opts.comments ? ' -- id_server rule' : '';
  return [
    '',
    `function min_counter()${c}`,
    '    return 0',
    'end',
    '',
    'function max_counter()',
    `    return ${opts.max ?? '9999'}`,
    'end',
    '',
    'function reset_seconds()',
    `    return ${opts.reset ?? '86400'}${c}`,
    'end',
    '',
    'function create_id(counter,now,salt)',
    '    local seq = counter:generate_counter()',
    ...(opts.inline ? [`    return ${call}`] : [`    local new_id = ${call}`, '    return new_id']),
    'end',
    '',
  ].join('\n');
}

/** What Lua's string.format writes for %d, %0Nd and %s: an independent reference. */
function printf(format: string, values: (number | string)[]): string {
  let i = 0;
  return format.replace(/%(%|0?\d*[ds])/g, (m, spec: string) => {
    if (spec === '%') return '%';
    const v = values[i++];
    if (spec.endsWith('s')) return String(v);
    const width = Number(spec.slice(0, -1) || '0');
    return String(v).padStart(width, spec.startsWith('0') ? '0' : ' ');
  });
}

/** The value of each Lua argument expression of the examples. */
function valueOf(arg: string, p: LocalParts, counter: number, salt: string): number | string {
  const a = arg.replace(/\s+/g, '');
  const table: Record<string, number | string> = {
    'now:year()': p.year,
    'now:year()%10': p.year % 10,
    'now:year()%100': p.year % 100,
    'now:month()': p.month,
    'now:day()': p.day,
    'now:hour()': p.hour,
    'now:minute()': p.minute,
    'now:second()': p.second,
    seq: counter,
    salt,
  };
  assert.ok(a in table, a);
  return table[a];
}

const EXAMPLES: { name: string; format: string; args: string[]; template: string; max?: string }[] = [
  {
    name: 'readme',
    format: '%01d%02d%02d%04d',
    args: ['now:year()%10', 'now:month()', 'now:day()', 'seq'],
    template: '{year%10}{MM}{dd}{counter:4}',
  },
  {
    name: 'order_id.lua',
    format: 'O%02d%02d%02d%06d',
    args: ['now:year()%100', 'now:month()', 'now:day()', 'seq'],
    template: 'O{yy}{MM}{dd}{counter:6}',
    max: '999999',
  },
  {
    name: 'task.lua',
    format: 'O%s%02d%02d%02d%06d',
    args: ['salt', 'now:year()%100', 'now:month()', 'now:day()', 'seq'],
    template: 'O{salt}{yy}{MM}{dd}{counter:6}',
    max: '999999',
  },
  {
    name: 'hourly with full year',
    format: '%04d%02d%02d%02d-%05d',
    args: ['now:year()', 'now:month()', 'now:day()', 'now:hour()', 'seq'],
    template: '{yyyy}{MM}{dd}{HH}-{counter:5}',
    max: '99999',
  },
  {
    name: 'literal braces and percent',
    format: '{%04d}%%%02d%02d%02d%02d%04d',
    args: ['now:year()', 'now:month()', 'now:day()', 'now:minute()', 'now:second()', 'seq'],
    template: '{{{yyyy}}}%{MM}{dd}{mm}{ss}{counter:4}',
  },
];

describe('id_server Lua rules', () => {
  for (const ex of EXAMPLES) {
    it(`converts ${ex.name} and renders what id_server wrote`, () => {
      for (const inline of [false, true]) {
        const rule = parseIdServerLua(
          'rules/x.lua',
          luaFile(ex.format, ex.args, { max: ex.max, inline, comments: inline }),
        );
        assert.equal(rule.template, ex.template);
        assert.deepEqual([rule.minCounter, rule.maxCounter, rule.resetSeconds], [0, Number(ex.max ?? 9999), 86400]);
        const compiled = compileTemplate(rule.template, rule, { force: true });
        const rand = rng(SEED);
        for (let n = 0; n < 2000; n++) {
          const ms = rand.int(0, 4e12);
          const d = new Date(ms);
          const p: LocalParts = {
            year: d.getUTCFullYear(),
            month: d.getUTCMonth() + 1,
            day: d.getUTCDate(),
            hour: d.getUTCHours(),
            minute: d.getUTCMinutes(),
            second: d.getUTCSeconds(),
            millisecond: 0,
          };
          const counter = rand.int(0, rule.maxCounter);
          const salt = ['', 'u1', 'shop_7'][n % 3];
          const want = printf(
            ex.format,
            ex.args.map((a) => valueOf(a, p, counter, salt)),
          );
          assert.equal(
            render(compiled, { counter, salt, app: 'a', parts: p }),
            want,
            `${ex.name} at ${d.toISOString()} counter ${counter}`,
          );
        }
      }
    });
  }

  it('reads products of numbers and other parameter names', () => {
    const src = luaFile(
      '%02d%02d%02d%02d%03d',
      ['t:month()', 't:day()', 't:hour()', 't:minute()', 'c:generate_counter()'],
      { max: '999', reset: '60 * 60' },
    )
      .replace('create_id(counter,now,salt)', 'create_id(c, t, s)')
      .replace('    local seq = counter:generate_counter()\n', '');
    const r = parseIdServerLua('h.lua', src);
    assert.equal(r.template, '{MM}{dd}{HH}{mm}{counter:3}');
    assert.equal(r.resetSeconds, 3600);
  });

  const refusals: { what: string; src: string; line: number; says: RegExp }[] = [
    {
      what: 'a space-padded field',
      src: luaFile('%1d%2d%02d%04d', ['now:year()%10', 'now:month()', 'now:day()', 'seq']),
      line: 16,
      says: /pads now:month\(\) with spaces/,
    },
    {
      what: 'a month in 1 or 2 digits',
      src: luaFile('%d%d%02d%04d', ['now:year()%10', 'now:month()', 'now:day()', 'seq']),
      line: 16,
      says: /in 1 or 2 digits/,
    },
    {
      what: 'an unknown argument',
      src: luaFile('%02d%04d', ['os.time()', 'seq']),
      line: 16,
      says: /the argument "os.time\(\)"/,
    },
    {
      what: 'a float conversion',
      src: luaFile('%5.2f%04d', ['now:day()', 'seq']),
      line: 16,
      says: /the conversion %5.2f/,
    },
    {
      what: 'computed counter bounds',
      src: luaFile('%04d', ['seq'], { max: 'math.pow(10, 4) - 1' }),
      line: 7,
      says: /max_counter: expected a whole number/,
    },
    {
      what: 'an if in create_id',
      src: luaFile('%04d', ['seq']).replace('    local seq', '    if salt == "" then salt = "x" end\n    local seq'),
      line: 15,
      says: /create_id: not understood: "if salt/,
    },
    {
      what: 'a helper function',
      src: `function pad(x)\n  return x\nend\n${luaFile('%04d', ['seq'])}`,
      line: 1,
      says: /function pad is not one of/,
    },
    {
      what: 'a top-level statement',
      src: `local base = 10\n${luaFile('%04d', ['seq'])}`,
      line: 1,
      says: /not understood: "local base = 10"/,
    },
    {
      what: 'more conversions than arguments',
      src: luaFile('%02d%02d%04d', ['now:day()', 'seq']),
      line: 16,
      says: /more conversions than arguments/,
    },
    {
      what: 'no counter',
      src: luaFile('%02d', ['now:day()']).replace('    local seq = counter:generate_counter()\n', ''),
      line: 14,
      says: /does not write the counter/,
    },
    {
      what: 'a missing function',
      src: luaFile('%04d', ['seq']).replace(/function reset_seconds\(\)\n.*\nend/, ''),
      line: 17,
      says: /function reset_seconds is missing/,
    },
  ];
  for (const r of refusals) {
    it(`refuses ${r.what}, naming the file and line`, () => {
      assert.throws(
        () => parseIdServerLua('/etc/id_server/bad.lua', r.src),
        (e: unknown) => {
          assert.ok(e instanceof SpecProblems);
          assert.match(e.message, new RegExp(`^/etc/id_server/bad\\.lua:${r.line}: `));
          assert.match(e.message, r.says);
          return true;
        },
      );
    });
  }

  it('reads comments as Lua does: a long comment holding an older function is no definition', () => {
    const live = luaFile('%01d%02d%02d%06d', ['now:year()%10', 'now:month()', 'now:day()', 'seq'], { max: '999999' });
    const old = ['--[[ the old limit', 'function max_counter()', '    return 9999', 'end', '--]]', ''].join('\n');
    assert.equal(parseIdServerLua('o.lua', live + old).maxCounter, 999999);
    const leveled = ['--[==[', 'function max_counter()', '    return 9999 -- ]] still inside', 'end', ']==]'].join(
      '\n',
    );
    assert.equal(parseIdServerLua('o.lua', leveled + live).maxCounter, 999999);
    // A comment that closes on its own line, and a `--` inside a string, which is no comment.
    const inline = live
      .replace('function reset_seconds()', '--[[ reset daily ]] function reset_seconds()')
      .replace('"%01d', '"--%01d');
    const r = parseIdServerLua('o.lua', inline);
    assert.equal(r.resetSeconds, 86400);
    assert.equal(r.template, '--{year%10}{MM}{dd}{counter:6}');
    // Line numbers still count the lines a long comment spans.
    assert.throws(
      () => parseIdServerLua('o.lua', `--[[\n\n]]\nlocal x = 1\n${live}`),
      /o\.lua:4: not understood: "local x = 1"/,
    );
    assert.throws(
      () => parseIdServerLua('o.lua', `${live}--[[ never closed\n`),
      /o\.lua:19: a long comment that is never closed/,
    );
  });

  it('refuses a function defined twice in live code, naming both lines', () => {
    const twice = `${luaFile('%04d', ['seq'])}function max_counter()\n    return 99\nend\n`;
    assert.throws(
      () => parseIdServerLua('o.lua', twice),
      /o\.lua:19: function max_counter is defined again \(first at line 6\)/,
    );
  });

  it('reads config.json: id_step, id_offset and the rules', () => {
    const c = parseIdServerConfig(
      'config.json',
      JSON.stringify({
        id_step: 2,
        id_offset: 1,
        rules: [{ name: 'order_id', lua_file: 'order_id.lua', batch_save: 100 }],
      }),
    );
    assert.deepEqual(c, {
      idStep: 2,
      idOffset: 1,
      rules: [{ name: 'order_id', luaFile: 'order_id.lua', batchSave: 100 }],
    });
    // id_server's own default: a rule without batch_save (or below 1) saves every counter.
    const d = parseIdServerConfig(
      'c.json',
      '{"rules":[{"name":"a","lua_file":"a.lua"},{"name":"b","lua_file":"b.lua","batch_save":0}]}',
    );
    assert.deepEqual(
      d.rules.map((r) => r.batchSave),
      [1, 1],
    );
    assert.throws(
      () => parseIdServerConfig('c.json', '{"rules":[{"name":"a","lua_file":"a.lua","batch_save":"100"}]}'),
      /rules\[0\]\.batch_save must be a whole number/,
    );
    assert.throws(
      () => parseIdServerConfig('c.json', '{"id_step":2,"id_offset":2,"rules":[]}'),
      /id_offset must lie from 0 to id_step - 1/,
    );
    assert.throws(
      () => parseIdServerConfig('c.json', '{"rules":[{"name":"a"}]}'),
      /rules\[0\] needs a "name" and a "lua_file"/,
    );
    assert.throws(() => parseIdServerConfig('c.json', '{'), /c\.json(:\d+:\d+)?: not JSON/);
    assert.throws(() => parseIdServerConfig('c.json', '{\n  "id_step": 2,\n  x\n}'), /c\.json:3:3: not JSON/);
  });

  it("reads config.json with comments, as jsoncpp (id_server's reader) reads it", () => {
    const c = parseIdServerConfig(
      'c.json',
      '{\n  // two nodes\n  "id_step": 2, /* this one */ "id_offset": 1,\n  "rules": [{"name": "a//b", "lua_file": "x/*y*/.lua"}] /* the\n  rules */\n}\n',
    );
    assert.deepEqual(c, { idStep: 2, idOffset: 1, rules: [{ name: 'a//b', luaFile: 'x/*y*/.lua', batchSave: 1 }] });
    assert.throws(
      () => parseIdServerConfig('c.json', '{\n"id_step": 2 /* open\n}'),
      /c\.json:2: a comment opened with \/\* is never closed/,
    );
  });
});
