// A bulk consumer of idmint's gRPC Take (idmint.v1.Ids/Take) that takes as fast as it can: takes
// of `count` IDs, one after another, until it is stopped, each block as inclusive runs of
// consecutive IDs (TakeBlock.ranges, the fast form plain segment tags answer, as the websocket
// consumer takes binary blocks) or, `ids`, as a decimal string per ID (TakeBlock.ids, the form
// every tag can answer). It counts the IDs of every block and checks that each run or block
// starts above where the one before ended (a take of an `order: node` tag answers ascending IDs)
// and that a block of strings holds no more IDs than its span; one that does not is a failure,
// as is a call that ends in an error other than the cancel of stop().
import { status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { IdsClient, type Block } from '../../tools/grpc-client.js';
import { BulkTaker } from './consumer.js';

export class GrpcBulkConsumer extends BulkTaker {
  private call?: ClientReadableStream<Block>;

  private constructor(
    private readonly client: IdsClient,
    private readonly ranges: boolean,
  ) {
    super();
  }

  /** A consumer of the Take of the gRPC server at `address` (127.0.0.1:port), taking runs or `ids`. */
  static open(address: string, form: 'ranges' | 'ids'): Promise<GrpcBulkConsumer> {
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    return Promise.resolve(new GrpcBulkConsumer(new IdsClient(port), form === 'ranges'));
  }

  /** Starts taking; resolves once the first IDs have come. */
  async start(tag: string, count: number, block: number): Promise<void> {
    let first: (() => void) | undefined;
    let failed: ((e: Error) => void) | undefined;
    const came = new Promise<void>((resolve, reject) => ((first = resolve), (failed = reject)));
    this.running = (async () => {
      while (!this.stopped) {
        const call = this.client.stub.Take({ tag, count: String(count), block, ranges: this.ranges });
        this.call = call;
        call.on('data', (b: Block) => {
          if (this.ranges) for (const r of b.ranges) this.checkRun(BigInt(r.first), BigInt(r.last));
          else this.checkIds(b.ids);
          first?.();
        });
        const error = await new Promise<ServiceError | undefined>((resolve) => {
          call.once('end', () => resolve(undefined));
          call.once('error', resolve);
        });
        if (error && !(this.stopped && error.code === status.CANCELLED)) {
          this.failures++;
          failed?.(error);
          return;
        }
      }
    })();
    await came;
  }

  private checkRun(first: bigint, last: bigint): void {
    this.tally(first, last, Math.max(0, Number(last - first + 1n)));
  }

  private checkIds(ids: readonly string[]): void {
    const n = ids.length;
    if (n > 0) this.tally(BigInt(ids[0]), BigInt(ids[n - 1]), n);
  }

  /** Stops taking: the call is cancelled, and what was taken but not sent is a gap, never reissued. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.call?.cancel();
    await this.running;
    this.client.stub.close();
  }
}
