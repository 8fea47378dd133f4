// One websocket of the stream: reads control messages, runs the takes in flight, and sends
// their blocks without ever letting the socket's unsent bytes grow past the configured bound
// (a take waits for the socket to drain, so a slow reader slows only its own stream).
// IDs are taken a chunk at a time, one chunk ahead of what is being sent; once the socket
// closes nothing more is taken, and what was taken but not sent is a gap, never reissued.
// A block is encoded a slice at a time, each slice in a turn of the event loop of its own, and
// written a fragment per turn (../bulk-turns.ts, shared with gRPC Take; fragmented-writes.ts):
// however large the blocks a consumer asks for, and though its socket has room, every other
// request of the process (single IDs over HTTP and UDP) waits at most one slice or fragment of a
// take, not a block or a take.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { RangeQueue } from '../../core/ranges.js';
import type { IdService } from '../../service/id-service.js';
import { IdmintError, type ErrorCode } from '../../errors.js';
import { noteFailure, type ErrorCounter } from '../error-policy.js';
import { rangesFromRuns } from './encode.js';
import {
  slicedBinaryFromDecimals,
  slicedBinaryFromRuns,
  slicedJsonFromRuns,
  slicedJsonFromStrings,
  slicedRangesFromDecimals,
} from './sliced-frames.js';
import { FramePool } from './frame-pool.js';
import { FRAGMENT_BYTES, FragmentedWrites } from './fragmented-writes.js';
import { slicer, type Slicer } from '../bulk-slices.js';
import type { BulkTurns } from '../bulk-turns.js';
import { ControlError, doneMessage, errorMessage, parseControl, takeError, type TakeMessage } from './protocol.js';
import { openBulkTake, takeChunks, type BlockSink, type BulkLimits, type Chunk } from '../../service/bulk-take.js';
import type { Packing } from '../../core/layout.js';

export interface SessionOptions {
  readonly limits: BulkLimits;
  readonly maxInFlight: number;
  readonly maxBufferBytes: number;
  /** IDs of a segment tag taken from the store at a time (at least the take's block). */
  readonly chunkIds: number;
  /** Turns of the event loop for slices and writes of blocks, shared by every take of the process. */
  readonly turns: BulkTurns;
  /** idmint_errors_total: every refusal is counted (and logged) through noteFailure. */
  readonly errors: ErrorCounter;
  /**
   * The client token of the upgrade request's headers (X-Idmint-Token or Authorization: Bearer,
   * as on every HTTP route): the token of each take that names none of its own.
   */
  readonly upgradeToken?: string;
}

/** Why a take's blocks stop: the socket is gone. */
type Gone = 'gone';

/** Re-check the buffered amount at least this often while waiting (a frame without a callback may drain it). */
const DRAIN_POLL_MS = 20;
const OPEN = 1;
/** Replies to refused messages may exceed the buffer bound by this much (blocks never do). */
const REPLY_SLACK_BYTES = 64 * 1024;

const byteSize = (frame: Buffer | string): number =>
  typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;

export class StreamSession {
  private readonly inFlight = new Set<number>();
  private drainWaiters: (() => void)[] = [];
  private closed = false;
  private readonly onSent = (): void => this.wake();
  /** Binary frames written out, used again for the next blocks (frame-pool.ts). */
  private readonly frames = new FramePool();
  private readonly memory = (bytes: number): Buffer => this.frames.take(bytes);
  /** Slices a block's encoding into turns; stops once the socket is gone. */
  private readonly slice: Slicer;
  /** The socket's messages, a large one written a fragment per turn (fragmented-writes.ts). */
  private readonly writes: FragmentedWrites;

  constructor(
    private readonly socket: WebSocket,
    private readonly ids: IdService,
    private readonly opts: SessionOptions,
    private readonly log: FastifyBaseLogger,
  ) {
    this.slice = slicer(opts.turns, () => this.gone);
    this.writes = new FragmentedWrites(socket, opts.turns, () => this.gone);
  }

