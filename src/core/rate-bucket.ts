// Per-source token buckets: how fast one source address may take IDs of tags whose ID space is
// finite, and how fast it may make requests that are refused. Each source has two buckets, each
// holding up to `burstSeconds` of its rate and refilled continuously (lazily, when the source is
// next seen). A request is served when its buckets allow it: the refusal bucket holds at least
// one refusal, and the ID bucket holds the IDs asked for (a batch larger than the bucket is
// served when the bucket is full, leaving it in debt, so the long-run rate holds for any batch
// size). IDs are charged when the request is admitted and given back when it takes none; a
// refusal is charged when it is made. A limit of 0 per second is off.
//
// The table keeps at most maxSources sources, in the order they were first charged; a new one
// past that drops the oldest (its buckets start full again if it comes back), so a flood of
// addresses costs bounded memory. A source that was never charged has no entry: checking it
// costs one map lookup and allocates nothing. Pure: the clock is given (monotonic milliseconds).

/** Which bucket stopped a request. */
export type SourceLimit = 'ids' | 'refusals';

export interface SourceRateOptions {
  /** IDs of tags with a finite space a source may take per second; 0: no limit. */
  readonly idsPerSecond: number;
  /** Refused requests a source may make per second; 0: no limit. */
  readonly refusalsPerSecond: number;
  /** Each bucket holds this many seconds of its rate (the burst a source may spend at once). */
  readonly burstSeconds: number;
  /** Sources kept at most (default MAX_SOURCES). */
  readonly maxSources?: number;
  /** Monotonic milliseconds (default performance.now). */
  readonly now?: () => number;
}

/** Sources the table keeps by default: about 130 bytes each. */
export const MAX_SOURCES = 50_000;

/** One source's two buckets: their levels and when each was last refilled. */
class Levels {
  constructor(
    public ids: number,
    public refusals: number,
    public at: number,
  ) {}
}

/** One bucket's rate in tokens per ms and its size; perMs 0: no limit. */
class Rate {
  readonly perMs: number;
  readonly size: number;
  constructor(perSecond: number, burstSeconds: number) {
    this.perMs = perSecond / 1000;
    this.size = perSecond * burstSeconds;
  }
}

export class SourceRates {
  private readonly table = new Map<string, Levels>();
  private readonly ids: Rate;
  private readonly refusals: Rate;
  private readonly maxSources: number;
  private readonly now: () => number;
  /** The bucket that stopped the last request admit() or refused() did not let through. */
  limitedBy: SourceLimit = 'ids';

  constructor(opts: SourceRateOptions) {
    this.ids = new Rate(opts.idsPerSecond, opts.burstSeconds);
    this.refusals = new Rate(opts.refusalsPerSecond, opts.burstSeconds);
    this.maxSources = opts.maxSources ?? MAX_SOURCES;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Sources in the table. */
  get size(): number {
    return this.table.size;
  }

  /**
   * A request of `source` that would take `ids` IDs of finite tags (0: none): 0 when it may be
   * served, the IDs charged; else the milliseconds until it may (at least 1), nothing charged,
   * and limitedBy says which bucket stopped it.
   */
  admit(source: string, ids: number): number {
    const chargeIds = ids > 0 && this.ids.perMs > 0;
    let levels = this.table.get(source);
    if (levels === undefined) {
      if (!chargeIds) return 0;
      levels = this.add(source);
    } else this.refill(levels);
    if (this.refusals.perMs > 0 && levels.refusals < 1)
      return this.wait('refusals', this.refusals, 1 - levels.refusals);
    if (!chargeIds) return 0;
    const need = Math.min(ids, this.ids.size);
    if (levels.ids < need) return this.wait('ids', this.ids, need - levels.ids);
    levels.ids -= ids;
    return 0;
  }

  /** Gives back IDs admit() charged for a request that took none. */
  refund(source: string, ids: number): void {
    if (ids <= 0 || this.ids.perMs === 0) return;
    const levels = this.table.get(source);
    if (levels === undefined) return;
    this.refill(levels);
    levels.ids = Math.min(this.ids.size, levels.ids + ids);
  }

  /**
   * Charges a refused request of `source`. True when it may be answered: its refusal bucket
   * held one; false when the source is over its limit (nothing charged: what is not answered
   * costs nothing), limitedBy then 'refusals'.
   */
  refused(source: string): boolean {
    if (this.refusals.perMs === 0) return true;
    let levels = this.table.get(source);
    if (levels === undefined) levels = this.add(source);
    else this.refill(levels);
    if (levels.refusals < 1) {
      this.limitedBy = 'refusals';
      return false;
    }
    levels.refusals -= 1;
    return true;
  }

  private add(source: string): Levels {
    if (this.table.size >= this.maxSources) this.table.delete(this.table.keys().next().value as string);
    const levels = new Levels(this.ids.size, this.refusals.size, this.now());
    this.table.set(source, levels);
    return levels;
  }

  private refill(levels: Levels): void {
    const now = this.now();
    const ms = now - levels.at;
    if (ms <= 0) return;
    levels.at = now;
    if (levels.ids < this.ids.size) levels.ids = Math.min(this.ids.size, levels.ids + ms * this.ids.perMs);
    if (levels.refusals < this.refusals.size)
      levels.refusals = Math.min(this.refusals.size, levels.refusals + ms * this.refusals.perMs);
  }

  private wait(limit: SourceLimit, rate: Rate, missing: number): number {
    this.limitedBy = limit;
    return Math.max(1, Math.ceil(missing / rate.perMs));
  }
}

/**
 * The key a source address is limited under: an IPv4 address as it is; an IPv6 address by its
 * /64, the block one host or one link is given (a host that may pick any address of its /64
 * would otherwise pick a fresh bucket per request). IPv4-mapped IPv6 addresses (::ffff:a.b.c.d)
 * stay whole: they are IPv4 clients of a dual-stack listener.
 */
export function sourceKey(address: string): string {
  if (!address.includes(':') || address.includes('.')) return address;
  const zone = address.indexOf('%');
  const ipv6 = (zone < 0 ? address : address.slice(0, zone)).toLowerCase();
  const gap = ipv6.indexOf('::');
  let groups: string[];
  if (gap < 0) groups = ipv6.split(':');
  else {
    const head = gap === 0 ? [] : ipv6.slice(0, gap).split(':');
    const tail = gap + 2 === ipv6.length ? [] : ipv6.slice(gap + 2).split(':');
    groups = [...head, ...new Array<string>(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
