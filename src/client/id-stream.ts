// client.stream(): an async iterator over the IDs of one tag that keeps a local buffer of
// about `prefetch` IDs topped up by takes on a socket of its own. A dropped socket is
// reopened with backoff; the IDs it had already delivered stay in the buffer, those still
// in flight are lost (the server counts them as spent), so no ID is ever yielded twice.
import { StreamConnection, type Format, type TakeRequest } from './connection.js';
import { IdmintClientError } from './client-error.js';

export interface IdStreamOptions {
  /** IDs kept ready locally; a take is sent when the buffer falls to half of it. Default 10000. */
  readonly prefetch?: number;
  /** Wire format. Default "binary" ("json" for rule tags). */
  readonly format?: Format;
  /** IDs per block on the wire; the server's default when unset. */
  readonly block?: number;
  readonly key?: string;
  readonly app?: string;
  readonly salt?: string;
  /** First and largest wait before reopening a dropped socket, ms. Defaults 50 and 2000. */
  readonly reconnectMinMs?: number;
  readonly reconnectMaxMs?: number;
}

export interface IdStreamContext {
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly timeoutMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class IdStream<T extends bigint | string> implements AsyncIterableIterator<T> {
  /** Sockets opened after the first (after drops or transient errors). */
  reconnects = 0;
  private readonly chunks: T[][] = [];
  private head = 0;
  private size = 0;
  private conn?: StreamConnection;
  private connecting = false;
  private taking = false;
  private ended = false;
  private failure?: IdmintClientError;
  private wakeUp?: () => void;
  /** A socket was opened once: later opens count as reconnects. */
  private opened = false;
  private backoff: number;
  private readonly prefetch: number;
  private readonly request: Omit<TakeRequest, 'count'>;

  constructor(
    private readonly ctx: IdStreamContext,
    tag: string,
    private readonly opts: IdStreamOptions = {},
  ) {
    this.prefetch = Math.max(1, opts.prefetch ?? 10_000);
    this.backoff = opts.reconnectMinMs ?? 50;
    const format = opts.format ?? (opts.app !== undefined ? 'json' : 'binary');
    this.request = { tag, format, block: opts.block, key: opts.key, app: opts.app, salt: opts.salt };
  }

  /** IDs received and not yet yielded. */
  get buffered(): number {
    return this.size;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.size > 0) {
        const chunk = this.chunks[0];
        const id = chunk[this.head++];
        this.size--;
        if (this.head === chunk.length) {
          this.chunks.shift();
          this.head = 0;
        }
        this.topUp();
        return { value: id, done: false };
      }
      if (this.failure) {
        const err = this.failure;
        this.finish();
        throw err;
      }
      if (this.ended) return { value: undefined, done: true };
      this.topUp();
      await new Promise<void>((resolve) => (this.wakeUp = resolve));
    }
  }

  /** Stops the stream (as `break` in for await does); buffered IDs are dropped. */
  async return(): Promise<IteratorResult<T>> {
    this.finish();
    return { value: undefined, done: true };
  }

  /** Same as return(). */
  close(): void {
    this.finish();
  }

  private finish(): void {
    this.ended = true;
    this.chunks.length = 0;
    this.size = 0;
    this.conn?.close();
    this.conn = undefined;
    this.wake();
  }

  private wake(): void {
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  private topUp(): void {
    if (this.ended || this.failure || this.taking || this.connecting) return;
    if (this.size > this.prefetch / 2) return;
    if (!this.conn?.open) {
      void this.connect();
      return;
    }
    this.taking = true;
    const conn = this.conn;
    conn.take(
      { ...this.request, count: this.prefetch - this.size },
      {
        ids: (ids) => {
          if (this.ended || ids.length === 0) return;
          this.chunks.push(ids as T[]);
          this.size += ids.length;
          this.backoff = this.opts.reconnectMinMs ?? 50;
          this.wake();
        },
        done: () => {
          this.taking = false;
          this.topUp();
        },
        fail: (err) => {
          this.taking = false;
          if (this.ended) return;
          if (!err.transient) {
            this.failure = err;
            this.wake();
            return;
          }
          if (conn === this.conn && conn.open) conn.close();
          this.conn = undefined;
          void this.connect();
        },
      },
    );
  }

  private async connect(): Promise<void> {
    if (this.connecting || this.ended) return;
    this.connecting = true;
    try {
      let first = !this.opened;
      for (;;) {
        if (!first) {
          await sleep(this.backoff);
          this.backoff = Math.min(this.opts.reconnectMaxMs ?? 2000, this.backoff * 2);
        }
        if (this.ended) return;
        try {
          const conn = await StreamConnection.open(this.ctx.url, {
            headers: this.ctx.headers,
            timeoutMs: this.ctx.timeoutMs,
          });
          if (this.ended) {
            conn.close();
            return;
          }
          if (this.opened) this.reconnects++;
          this.opened = true;
          this.conn = conn;
          break;
        } catch {
          first = false;
        }
      }
    } finally {
      this.connecting = false;
    }
    this.topUp();
  }
}
