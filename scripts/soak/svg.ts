// The chart of a soak run: RSS with V8's pages counted whole, RSS, the heap's committed size and heap used (MB) over
// time (minutes), the warm-up shaded and each plateau dashed; the heap after each full collection and, lighter, the
// peak of each sample; the legend in as many rows as it needs above the plot. Hand-written SVG, no dependency.

export interface ChartSeries {
  readonly name: string;
  readonly color: string;
  readonly points: readonly { readonly t: number; readonly v: number }[];
  readonly plateau: number;
}

const W = 800;
/** The height and the plot's top with one row of legend; each row more adds LEGEND_ROW to both. */
const BASE_H = 400;
const M = { left: 60, right: 20, top: 56, bottom: 50 };
const LEGEND_ROW = 18;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round step for about `n` ticks over span. */
function tickStep(span: number, n: number): number {
  const raw = span / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) ?? 10 * p;
}

/** Each series' legend label and where it goes: rows of labels from the left, a row broken before it would overflow. */
function legendLayout(series: readonly ChartSeries[]): { label: string; x: number; row: number }[] {
  let x = M.left;
  let row = 0;
  return series.map((s) => {
    const label = Number.isFinite(s.plateau) ? `${s.name}, plateau ${s.plateau.toFixed(1)} MB` : s.name;
    // About 7 px a character at 12 px, after a 20 px line and a gap.
    const width = 26 + label.length * 7;
    if (x > M.left && x + width > W - M.right) {
      x = M.left;
      row++;
    }
    const at = { label, x, row };
    x += width + 20;
    return at;
  });
}

export function chartSvg(title: string, input: readonly ChartSeries[], warmupS: number): string {
  const series = input.map((s) => ({ ...s, points: s.points.filter((p) => Number.isFinite(p.v)) }));
  const legend = legendLayout(series);
  const extra = LEGEND_ROW * Math.max(0, ...legend.map((l) => l.row));
  const top = M.top + extra;
  const H = BASE_H + extra;
  const all = series.flatMap((s) => s.points);
  const tMax = Math.max(1, ...all.map((p) => p.t)) / 60;
  const vMax = Math.max(1, ...all.map((p) => p.v)) * 1.1;
  const x = (min: number) => M.left + (min / tMax) * (W - M.left - M.right);
  const y = (v: number) => H - M.bottom - (v / vMax) * (H - top - M.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`,
    `<rect x="${x(0)}" y="${top}" width="${x(warmupS / 60) - x(0)}" height="${H - top - M.bottom}" fill="#eee"/>`,
    `<text x="${x(0) + 4}" y="${top + 14}" fill="#888">warm-up</text>`,
  ];
  const vStep = tickStep(vMax, 6);
  for (let v = 0; v <= vMax; v += vStep) {
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${M.left - 6}" y="${y(v) + 4}" text-anchor="end">${+v.toPrecision(6)}</text>`);
  }
  const tStep = tickStep(tMax, 10);
  for (let t = 0; t <= tMax + 1e-9; t += tStep) {
    out.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${H - M.bottom}" y2="${H - M.bottom + 5}" stroke="#000"/>`);
    out.push(`<text x="${x(t)}" y="${H - M.bottom + 18}" text-anchor="middle">${+t.toFixed(2)}</text>`);
  }
  out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#000"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${top}" y2="${H - M.bottom}" stroke="#000"/>`);
  out.push(`<text x="${W / 2}" y="${H - 12}" text-anchor="middle">minutes</text>`);
  out.push(`<text x="16" y="${H / 2}" text-anchor="middle" transform="rotate(-90 16 ${H / 2})">MB</text>`);
  for (const [i, s] of series.entries()) {
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${x(p.t / 60).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    if (Number.isFinite(s.plateau))
      out.push(
        `<line x1="${M.left}" x2="${W - M.right}" y1="${y(s.plateau)}" y2="${y(s.plateau)}" stroke="${s.color}" stroke-dasharray="6 4"/>`,
      );
    const { label, x: lx, row } = legend[i];
    const ly = 36 + row * LEGEND_ROW;
    out.push(`<line x1="${lx}" x2="${lx + 20}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 26}" y="${ly + 4}">${esc(label)}</text>`);
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
