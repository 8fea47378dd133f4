// Per-source limits of the ID routes (HTTP, with Leaf's and Tinyid's) and the UDP listener: one
// table of source addresses (src/core/rate-bucket.ts) shared by every transport of the process.
// Two things an anonymous flood can hurt are bounded per source:
//
// - IDs of tags whose space is finite (core/finite-space.ts), taken without a token of the tag:
//   an open rule or permuted tag used up by one caller is used up for all. A tag with client
//   tokens serves only callers holding one, so its IDs are never charged: a request without a
//   valid token is a refusal, counted as the next point says.
// - Refused requests (4xx but 409, 422 and 429: malformed input, a tag that does not exist or
//   is protected, a wrong token): each costs the server work (a tag name it does not know is
//   looked up in MySQL) and, on UDP, a reply to an address that may be forged.
//
// A source over its IDs is refused every request for IDs of finite tags, and one over its
// refusals every request on these routes, until its bucket refills: HTTP answers 429
// LIMIT_EXCEEDED with Retry-After and takes nothing; UDP drops the datagram unanswered (no reply
// to reflect). Each such refusal counts in idmint_source_limited_total and is logged at warn, at
// most one line a second. IDs are charged when a request is admitted and given back when it takes
// none (a refusal, a failure), so a flood of concurrent requests cannot take more than the bucket
// holds. A request of a source under its limits costs a lookup of its address (and, asking for
// IDs, of its tag's cached definition) and allocates nothing.
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { hasFiniteSpace, type SpaceShape } from '../core/finite-space.js';
import { SourceRates, sourceKey, type SourceLimit } from '../core/rate-bucket.js';
import { IdmintError } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { LimitedTransport, SourceLimitCounter } from '../metrics/source-limit-metrics.js';
import type { ErrorCounter } from './error-policy.js';

const LOG_EVERY_MS = 1000;

/** What the limits read of a tag's definition. */
export interface LimitedTag extends SpaceShape {
  readonly nodeBlock: number;
  /** Hashes of the tag's client tokens; a tag with any serves only their holders. */
  readonly tokenHashes?: { readonly size: number };
}

/** Tag definitions: peek answers the cached one when it may be used as it is (else undefined), get reads it. */
export interface TagLookup {
  peek(name: string): LimitedTag | undefined;
  get(name: string): Promise<LimitedTag | undefined>;
}

export interface SourceLimitOptions {
  readonly finiteIdsPerSecond: number;
  readonly refusalsPerSecond: number;
  readonly burstSeconds: number;
  readonly now?: () => number;
}

/**
 * An HTTP status that counts against the source's refusals: a client error but 409 (the tag's state), 422 (a reused
 * idempotency key) and 429 (a limit).
 */
export const countsAsRefusal = (status: number): boolean =>
  status >= 400 && status < 500 && status !== 409 && status !== 422 && status !== 429;

export class SourceLimits {
  /** IDs of finite tags are limited (SOURCE_MAX_FINITE_IDS_PER_SECOND is not 0). */
  readonly limitsIds: boolean;
  private readonly rates: SourceRates;
  private lastLog = Number.NEGATIVE_INFINITY;
  private unlogged = 0;

  constructor(
    private readonly opts: SourceLimitOptions,
    private readonly tags: TagLookup,
    private readonly counters: { readonly limited: SourceLimitCounter; readonly errors: ErrorCounter },
    private readonly log: Pick<Logger, 'warn'>,
  ) {
    this.limitsIds = opts.finiteIdsPerSecond > 0;
    this.rates = new SourceRates({
      idsPerSecond: opts.finiteIdsPerSecond,
      refusalsPerSecond: opts.refusalsPerSecond,
      burstSeconds: opts.burstSeconds,
      now: opts.now,
    });
  }

  /** The tag's cached definition when it may be used as it is, else undefined (get() reads it). */
  peek(name: string): LimitedTag | undefined {
    return this.tags.peek(name);
  }

