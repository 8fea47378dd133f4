// The bytes that gRPC Take calls have written and HTTP/2 has not taken yet, across every call
// of the process: at most GRPC_MAX_BUFFERED_BYTES (each call also at most
// STREAM_MAX_BUFFER_BYTES of its own). A call that has nothing waiting may always write one
// block, so every call moves on as its client reads, however full the budget; the others wait
// for room, and while they wait they take no IDs. Bytes leave the budget as HTTP/2 takes them
// (as fast as the clients read, at the HTTP/2 level), and calls waiting for room are woken then.

/** Which bound a call waited for: its own (STREAM_MAX_BUFFER_BYTES) or the process's. */
export type Bound = 'call' | 'process';

/** What the budget reports (src/metrics/grpc-take-metrics.ts). */
export interface TakeBudgetObserver {
  /** Bytes held now, across all calls. */
  held(bytes: number): void;
  /** A call began waiting for room (once per wait). */
  waited(bound: Bound): void;
}

export class TakeBudget {
  private bytes = 0;
  private waiting = new Set<() => void>();

  constructor(
    readonly maxBytes: number,
    private readonly observer?: TakeBudgetObserver,
  ) {}

  /** Bytes held now, across all calls. */
  get held(): number {
    return this.bytes;
  }

  /** Whether `bytes` more fit the process's bound. */
  fits(bytes: number): boolean {
    return this.bytes + bytes <= this.maxBytes;
  }

  hold(bytes: number): void {
    this.bytes += bytes;
    this.observer?.held(this.bytes);
  }

  /** Bytes HTTP/2 has taken: wakes every call waiting for room in the process's bound. */
  release(bytes: number): void {
    this.bytes -= bytes;
    this.observer?.held(this.bytes);
    const ws = this.waiting;
    if (ws.size === 0) return;
    this.waiting = new Set();
    for (const wake of ws) wake();
  }

  /** Calls `wake` at the next release (once). */
  onRelease(wake: () => void): void {
    this.waiting.add(wake);
  }

  /** Forgets a call's wake (the call ended). */
  forget(wake: () => void): void {
    this.waiting.delete(wake);
  }

  waited(bound: Bound): void {
    this.observer?.waited(bound);
  }
}