  onMessage(data: Buffer, isBinary: boolean): void {
    if (this.closed) return;
    let take: TakeMessage;
    try {
      take = parseControl(data, isBinary, this.opts.limits);
    } catch (err) {
      const error =
        err instanceof ControlError ? err : new ControlError(null, 'INVALID_ARGUMENT', 'unreadable control message');
      // A faulty message whose req a take in flight holds is not answered under that req: the
      // client would take the error for the end of that take.
      const req = error.req !== null && this.inFlight.has(error.req) ? null : error.req;
      this.refuse(req, error.code, error.message);
      return;
    }
    if (this.inFlight.has(take.req)) {
      // Not answered under that req: the take in flight owns it.
      this.refuse(
        null,
        'INVALID_ARGUMENT',
        `req ${take.req} is already in flight on this socket; use a new req per take`,
      );
      return;
    }
    if (this.inFlight.size >= this.opts.maxInFlight) {
      this.refuse(
        take.req,
        'LIMIT_EXCEEDED',
        `at most ${this.opts.maxInFlight} takes may be in flight on one socket; wait for a "done"`,
      );
      return;
    }
    if (take.token === undefined && this.opts.upgradeToken !== undefined)
      take = { ...take, token: this.opts.upgradeToken };
    this.inFlight.add(take.req);
    void this.run(take).finally(() => {
      this.inFlight.delete(take.req);
      // A socket with no take running holds no frame's memory.
      if (this.inFlight.size === 0) this.frames.clear();
    });
  }

  /** A binary frame the socket has written out: its memory serves a later frame of a running take. */
  private written(frame: Buffer): void {
    if (this.inFlight.size > 0) this.frames.give(frame);
    this.wake();
  }

  /** A control message refused: counted and answered under req (null: under none). */
  private refuse(req: number | null, code: ErrorCode, message: string): void {
    const error = noteFailure('stream', new IdmintError(code, message), this.log, this.opts.errors);
    this.reply(errorMessage(req, error.code, error.message));
  }

  /** The socket closed: takes stop at their next step and nothing more is taken. */
  onClose(): void {
    this.closed = true;
    this.wake();
  }

  private get gone(): boolean {
    return this.closed || this.socket.readyState !== OPEN;
  }

  private wake(): void {
    if (this.drainWaiters.length === 0) return;
    const ws = this.drainWaiters;
    this.drainWaiters = [];
    for (const waiter of ws) waiter();
  }

