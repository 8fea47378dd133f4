// Turns of the event loop for the work of bulk takes (websocket stream and gRPC Take), shared by
// every take of the process. Encoding a block's IDs is the costly part of a take, and a block
// may hold as many IDs as its consumer asked for (up to STREAM_MAX_BLOCK); done in one go it
// would hold every other request of the process (single IDs over HTTP and UDP, gRPC Next,
// Redis replies) for as long. So a take encodes a block a slice at a time (bulk-slices.ts:
// at most SLICE_IDS IDs, SLICE_STRING_IDS of IDs held as strings) and asks for a turn before
// each slice: the takes that asked are served in order of asking, SLICES_PER_TURN slices per
// turn of the event loop across all takes, and the I/O that came meanwhile is served between
// turns (setImmediate runs after the loop's poll phase). With nothing else to do the loop turns
// at once, so a lone take loses little.
import { setImmediate } from 'node:timers';

/** Slices encoded per turn of the event loop, across all takes. */
export const SLICES_PER_TURN = 1;

export class BulkTurns {
  private queue: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perTurn = SLICES_PER_TURN) {}

  /** Resolves when it is this caller's turn to encode a slice. */
  next(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.queue.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.turn);
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    const now = this.queue.splice(0, this.perTurn);
    if (this.queue.length > 0) this.schedule();
    for (const resolve of now) resolve();
  };
}

/** The turns of this process: the websocket stream's takes and gRPC Take calls share them. */
export const processTurns = new BulkTurns();
