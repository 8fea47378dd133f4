// A stream socket's messages written a fragment at a time while single requests are being
// served. Writing a block's frame is one system call that copies it into the kernel and, on a
// local connection, runs the reader's side of TCP too: a binary block of 50,000 IDs (400 KB) held
// the event loop for 0.2 to 0.7 ms, longer than all of its slices' encoding, and every single
// request that came meanwhile waited for it. So while single requests come
// (BulkTurns.servingSingles()), a message larger than FRAGMENT_BYTES is sent as websocket
// fragments (RFC 6455 5.4: frames with FIN clear, then continuations), each written in a turn of
// the bulk turns of its own (../bulk-turns.ts), charged to their window like a slice; a take alone
// writes whole messages, fewer calls for the same bytes. The reader gets one message, the same
// bytes: fragmentation is the transport's, below what any websocket client hands its user.
// A binary block of counter runs is written as it is encoded: once its encoded bytes not yet
// written reach FRAGMENT_BYTES, they go as a fragment in the turn of the slice that completed
// them (hold(), piece(), release()), so its write adds no turns of its own.
// A fragmented message must not be interleaved with another data message on its socket, so while
// one is being written every other message of the socket waits for its end: blocks of other takes
// wait for the gate, replies to refused control messages are held and sent right after it.
import type { WebSocket } from 'ws';
import { SHARED_SLICE_IDS } from '../bulk-slices.js';
import type { BulkTurns } from '../bulk-turns.js';

/**
 * Most bytes of a message written in one turn: four slices' binary IDs beside single requests
 * (4 x 1024 x 8, 32 KiB). A write's cost is mostly the call's, not its bytes': in
 * `npm run bench:ws-fragments` a send of 32 KiB held the serving thread well under twice as long
 * as one of 8 KiB, for four times the bytes, so a block costs the process far less in writes for
 * a wait of a few microseconds more in the single request that comes during one.
 */
export const FRAGMENT_BYTES = 4 * 8 * SHARED_SLICE_IDS;

export class FragmentedWrites {
  /** Resolves when the message being written in fragments is done (undefined: none is). */
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  private readonly held: [text: string, done: () => void][] = [];

  constructor(
    private readonly socket: WebSocket,
    private readonly turns: BulkTurns,
    private readonly gone: () => boolean,
  ) {}

  /** Whether a message is being written in fragments now (others must wait for gateOpen()). */
  get busy(): boolean {
    return this.gate !== undefined;
  }

  /** Resolves when no message is being written in fragments. */
  async gateOpen(): Promise<void> {
    while (this.gate !== undefined) await this.gate;
  }

  /** A short text sent now, or right after the message being written in fragments. */
  sendText(text: string, done: () => void): void {
    if (this.gate !== undefined) this.held.push([text, done]);
    else this.socket.send(text, done);
  }

  /**
   * Writes a message in this turn (the caller holds one of the bulk turns and the gate is open),
   * a large one's first fragment now and each next in a turn of its own. `done` runs once the
   * socket wrote the whole message out; false when the socket went away before its last fragment.
   */
  async write(frame: Buffer | string, done: () => void): Promise<boolean> {
    const binary = typeof frame !== 'string';
    const size = binary ? frame.length : Buffer.byteLength(frame);
    if (size <= FRAGMENT_BYTES || !this.turns.servingSingles()) {
      this.turns.timed(() => this.socket.send(frame, { binary }, done));
      return true;
    }
    // A text message is cut at byte offsets: its UTF-8 bytes, made only when it is cut.
    const bytes = binary ? frame : Buffer.from(frame);
    this.close();
    try {
      for (let at = 0; at < bytes.length; at += FRAGMENT_BYTES) {
        if (at > 0) {
          await this.turns.next();
          if (this.gone()) return false;
        }
        const end = Math.min(bytes.length, at + FRAGMENT_BYTES);
        const fin = end === bytes.length;
        this.turns.timed(() => this.socket.send(bytes.subarray(at, end), { binary, fin }, fin ? done : undefined));
      }
      return true;
    } finally {
      this.release();
    }
  }

  /**
   * Holds the socket for a message its caller writes a piece at a time as it encodes it
   * (piece()), once no other message is being written; every other message waits for release().
   */
  async hold(): Promise<void> {
    // Checked and closed in one step after each wait: two holders never both pass.
    while (this.gate !== undefined) await this.gate;
    this.close();
  }

  /** Writes a piece of the held message, `fin` on its last; `done` once the socket wrote it out. */
  piece(bytes: Buffer, fin: boolean, done?: () => void): void {
    this.socket.send(bytes, { binary: true, fin }, done);
  }

  /** Whether a piece that is not a message's last should be written now (single requests are being served). */
  cutting(): boolean {
    return this.turns.servingSingles();
  }

  /** Ends a message written in fragments: the gate opens and the replies held meanwhile are sent. */
  release(): void {
    const open = this.open;
    this.gate = undefined;
    this.open = undefined;
    open?.();
    const texts = this.held.splice(0);
    if (this.gone()) return;
    for (const [text, done] of texts) this.socket.send(text, done);
  }

  private close(): void {
    this.gate = new Promise<void>((resolve) => {
      this.open = resolve;
    });
  }
}
