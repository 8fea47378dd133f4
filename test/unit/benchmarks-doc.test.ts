// docs/BENCHMARKS.md, its charts and README's figures block are generated from the recorded
// runs (bench/report/benchmarks-doc.ts): the generator on a fixture of two runs, the recording
// helpers it reads the runs of, and the pages in the repository against what it writes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { casesFromTable, parseFigure, type Run, tableRows, withRatios } from '../../bench/record.js';
import { generate, generateRepo, README_BEGIN, README_END } from '../../bench/report/benchmarks-doc.js';

/**
 * Parses XML enough to tell it is well-formed: every element closed in order, attributes quoted once; answers the
 * element names.
 */
function xmlElements(xml: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const re = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|<!--[\s\S]*?-->|([<>])/g;
  let last = 0;
  for (let m = re.exec(xml); m; m = re.exec(xml)) {
    assert.equal(/[<>]/.test(xml.slice(last, m.index)), false, `stray markup before offset ${m.index}`);
    last = re.lastIndex;
    if (m[5]) assert.fail(`stray "${m[5]}" at offset ${m.index}`);
    if (m[0].startsWith('<!--')) continue;
    const [, close, name, attrs, selfClosing] = m;
    if (close) {
      assert.equal(open.pop(), name, `</${name}> closes another element`);
      continue;
    }
    const seen = new Set<string>();
    for (const [, a] of (attrs ?? '').matchAll(/([\w:-]+)=/g)) {
      assert.equal(seen.has(a), false, `attribute ${a} twice on <${name}>`);
      seen.add(a);
    }
    names.push(name);
    if (!selfClosing) open.push(name);
  }
  assert.equal(/[<>]/.test(xml.slice(last)), false, 'stray markup at the end');
  assert.deepEqual(open, [], 'elements left open');
  return names;
}

const run = (date: string, ratios: [number, number, number | undefined], rps: [number, number, number]): Run => {
  const table = [
    ['case', 'req/s', 'p99 ms', 'req/s ÷ base'],
    ['baseline', rps[0].toLocaleString('en-US'), '2.286', ratios[0].toFixed(3)],
    ['node <fast>', rps[1].toLocaleString('en-US'), '2.285', ratios[1].toFixed(3)],
    ['global & co', rps[2].toLocaleString('en-US'), '-', ratios[2] === undefined ? '-' : ratios[2].toFixed(3)],
  ];
  const { columns, cases } = casesFromTable(table);
  return {
    schema: 1,
    bench: 'fixture',
    date,
    command: 'npm run bench -- --rounds 2',
    machine: { cpus: 2, node: 'v22.0.0', loadavgBefore: [1.5, 1, 0.5], loadavgAfter: [2, 1, 0.5] },
    baseline: 'baseline',
    ratio: 'req/s ÷ base',
    labelColumns: 1,
    columns,
    cases: withRatios(cases, { column: 'req/s ÷ base', baseline: 'baseline' }),
  };
};

const RUNS = [
  run('2026-01-02T00:00:00.000Z', [1, 1.25, 0.9], [40000, 50000, 36000]),
  run('2026-01-01T00:00:00.000Z', [1, 0.8, undefined], [50000, 40000, 1000]),
];
const TEMPLATES = {
  benchmarks:
    '# B\n\n{{facts fixture}}\n\n{{table fixture}}\n\nnode ran at {{fig fixture|node <fast>|ratio}}x, {{fig fixture|node <fast>|req/s}} req/s.\n\n{{chart fixture}}\n\n{{runs fixture}}\n',
  readmeBlock: 'global: {{fig fixture|global & co|req/s ÷ base}}\n',
};
const README = `# r\n\n${README_BEGIN}\nold figures\n${README_END}\n\ntail\n`;

