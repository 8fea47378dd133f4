// The soak's chart (scripts/soak/svg.ts): a legend too long for one row breaks into rows above
// the plot, each label inside the chart's width, and the plot moves down to make room.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chartSvg, type ChartSeries } from '../../scripts/soak/svg.js';

const line = (name: string, plateau: number): ChartSeries => ({
  name,
  color: '#000',
  points: [1, 2, 3].map((t) => ({ t: t * 60, v: 100 + t })),
  plateau,
});

/** The legend's texts: x, y and the label. */
const labels = (svg: string) =>
  [...svg.matchAll(/<text x="([\d.]+)" y="([\d.]+)">([^<]+)<\/text>/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
    text: m[3],
  }));

describe('soak chart', () => {
  it('keeps one row of legend, 400 px high, when the labels fit', () => {
    const svg = chartSvg('t', [line('RSS', 101), line('heap', NaN)], 30);
    assert.match(svg, /height="400"/);
    assert.deepEqual(new Set(labels(svg).map((l) => l.y)).size, 1);
  });

  it('breaks a long legend into rows inside the width and moves the plot down', () => {
    const names = [
      "RSS, V8's pages whole",
      'RSS',
      'heap committed by V8',
      'heap after GC (old gen.)',
      'heap used, peak',
    ];
    const svg = chartSvg(
      't',
      names.map((n, i) => line(n, i % 2 ? NaN : 100 + i)),
      30,
    );
    const legend = labels(svg);
    assert.equal(legend.length, names.length);
    const rows = [...new Set(legend.map((l) => l.y))];
    assert.ok(rows.length >= 2, JSON.stringify(legend));
    for (const l of legend) assert.ok(l.x + l.text.replace(/&#?\w+;/g, "'").length * 7 <= 800, JSON.stringify(l));
    const height = Number(/height="(\d+)"/.exec(svg)![1]);
    assert.equal(height, 400 + 18 * (rows.length - 1));
    // The warm-up band, the plot's top, starts below the last row of legend.
    const band = Number(/<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="[\d.]+" fill="#eee"\/>/.exec(svg)![1]);
    assert.ok(band > Math.max(...rows), `${band} against ${rows}`);
  });
});
