// What bench:permute reads of the CPUs beside each case: how busy a CPU was (from /proc/stat),
// and which side (the server, the load generator, or other work on either core) held a case
// back, from the medians of their CPU shares.
import { readFileSync } from 'node:fs';
import { machineBusySeconds, TICK } from '../../tools/cpu.js';
import { fmt } from '../../tools/table.js';

/**
 * Which side held the plain case back, from the medians of its CPU shares (% of a core; core: the server's CPU busy
 * with anything).
 */
export function limit(server: number, load: number, core: number, loadCore: number): string {
  const cores = `the server's core ${fmt(core)}% busy${Number.isNaN(loadCore) ? '' : `, the load generator's ${fmt(loadCore)}%`}`;
  const shares = `the server at ${fmt(server)}% of its core, the load generator at ${fmt(load)}% of its own, ${cores}`;
  if (server >= 85 && load < server) return `${shares}: the server is the limit`;
  if (load >= 85) return `${shares}: the load generator may be the limit`;
  if (core >= 85)
    return `${shares}: other work on the server's core was the limit (req/s ratios carry that noise; the CPU-time ratio is steadier)`;
  if (loadCore >= 85)
    return `${shares}: other work on the load generator's core was the limit (req/s ratios carry that noise; the CPU-time ratio is steadier)`;
  return `${shares}: neither process reached its core`;
}

/** CPU seconds CPU n spent busy (not idle, not waiting on I/O); without n, every CPU's. NaN when unknown. */
export function busySeconds(n: number | undefined): number {
  if (n === undefined) return machineBusySeconds();
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${n} `));
    const f = (line ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
    return (f.reduce((x, y) => x + y, 0) - f[3] - f[4]) / TICK;
  } catch {
    return NaN;
  }
}