describe('benchmark pages generated from recorded runs', () => {
  const g = generate(RUNS, TEMPLATES, README);

  it('writes the latest run as a Markdown table, its facts and single figures', () => {
    assert.ok(
      g.benchmarks.includes(
        [
          '| case | req/s | p99 ms | req/s ÷ base |',
          '| --- | ---: | ---: | ---: |',
          '| baseline | 40,000 | 2.286 | 1.000 |',
          '| node <fast> | 50,000 | 2.285 | 1.250 |',
          '| global & co | 36,000 | - | 0.900 |',
        ].join('\n'),
      ),
      g.benchmarks,
    );
    assert.match(
      g.benchmarks,
      /- command: `npm run bench -- --rounds 2`\n- date: 2026-01-02T00:00:00.000Z\n- machine: 2 CPUs, node v22.0.0\n/,
    );
    assert.match(g.benchmarks, /- load average before the run: 1\.50 1\.00 0\.50; after the run: 2\.00 1\.00 0\.50/);
    assert.ok(g.benchmarks.includes('node ran at 1.25x, 50,000 req/s.'));
    assert.ok(g.benchmarks.includes('![fixture: '));
    assert.ok(g.benchmarks.includes('](benchmarks/fixture.svg)'));
    assert.ok(g.benchmarks.includes('| 1 | 2026-01-01T00:00:00.000Z |'), 'runs listed oldest first');
    assert.ok(!g.benchmarks.includes('{{'), 'no placeholder left');
  });

  it('draws a well-formed SVG with one polyline per case that has a ratio', () => {
    const svg = g.charts.get('fixture');
    assert.ok(svg);
    const names = xmlElements(svg);
    assert.equal(names[0], 'svg');
    assert.equal(names.filter((n) => n === 'polyline').length, 3);
    // the case names are escaped, and "global & co" has one point (the older run had no ratio for it)
    assert.ok(svg.includes('node &lt;fast&gt;') && svg.includes('global &amp; co'));
    const points = [...svg.matchAll(/<polyline[^>]* points="([^"]*)"/g)].map((m) => m[1].split(' ').length);
    assert.deepEqual(points, [2, 2, 1]);
  });

  it('rewrites only the marked block of the README', () => {
    assert.equal(g.readme, `# r\n\n${README_BEGIN}\nglobal: 0.900\n${README_END}\n\ntail\n`);
    assert.throws(() => generate(RUNS, TEMPLATES, '# no block\n'), /no block/);
  });

  it('refuses a figure that the latest run does not have', () => {
    assert.throws(
      () => generate(RUNS, { ...TEMPLATES, readmeBlock: '{{fig fixture|nothing|req/s}}' }, README),
      /no case "nothing"/,
    );
    assert.throws(
      () => generate(RUNS, { ...TEMPLATES, readmeBlock: '{{fig other|a|b}}' }, README),
      /no recorded run of benchmark "other"/,
    );
  });
});

describe('figures of an earlier run', () => {
  it('names a run by the start of its date', () => {
    const block = 'then {{fig fixture@2026-01-01|node <fast>|req/s}}, now {{fig fixture|node <fast>|req/s}}\n';
    assert.equal(
      generate(RUNS, { ...TEMPLATES, readmeBlock: block }, README).readme,
      `# r\n\n${README_BEGIN}\nthen 40,000, now 50,000\n${README_END}\n\ntail\n`,
    );
  });

  it('refuses a date that names no run or several, and a whole table of an earlier run', () => {
    for (const [block, err] of [
      ['{{fig fixture@2025|node <fast>|req/s}}', /0 recorded runs of benchmark "fixture" dated 2025/],
      ['{{fig fixture@2026-01|node <fast>|req/s}}', /2 recorded runs of benchmark "fixture" dated 2026-01/],
      ['{{table fixture@2026-01-01}}', /only a fig names a run/],
    ] as const)
      assert.throws(() => generate(RUNS, { ...TEMPLATES, readmeBlock: block }, README), err);
  });
});

describe('recorded figures', () => {
  it('reads printed figures back as numbers', () => {
    assert.deepEqual(parseFigure('49,027'), { value: 49027, digits: 0 });
    assert.deepEqual(parseFigure('0.938'), { value: 0.938, digits: 3 });
    assert.deepEqual(parseFigure('1,446.9M'), { value: 1446.9e6, digits: 1, scale: 'M' });
    assert.deepEqual(parseFigure('**3**'), { value: 3, digits: 0 });
    assert.deepEqual(parseFigure('46,569–60,671'), { value: '46,569–60,671', digits: 0 });
    assert.equal(parseFigure('-'), undefined);
  });

  it("reads a report's case table back from its Markdown", () => {
    const md =
      '# r\n\n| goal | value |\n| --- | ---: |\n| a | 1 |\n\n| case | req/s |\n|---|---|\n| baseline, median | 10 |\n| **x, median** | 5 |\n\nChecks: fine.\n\n| case | other |\n| --- | --- |\n| y | 1 |\n';
    assert.deepEqual(tableRows(md), [
      ['case', 'req/s'],
      ['baseline, median', '10'],
      ['**x, median**', '5'],
    ]);
    const { cases } = casesFromTable(tableRows(md));
    assert.deepEqual(
      withRatios(cases, { of: 'req/s', baseline: 'baseline, median', cases: (n) => n.endsWith(', median') }).map(
        (c) => [c.labels[0], c.ratio],
      ),
      [
        ['baseline, median', 1],
        ['x, median', 0.5],
      ],
    );
  });

  it('computes a ratio from a figure and the baseline case when no column holds it', () => {
    const { cases } = casesFromTable([
      ['case', 'IDs/s'],
      ['raw', '100.0M'],
      ['binary', '82.0M'],
      ['json', '-'],
    ]);
    assert.deepEqual(
      withRatios(cases, { of: 'IDs/s', baseline: 'raw' }).map((c) => c.ratio),
      [1, 0.82, undefined],
    );
  });
});

describe('the pages in the repository', () => {
  it('docs/BENCHMARKS.md, docs/benchmarks/*.svg and README.md are exactly what npm run benchmarks:doc writes from bench/results/runs', () => {
    const root = new URL('../../', import.meta.url);
    const written = generateRepo(root);
    assert.ok(written.size > 3);
    for (const [path, text] of written) {
      assert.equal(
        readFileSync(new URL(path, root), 'utf8'),
        text,
        `${path} differs from what npm run benchmarks:doc writes: run it (and never edit figures by hand)`,
      );
      if (path.endsWith('.svg')) xmlElements(text);
    }
  });
});
