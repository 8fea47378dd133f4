// Binary block frames of one stream, used again once written out. A consumer taking binary
// blocks as fast as it can would otherwise have a new frame allocated for every block (up to
// STREAM_MAX_BLOCK x 8 bytes, memory outside V8's heap): at hundreds of megabytes a second that
// memory's pressure makes V8 collect garbage far more often, and each collection pauses every
// other request of the process. A frame comes back only once the socket has written it (ws calls
// the send's callback then), so the bytes a consumer reads are always its block's.
/** Frames kept for reuse at most: one being written while the next is encoded, and one spare. */
const MOST_KEPT = 2;

export class FramePool {
  private readonly kept: Buffer[] = [];

  /** A buffer of `bytes` bytes at offset 0 of its own memory: a kept one of that size, else a new one. */
  take(bytes: number): Buffer {
    const at = this.kept.findIndex((frame) => frame.length === bytes);
    if (at === -1) return Buffer.allocUnsafeSlow(bytes);
    const [frame] = this.kept.splice(at, 1);
    return frame;
  }

  /** A frame the socket has written out: kept for a later frame of its size (the oldest kept goes when full). */
  give(frame: Buffer): void {
    if (this.kept.length >= MOST_KEPT) this.kept.shift();
    this.kept.push(frame);
  }

  /** Lets every kept frame go (no take is running: a socket that waits holds no block's memory). */
  clear(): void {
    this.kept.length = 0;
  }

  /** How many frames are kept (for tests). */
  get size(): number {
    return this.kept.length;
  }
}