  /** The tag's definition (undefined: none, or it cannot be read now: nothing is charged for it). */
  get(name: string): Promise<LimitedTag | undefined> {
    return this.tags.get(name).catch(() => undefined);
  }

  /**
   * The IDs a request for `count` of `tag`'s is charged: `count` for a tag without tokens whose space
   * is finite, else 0.
   */
  chargeOf(tag: LimitedTag | undefined, count: number): number {
    if (!this.limitsIds || tag === undefined || count <= 0 || !hasFiniteSpace(tag)) return 0;
    return tag.tokenHashes !== undefined && tag.tokenHashes.size > 0 ? 0 : count;
  }

  /**
   * An HTTP request of `source` taking `ids` charged IDs (0: none): undefined when it may be
   * served (the IDs charged), else the 429 LIMIT_EXCEEDED to answer (Retry-After: the wait in
   * whole seconds, at least 1), counted in idmint_source_limited_total (idmint_errors_total
   * counts it where it is answered).
   */
  admit(source: string, ids: number, transport: LimitedTransport): IdmintError | undefined {
    const wait = this.rates.admit(sourceKey(source), ids);
    if (wait === 0) return undefined;
    const limit = this.note(source, transport);
    const retryAfter = Math.max(1, Math.ceil(wait / 1000));
    const message =
      limit === 'ids'
        ? `this address took IDs of tags with a finite ID space faster than ${this.opts.finiteIdsPerSecond} a second; retry in ${retryAfter} s`
        : `this address made more than ${this.opts.refusalsPerSecond} refused requests a second; retry in ${retryAfter} s`;
    return new IdmintError('LIMIT_EXCEEDED', message, { retryAfter });
  }

  /**
   * A datagram of `source` taking `ids` charged IDs: true when it may be served (the IDs charged); false when it is
   * dropped, counted.
   */
  admitDatagram(source: string, ids: number): boolean {
    if (this.rates.admit(sourceKey(source), ids) === 0) return true;
    this.counters.errors.inc({ transport: 'udp', code: 'LIMIT_EXCEEDED' });
    this.note(source, 'udp');
    return false;
  }

  /** Gives back charged IDs of a request that took none. */
  refund(source: string, ids: number): void {
    if (ids > 0) this.rates.refund(sourceKey(source), ids);
  }

  /** Charges a refusal answered over HTTP: once its source is over the limit, its next requests are refused (admit). */
  refusedRequest(source: string): void {
    this.rates.refused(sourceKey(source));
  }

  /**
   * Charges a refused datagram of `source`: true when the refusal may be answered; false when
   * the source is over its limit of refusals: the refusal goes unanswered, counted here.
   */
  refusedDatagram(source: string): boolean {
    if (this.rates.refused(sourceKey(source))) return true;
    this.note(source, 'udp');
    return false;
  }

  /** Counts and logs (at most a line a second) a source stopped by a limit; which limit. */
  private note(source: string, transport: LimitedTransport): SourceLimit {
    const limit = this.rates.limitedBy;
    this.counters.limited.inc({ transport, limit });
    const now = Date.now();
    if (now - this.lastLog >= LOG_EVERY_MS) {
      this.log.warn({ transport, source, limit, limited_not_logged: this.unlogged }, 'source over its rate limit');
      this.lastLog = now;
      this.unlogged = 0;
    } else this.unlogged++;
    return limit;
  }
}

/** The node's per-source limits from its settings; undefined when both are 0 (off). */
export function sourceLimitsOf(
  config: Config,
  tags: TagLookup,
  metrics: Metrics,
  log: Pick<Logger, 'warn'>,
): SourceLimits | undefined {
  if (config.sourceMaxFiniteIdsPerSecond === 0 && config.sourceMaxRefusalsPerSecond === 0) return undefined;
  return new SourceLimits(
    {
      finiteIdsPerSecond: config.sourceMaxFiniteIdsPerSecond,
      refusalsPerSecond: config.sourceMaxRefusalsPerSecond,
      burstSeconds: config.sourceBurstSeconds,
    },
    tags,
    { limited: metrics.sourceLimited, errors: metrics.errors },
    log,
  );
}
