// One Take call: a bulk take served as a stream of blocks, with the websocket stream's
// semantics (docs/STREAM.md): chunks taken from the store one ahead of what is sent, blocks of
// at most `block` IDs in ascending order, never more than STREAM_MAX_BUFFER_BYTES of the call's
// blocks, nor GRPC_MAX_BUFFERED_BYTES of all calls' (take-budget.ts), written and not yet taken
// by HTTP/2 (whose flow control follows the client's reading), so a slow reader slows its own
// stream and a call not read takes no more IDs. Blocks are encoded as they are built, so that
// what waits is their bytes (take-encode.ts), a slice at a time, each slice and each write in a
// turn of the event loop of its own, shared with every take of the process (../bulk-turns.ts,
// ../bulk-slices.ts): other requests wait at most one slice, however large the blocks. Once the
// call is cancelled nothing more is taken; a chunk taken and not sent is a gap, never reissued.
import type { ServerWritableStream } from '@grpc/grpc-js';
import { idsFromRuns } from '../../core/id-runs.js';
import { openBulkTake, takeChunks, type BlockSink, type BulkTake, type Chunk } from '../../service/bulk-take.js';
import type { IdService } from '../../service/id-service.js';
import type { TakeBlock, TakeRequest } from './requests.js';
import type { Bound, TakeBudget } from './take-budget.js';
import { slicer, type Slicer } from '../bulk-slices.js';
import type { BulkTurns } from '../bulk-turns.js';
import { slicedIdsBlock, slicedIdsRanges, slicedRunsBlock } from './sliced-blocks.js';

/** A gRPC client's default limit on a received message is 4 MiB: blocks stay below it. */
export const MAX_BLOCK_BYTES = 4 * 1024 * 1024 - 64 * 1024;

export interface TakeCallOptions {
  readonly maxBufferBytes: number;
  /** A block's message bytes (the service passes them through: proto.ts). */
  readonly encode: (block: TakeBlock) => Buffer;
  /** Bytes written and not yet taken by HTTP/2 across all calls (GRPC_MAX_BUFFERED_BYTES). */
  readonly budget: TakeBudget;
  /** Turns of the event loop for slices and writes of blocks, shared by every take of the process. */
  readonly turns: BulkTurns;
  /** IDs of a segment tag taken from the store at a time (at least the take's block). */
  readonly chunkIds: number;
  /** True once the server is shutting down: the take stops at its next block. */
  readonly closing: () => boolean;
}

/** Why a take stopped before its last block without an error of the ID service. */
export type Stopped = 'cancelled' | 'closing';

/** The serialized size of a block of string IDs (tag, length and bytes per ID). */
function idsBytes(ids: readonly string[], start: number, end: number): number {
  let bytes = 0;
  for (let i = start; i < end; i++) bytes += ids[i].length + 2;
  return bytes;
}

export class TakeCall {
  private queued = 0;
  /** The take being served: its tag and token are checked again before each block. */
  private take: BulkTake | undefined;
  private waiters: (() => void)[] = [];
  /** Slices a block's encoding into turns; stops once the call is cancelled or the server closes. */
  private readonly slice: Slicer;
  private readonly wake = (): void => {
    const ws = this.waiters;
    this.waiters = [];
    for (const waiter of ws) waiter();
  };

  constructor(
    private readonly call: ServerWritableStream<TakeRequest, TakeBlock>,
    private readonly ids: IdService,
    private readonly opts: TakeCallOptions,
  ) {
    call.on('cancelled', this.wake);
    this.slice = slicer(opts.turns, () => this.stopped !== undefined);
  }

  /** Wakes a take waiting for room, so that it sees the server closing. */
  interrupt(): void {
    this.wake();
  }

  private get stopped(): Stopped | undefined {
    if (this.call.cancelled) return 'cancelled';
    if (this.opts.closing()) return 'closing';
    return undefined;
  }

