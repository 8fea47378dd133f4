// A bulk consumer of idmint's websocket stream (GET /v1/stream) that takes as fast as it can:
// binary takes of `count` IDs, one after another, until it is stopped. It reads the count of
// every frame and checks that the IDs of each frame are above those of the one before (a take
// of an `order: node` tag answers ascending IDs); a frame that is not is a failure.
import WebSocket from 'ws';

/**
 * A bulk consumer of either transport (this one, or the gRPC one of grpc-consumer.ts): the IDs
 * it received and its failures (IDs not above the ones before, error replies, failed calls).
 */
export abstract class BulkTaker {
  ids = 0;
  failures = 0;
  protected last = 0n;
  protected stopped = false;
  protected running?: Promise<void>;

  /** Starts taking; resolves once the first IDs have come. */
  abstract start(tag: string, count: number, block: number): Promise<void>;
  /** Stops taking: what was taken but not sent is a gap, never reissued. */
  abstract stop(): Promise<void>;

  /** Counts `n` ascending IDs from `first` to `last`: a failure unless above the ones before and spanning `n`. */
  protected tally(first: bigint, last: bigint, n: number): void {
    if (first <= this.last || last < first || last - first + 1n < BigInt(n)) this.failures++;
    this.last = last;
    this.ids += n;
  }
}

export class BulkConsumer extends BulkTaker {
  private constructor(private readonly ws: WebSocket) {
    super();
  }

  static open(url: string): Promise<BulkConsumer> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new BulkConsumer(ws)));
      ws.once('error', reject);
    });
  }

  /** Starts taking; resolves once the first IDs have come. */
  async start(tag: string, count: number, block: number): Promise<void> {
    let first: (() => void) | undefined;
    const came = new Promise<void>((resolve) => (first = resolve));
    let done: (() => void) | undefined;
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        const n = data.readUInt32LE(4);
        this.tally(data.readBigUInt64LE(8), data.readBigUInt64LE(8 + 8 * (n - 1)), n);
        first?.();
        return;
      }
      const m = JSON.parse(data.toString()) as { op: string };
      if (m.op === 'error') this.failures++;
      done?.();
    });
    this.ws.once('close', () => {
      this.stopped = true;
      done?.();
    });
    this.running = (async () => {
      for (let req = 1; !this.stopped; req++) {
        const ended = new Promise<void>((resolve) => (done = resolve));
        this.ws.send(JSON.stringify({ op: 'take', req, tag, count, block, format: 'binary' }));
        await ended;
      }
    })();
    await came;
  }

  /** Stops taking: the socket closes, and what was taken but not sent is a gap, never reissued. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.ws.close();
    await this.running;
  }
}
