// The refills one coalescer asks for, for the (gen, segment) a take answered: a prefetch refill
// when a take that was served whole passed the segment's prefetch point (queued in the
// background, a failure only logged), and an urgent one when the tag is cold or dry and
// requests wait for it (awaited: a refill that cannot be queued fails those requests).
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/metrics.js';
import type { RefillProducer } from '../producer/refill-producer.js';
import type { SegmentRef, TakeResult } from '../store/redis/segments.js';

export class RefillRequests {
  constructor(
    private readonly ref: SegmentRef,
    private readonly producer: RefillProducer,
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
  ) {}

  /** The next segment is wanted soon; nobody waits for it. */
  prefetch(reply: TakeResult): void {
    this.producer
      .request({ ...this.ref, gen: reply.gen, seg: reply.seg, urgent: false })
      .catch((err: Error) =>
        this.log.warn({ tag: this.ref.tag, err: err.message }, 'prefetch refill could not be queued'),
      );
  }

  /** Requests wait for a segment (counted in idmint_refill_waits_total); rejects when it cannot be queued. */
  urgent(reply: TakeResult): Promise<void> {
    this.metrics?.refillWaits.inc({ tag: this.ref.tag });
    return this.producer.request({ ...this.ref, gen: reply.gen, seg: reply.seg, urgent: true });
  }
}