  /** Resolves when a frame was written out, the socket closed, or after a short poll. */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, DRAIN_POLL_MS);
      this.drainWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Whether a frame of `size` bytes fits under the bound now. */
  private fits(size: number): boolean {
    const buffered = this.socket.bufferedAmount;
    return buffered === 0 || buffered + size <= this.opts.maxBufferBytes;
  }

  /** Waits until a frame of `size` bytes fits under the bound; false when the socket is gone. */
  private async room(size: number): Promise<boolean> {
    while (!this.gone) {
      if (this.fits(size)) return true;
      await this.drained();
    }
    return false;
  }

  /**
   * Sends a frame once it fits and no other message is being written in fragments, in turns of
   * the event loop of its own (a large frame's write is work too); false when the socket is gone
   * (undefined: the take stopped while encoding it).
   */
  private async send(frame: Buffer | string | undefined): Promise<boolean> {
    if (frame === undefined) return false;
    const size = byteSize(frame);
    for (;;) {
      await this.writes.gateOpen();
      if (!(await this.room(size))) return false;
      await this.opts.turns.next();
      if (this.gone) return false;
      if (!this.writes.busy && this.fits(size)) break;
    }
    // Writing a large frame is bulk work too: a fragment per turn, charged to the turns' window.
    const wrote = this.writes.write(frame, typeof frame === 'string' ? this.onSent : () => this.written(frame));
    this.opts.turns.sent();
    return wrote;
  }

  /**
   * A reply to a refused control message, sent at once (it may pass the buffer bound by a
   * little). A client that keeps sending while not reading the replies is closed rather than
   * buffered for.
   */
  private reply(text: string): void {
    if (this.gone) return;
    if (this.socket.bufferedAmount + byteSize(text) > this.opts.maxBufferBytes + REPLY_SLACK_BYTES) {
      this.socket.close(1008, 'replies are not being read');
      return;
    }
    this.writes.sendText(text, this.onSent);
  }

  private async run(take: TakeMessage): Promise<void> {
    try {
      const source = await openBulkTake(this.ids, take);
      for await (const chunk of takeChunks(source, take, this.opts.chunkIds, () => this.gone, this.opts.turns.timed)) {
        if (!(await this.emit(take, chunk))) return;
      }
      if (this.gone) return;
      await this.send(doneMessage(take.req));
    } catch (err) {
      if (this.gone) return;
      await this.send(
        takeError(
          take.req,
          noteFailure('stream', err, this.log.child({ req: take.req, tag: take.tag }), this.opts.errors),
        ),
      );
    }
  }

  /** Sends a chunk as blocks of at most take.block IDs; false when the socket is gone. */
  private async emit(take: TakeMessage, chunk: Chunk): Promise<boolean> {
    return (await chunk.send(take.block, this.sink(take))) === undefined;
  }

  /** Writes a take's blocks as frames of its format; each answers 'gone' once the socket is. */
  private sink(take: TakeMessage): BlockSink<Gone> {
    const { req, format } = take;
    return {
      runs: async (runs, count, packing) => {
        // Wait for room before encoding, so a waiting take holds no frame.
        if (format === 'binary' && !(await this.room(8 + 8 * count))) return 'gone';
        // A token revoked since the last block ends the take here (TAG_NOT_FOUND).
        await this.ids.recheck(take.tag, take.token);
        let ok: boolean;
        if (format === 'binary') ok = await this.sendBinaryRuns(req, runs, count, packing);
        else if (format === 'ranges') ok = await this.send(rangesFromRuns(req, runs));
        else ok = await this.sendJson(req, runs, count, packing);
        return ok ? undefined : 'gone';
      },
      ids: (ids, start, end) => this.sendIds(take, ids, start, end),
    };
  }

  /**
   * A binary block of counter runs, a large one written as it is encoded: its bytes go out as a
   * fragment in the turn of the slice that makes them FRAGMENT_BYTES (fragmented-writes.ts);
   * false when the socket is gone.
   */
  private async sendBinaryRuns(
    req: number,
    runs: ReturnType<RangeQueue['take']>,
    count: number,
    packing: Packing,
  ): Promise<boolean> {
    const size = 8 + 8 * count;
    if (size <= FRAGMENT_BYTES)
      return this.send(await slicedBinaryFromRuns(this.slice, req, runs, count, packing, this.memory));
    await this.writes.hold();
    try {
      if (!(await this.room(size))) return false;
      let sent = 0;
      const frame = await slicedBinaryFromRuns(this.slice, req, runs, count, packing, this.memory, (block, end) => {
        const fin = end === block.length;
        // The bytes wait for a later piece until they make a fragment; with no single request
        // being served, until the block's end: it goes whole.
        if (!fin && (end - sent < FRAGMENT_BYTES || !this.writes.cutting())) return;
        this.writes.piece(block.subarray(sent, end), fin, fin ? () => this.written(block) : undefined);
        sent = end;
      });
      if (frame === undefined) return false;
      this.opts.turns.sent();
      return true;
    } finally {
      this.writes.release();
    }
  }

  /** ids[start, end) as one frame of the take's format, or as smaller ones when a frame would pass the buffer bound. */
  private async sendIds(
    take: TakeMessage,
    ids: readonly string[],
    start: number,
    end: number,
  ): Promise<Gone | undefined> {
    const { req, format } = take;
    let frame: Buffer | string | undefined;
    if (format === 'binary') frame = await slicedBinaryFromDecimals(this.slice, req, ids, start, end, this.memory);
    else if (format === 'ranges') frame = await slicedRangesFromDecimals(this.slice, req, ids, start, end);
    else frame = await slicedJsonFromStrings(this.slice, req, ids, start, end);
    if (frame === undefined) return 'gone';
    if (typeof frame === 'string' && byteSize(frame) > this.opts.maxBufferBytes && end - start > 1) {
      const mid = start + Math.ceil((end - start) / 2);
      return (await this.sendIds(take, ids, start, mid)) ?? this.sendIds(take, ids, mid, end);
    }
    await this.ids.recheck(take.tag, take.token);
    return (await this.send(frame)) ? undefined : 'gone';
  }

  private async sendJson(
    req: number,
    runs: ReturnType<RangeQueue['take']>,
    count: number,
    packing: Packing,
  ): Promise<boolean> {
    const frame = await slicedJsonFromRuns(this.slice, req, runs, count, packing);
    if (frame === undefined) return false;
    if (frame.length <= this.opts.maxBufferBytes || count === 1) return this.send(frame);
    const queue = new RangeQueue();
    for (const run of runs) queue.push(run);
    const half = Math.ceil(count / 2);
    return (
      (await this.sendJson(req, queue.take(half), half, packing)) &&
      this.sendJson(req, queue.take(count - half), count - half, packing)
    );
  }
}
