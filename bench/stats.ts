// Small statistics shared by the benchmarks.

/** The median of the finite values (the mean of the middle two for an even count); undefined when there are none. */
export function median(xs: readonly (number | undefined)[]): number | undefined {
  const v = xs.filter((x): x is number => x !== undefined && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
}

/** median(), NaN when there are no finite values (for tables that print NaN as "-"). */
export function medianOrNaN(xs: readonly (number | undefined)[]): number {
  return median(xs) ?? NaN;
}