  /**
   * Waits until `bytes` more fit the call's bound and the process's budget (a call with nothing
   * waiting may always write one block); the reason to stop instead, if any.
   */
  private async room(bytes: number): Promise<Stopped | undefined> {
    let waited = false;
    for (;;) {
      const stopped = this.stopped;
      if (stopped !== undefined) return stopped;
      if (this.queued === 0) return undefined;
      const bound: Bound | undefined =
        this.queued + bytes > this.opts.maxBufferBytes ? 'call' : this.opts.budget.fits(bytes) ? undefined : 'process';
      if (bound === undefined) return undefined;
      if (!waited) this.opts.budget.waited(bound);
      waited = true;
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        if (bound === 'process') this.opts.budget.onRelease(this.wake);
      });
    }
  }

  /**
   * Writes a block once it fits, in a turn of the event loop of its own; the reason to stop
   * instead, if any (undefined as the message: the take stopped while encoding it). A token
   * revoked since the last block throws the tag's refusal (NOT_FOUND) instead: the take ends
   * before this block.
   */
  private async send(message: Buffer | undefined): Promise<Stopped | undefined> {
    if (message === undefined) return this.stopped;
    const bytes = message.length;
    for (;;) {
      const stopped = await this.room(bytes);
      if (stopped !== undefined) return stopped;
      await this.opts.turns.next();
      if (this.stopped !== undefined) return this.stopped;
      // Another call may have taken the room meanwhile.
      if (this.queued === 0 || (this.queued + bytes <= this.opts.maxBufferBytes && this.opts.budget.fits(bytes))) break;
    }
    const take = this.take;
    if (take !== undefined) await this.ids.recheck(take.tag, take.token);
    this.queued += bytes;
    this.opts.budget.hold(bytes);
    // The callback runs once HTTP/2 has taken the message (after flow control let it through).
    // Writing a large message is bulk work too: charged to the turns' window.
    this.opts.turns.timed(() =>
      (this.call as unknown as ServerWritableStream<TakeRequest, Buffer>).write(message, () => {
        this.queued -= bytes;
        this.opts.budget.release(bytes);
        this.wake();
      }),
    );
    this.opts.turns.sent();
    return undefined;
  }

  /**
   * Waits for room for about `bytes` more; the reason to stop instead, if any. Called before a
   * block is built, so that a waiting take holds no block.
   */
  private ready(bytes: number): Promise<Stopped | undefined> {
    return this.room(Math.min(bytes, this.opts.maxBufferBytes));
  }

  private sendBlock(block: TakeBlock): Promise<Stopped | undefined> {
    return this.send(this.opts.encode(block));
  }

  /**
   * Serves the take; resolves when every block was written, or with why it stopped. Errors of the ID service reject.
   */
  async run(take: BulkTake): Promise<Stopped | undefined> {
    try {
      return await this.serve(take);
    } finally {
      this.opts.budget.forget(this.wake);
    }
  }

  private async serve(take: BulkTake): Promise<Stopped | undefined> {
    this.take = take;
    const source = await openBulkTake(this.ids, take);
    for await (const chunk of takeChunks(
      source,
      take,
      this.opts.chunkIds,
      () => this.stopped !== undefined,
      this.opts.turns.timed,
    )) {
      const stopped = await this.emit(take, chunk);
      if (stopped !== undefined) return stopped;
    }
    return this.stopped;
  }

  private emit(take: BulkTake, chunk: Chunk): Promise<Stopped | undefined> {
    return chunk.send(take.block, this.sink(take));
  }

  /** Writes a take's blocks as messages of its format. */
  private sink(take: BulkTake): BlockSink<Stopped> {
    const ranges = take.format === 'ranges';
    return {
      runs: async (runs, count, packing) => {
        const stopped = await this.ready(ranges ? 64 : 22 * count);
        if (stopped !== undefined) return stopped;
        if (ranges)
          return this.sendBlock({
            ranges: runs.map(([first, last]) => ({ first: String(first), last: String(last) })),
          });
        // Written from the runs; as strings when that cannot be (IDs from 2^53, a block too large to send whole).
        const message = await slicedRunsBlock(this.slice, runs, count, packing, MAX_BLOCK_BYTES);
        if (message === 'not-from-runs') return this.sendIds(idsFromRuns(runs, count, packing), 0, count);
        return this.send(message);
      },
      ids: async (ids, start, end) => {
        const stopped = await this.ready(ranges ? 64 : idsBytes(ids, start, end));
        if (stopped !== undefined) return stopped;
        if (!ranges) return this.sendIds(ids, start, end);
        const runs = await slicedIdsRanges(this.slice, ids, start, end);
        return runs === undefined
          ? this.stopped
          : this.sendBlock({ ranges: runs.map(([first, last]) => ({ first, last })) });
      },
    };
  }

  /** ids[start, end) as one block, or as several when one would pass a client's message limit. */
  private async sendIds(ids: readonly string[], start: number, end: number): Promise<Stopped | undefined> {
    const bytes = idsBytes(ids, start, end);
    if (bytes > MAX_BLOCK_BYTES && end - start > 1) {
      const mid = start + Math.ceil((end - start) / 2);
      return (await this.sendIds(ids, start, mid)) ?? this.sendIds(ids, mid, end);
    }
    return this.send(await slicedIdsBlock(this.slice, ids, start, end, this.opts.encode));
  }
}
