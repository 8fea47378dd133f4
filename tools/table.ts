// Tables of figures for benchmark reports: aligned text for the terminal and Markdown for the
// results files. The first `left` columns are names (left-aligned), the rest figures
// (right-aligned).

/** A number in en-US form with d decimals; "-" for undefined, NaN and infinities. */
export const fmt = (v: number | undefined, d = 0): string =>
  v === undefined || !Number.isFinite(v)
    ? '-'
    : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

/** rows[0] is the header. */
export function markdownTable(rows: readonly (readonly string[])[], left = 1): string {
  const [head, ...body] = rows;
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i < left ? ' --- ' : ' ---: ')).join('|')}|`,
    ...body.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** rows[0] is the header; columns two spaces apart. */
export function textTable(rows: readonly (readonly string[])[], left = 1): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) => r.map((c, i) => (i < left ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '))
    .join('\n');
}

export function table(rows: readonly (readonly string[])[], markdown: boolean, left = 1): string {
  return markdown ? markdownTable(rows, left) : textTable(rows, left);
}
