// Turns of the event loop for the blocks of gRPC Take calls. Building a block (its IDs encoded)
// is the costly part of a take; a call whose client reads fast could otherwise build block after
// block in one turn of the event loop (as many as its buffer has room for) while every other
// request waits. Before each block a call asks for a turn: the calls that asked are served in
// order of asking, at most BLOCKS_PER_TURN blocks per turn of the event loop, so other requests
// (HTTP, gRPC Next, Redis replies) are served between blocks however many takes run. With
// nothing else to do the loop turns at once, so a lone take loses nothing.
import { setImmediate } from 'node:timers';

/** Blocks built per turn of the event loop, across all calls. */
export const BLOCKS_PER_TURN = 1;

export class TakeTurns {
  private queue: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly perTurn = BLOCKS_PER_TURN) {}

  /** Resolves when it is this caller's turn to build a block. */
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
