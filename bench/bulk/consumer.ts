// A bulk consumer of idmint's websocket stream (GET /v1/stream) that takes as fast as it can:
// binary takes of `count` IDs, one after another, until it is stopped. It reads the count of
// every frame and checks that the IDs of each frame are above those of the one before (a take
// of an `order: node` tag answers ascending IDs); a frame that is not is a failure.
import WebSocket from 'ws';

/** A bulk consumer of either transport (this one, or the gRPC one of grpc-consumer.ts). */
export interface BulkTaker {
  readonly ids: number;
  readonly failures: number;
  start(tag: string, count: number, block: number): Promise<void>;
  stop(): Promise<void>;
}

export class BulkConsumer implements BulkTaker {
  /** IDs received so far. */
  ids = 0;
  /** Frames whose IDs were not above the ones before, or error replies. */
  failures = 0;
  private last = 0n;
  private stopped = false;
  private running?: Promise<void>;

  private constructor(private readonly ws: WebSocket) {}

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
        const lo = data.readBigUInt64LE(8);
        if (lo <= this.last) this.failures++;
        this.last = data.readBigUInt64LE(8 + 8 * (n - 1));
        this.ids += n;
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
