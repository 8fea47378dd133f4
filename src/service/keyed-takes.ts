// Requests with idempotency keys whose IDs are taken in their keys' own Redis call (a plain
// segment tag of order global, idempotency.ts), batched as the coalescer batches takes: those
// that arrive in one turn of the event loop for one counter go to Redis together, in arrival
// order, in one idem-takes-4.lua call, which answers each of them (its kept answer, its IDs
// taken and kept, a claim, or why not). A call costs the process and Redis far more than one
// request's part in it (the server's identity, expired keys, the write and the reply), so a
// call shared by more requests is cheaper per request. Order holds: every request of a call
// arrived before it was sent, and the script serves them in the order they arrived.
import type { ClaimOrTakeResult, IdempotencyRecords, RecordRef } from '../store/redis/idempotency-records.js';
import type { TakeRequest, TakesArgs } from '../store/redis/scripts.js';

/** Most requests in one call (their replies, up to 1000 IDs each as runs, stay small). */
const MOST_PER_CALL = 64;

/** The counter a request takes from: its shard and scope of the tag's epoch. */
export interface CounterRef {
  readonly shard: number;
  readonly scope: string;
}

type SharedArgs = Omit<TakesArgs, 'recordPrefix' | 'epoch'>;

interface Waiting {
  readonly request: TakeRequest;
  readonly resolve: (result: ClaimOrTakeResult) => void;
  readonly reject: (err: Error) => void;
}

interface Batch {
  readonly ref: RecordRef;
  readonly counter: CounterRef;
  readonly args: SharedArgs;
  readonly waiting: Waiting[];
}

export class KeyedTakes {
  /** The batch each counter (and its shared arguments) is gathering for its next call. */
  private readonly gathering = new Map<string, Batch>();

  constructor(private readonly records: IdempotencyRecords) {}

  /** What idem-takes-4.lua answers for `request`, sent with the others of this turn. */
  claimOrTake(ref: RecordRef, counter: CounterRef, args: SharedArgs, request: TakeRequest): Promise<ClaimOrTakeResult> {
    const id = [
      ref.redis ?? '',
      ref.tag,
      ref.epoch,
      counter.shard,
      counter.scope,
      args.claimMs,
      args.maxKeys,
      args.maxBytes,
      args.retentionMs,
      args.stride,
      args.offset,
    ].join('\n');
    const batch = this.gathering.get(id) ?? this.gather(id, { ref, counter, args, waiting: [] });
    return new Promise((resolve, reject) => {
      batch.waiting.push({ request, resolve, reject });
      if (batch.waiting.length >= MOST_PER_CALL) this.send(id, batch);
    });
  }

  /** Starts gathering a batch under `id`, sent at the end of this turn of the event loop. */
  private gather(id: string, batch: Batch): Batch {
    this.gathering.set(id, batch);
    setImmediate(() => this.send(id, batch));
    return batch;
  }

  /** Sends the batch (once: a full batch goes before its turn ends, and the turn's end finds it sent). */
  private send(id: string, batch: Batch): void {
    if (this.gathering.get(id) !== batch) return;
    this.gathering.delete(id);
    const { waiting } = batch;
    this.records
      .claimOrTakeAll(
        batch.ref,
        batch.counter,
        batch.args,
        waiting.map((w) => w.request),
      )
      .then(
        (replies) => {
          for (const [index, waiter] of waiting.entries()) waiter.resolve(replies[index]);
        },
        (err: Error) => {
          for (const waiter of waiting) waiter.reject(err);
        },
      );
  }
}
