// The check that fails a `npm run bench:udp` run whose load generator was the limit: the echo
// server (the baseline every ratio divides by) must be busy through every CPU window of its
// case; a window where its main thread was neither running nor runnable means it waited for its
// clients, and the figures would measure the clients rather than the servers.
import { WINDOW_MS } from './c-client.js';

/**
 * The echo server must be the limit: its main thread running, or runnable while another process
 * of the machine held its CPU, this much of every window; else it waited for its clients.
 */
export const ECHO_BUSY_PCT = 95;

/**
 * The echo case of one round: answers what to report when the echo server waited for its
 * clients in a window of demandPct (its main thread running or runnable, % per window), and
 * prints the failure; undefined when it was busy throughout.
 */
export function echoWaited(round: number, demandPct: readonly number[], demandLowPct: number): string | undefined {
  if (demandLowPct >= ECHO_BUSY_PCT) return undefined;
  console.log(
    `  FAILED: the echo server waited for its clients (below ${ECHO_BUSY_PCT}% running or runnable in a window)`,
  );
  return `round ${round}: ${demandPct.length} windows, the least busy at ${demandLowPct.toFixed(0)}%`;
}

/** The verdict on the load generator over every round: the rounds in which the echo server waited (none: it passes). */
export function loadLimitVerdict(clientLimited: readonly string[]): string {
  return clientLimited.length === 0
    ? `- the load generator is not the limit: the echo server's main thread running (or runnable, its CPU taken by another process) ≥ ${ECHO_BUSY_PCT}% of every ${WINDOW_MS} ms window of every round: PASS`
    : `- RUN FAILED, the load generator was the limit: the echo server's main thread idle, waiting for its clients, over ${100 - ECHO_BUSY_PCT}% of a ${WINDOW_MS} ms window (${clientLimited.join('; ')})`;
}
