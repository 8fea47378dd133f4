// Failed admin sign-ins, per source address: each is counted (idmint_errors_total and
// idmint_admin_auth_failures_total, by transport) and logged at warn, at most one line a second
// with the count of the ones left out, and a source that failed ADMIN_AUTH_MAX_FAILURES times
// within ADMIN_AUTH_WINDOW_MS is refused (429 LIMIT_EXCEEDED with Retry-After) without its token
// being looked at until the oldest of those failures is older than the window. Guessing the
// token thus costs a window per few tries. The table keeps at most MAX_SOURCES addresses
// (the oldest dropped first), so a flood of addresses costs bounded memory.
import type { FastifyBaseLogger } from 'fastify';
import { IdmintError } from '../../errors.js';
import type { ErrorCounter, Transport } from '../error-policy.js';

const MAX_SOURCES = 10_000;
const LOG_EVERY_MS = 1000;

export interface AuthFailureOptions {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly now?: () => number;
}

/** idmint_admin_auth_failures_total. */
export interface AuthFailureCounter {
  inc(labels: { transport: Transport }): void;
}

export class AuthFailures {
  /** Failure times per source, oldest first, at most maxFailures of them. */
  private readonly bySource = new Map<string, number[]>();
  private readonly now: () => number;
  private lastLog = Number.NEGATIVE_INFINITY;
  private unlogged = 0;

  constructor(
    private readonly opts: AuthFailureOptions,
    private readonly counters: { readonly errors: ErrorCounter; readonly authFailures: AuthFailureCounter },
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** Throws LIMIT_EXCEEDED (with Retry-After) while `source` is slowed down. */
  check(source: string, transport: Transport): void {
    const times = this.bySource.get(source);
    if (times === undefined || times.length < this.opts.maxFailures) return;
    const left = times[0] + this.opts.windowMs - this.now();
    if (left <= 0) return;
    const retryAfter = Math.max(1, Math.ceil(left / 1000));
    this.counters.errors.inc({ transport, code: 'LIMIT_EXCEEDED' });
    throw new IdmintError(
      'LIMIT_EXCEEDED',
      `too many failed admin sign-ins from this address; retry in ${retryAfter} s`,
      { retryAfter },
    );
  }

  /** Notes a wrong or missing token from `source`. */
  fail(source: string, transport: Transport, reason: string): void {
    const now = this.now();
    this.counters.errors.inc({ transport, code: 'UNAUTHORIZED' });
    this.counters.authFailures.inc({ transport });
    let times = this.bySource.get(source);
    if (times === undefined) {
      if (this.bySource.size >= MAX_SOURCES) this.bySource.delete(this.bySource.keys().next().value as string);
      times = [];
    } else this.bySource.delete(source); // re-inserted below: the map stays in order of last failure
    times.push(now);
    while (times.length > this.opts.maxFailures || (times.length > 0 && times[0] <= now - this.opts.windowMs))
      times.shift();
    this.bySource.set(source, times);
    if (now - this.lastLog >= LOG_EVERY_MS) {
      this.log.warn({ transport, source, reason, failures_not_logged: this.unlogged }, 'admin authentication failed');
      this.lastLog = now;
      this.unlogged = 0;
    } else this.unlogged++;
  }
}
