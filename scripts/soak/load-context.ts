// What every load loop of the soak shares: where to reach the server, when to stop, and where
// to put what it saw (IDs, order checks, latencies, failures).
import { IdBook, type RunLog } from './ids.js';
import { Latencies } from './latency.js';
import { OrderWatch } from './order-watch.js';
import type { SoakTag } from './tags.js';

export interface Endpoints {
  readonly url: string;
  readonly udpPort: number;
  readonly grpcPort: number;
}

/** What one client keeps of one tag: its IDs, and its order check where the tag promises order. */
export class Track {
  constructor(
    readonly tag: SoakTag,
    readonly log: RunLog,
    readonly order: OrderWatch | undefined,
  ) {}

  /** An answer's IDs (decimal strings), sent and answered at (performance.now()). */
  answer(sent: number, answered: number, ids: readonly string[]): void {
    if (ids.length === 0) return;
    let min = BigInt(ids[0]);
    let max = min;
    for (const s of ids) {
      const id = BigInt(s);
      this.log.add(id);
      if (id < min) min = id;
      if (id > max) max = id;
    }
    this.order?.add(sent, answered, min, max);
  }
}

export class LoadContext {
  readonly ids = new IdBook();
  readonly latency = new Latencies();
  readonly orders: OrderWatch[] = [];
  /** Failed requests by kind and code. */
  readonly failures = new Map<string, number>();
  /** The first failures, for the report. */
  readonly failureExamples: string[] = [];
  private stopped = false;

  constructor(
    readonly at: Endpoints,
    /** Scales every loop's request rate. */
    readonly rate: number,
  ) {}

  get running(): boolean {
    return !this.stopped;
  }

  stop(): void {
    this.stopped = true;
  }

  /** A client's log of a tag, with an order check when the tag is ordered. */
  track(client: string, tag: SoakTag): Track {
    let order: OrderWatch | undefined;
    if (tag.ordered) {
      order = new OrderWatch(`${client} ${tag.tag}`);
      this.orders.push(order);
    }
    return new Track(tag, this.ids.log(tag.tag), order);
  }

  /** One track per tag for a client. */
  tracks(client: string, tags: readonly SoakTag[]): Track[] {
    return tags.map((t) => this.track(client, t));
  }

  fail(kind: string, code: string, detail: string): void {
    const key = `${kind} ${code}`;
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    if (this.failureExamples.length < 5) this.failureExamples.push(`${key}: ${detail.slice(0, 300)}`);
  }

  failed(): number {
    let n = 0;
    for (const v of this.failures.values()) n += v;
    return n;
  }
}
