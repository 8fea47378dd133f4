// Whether this process is draining: a shutdown was asked for, and for SHUTDOWN_DRAIN_MS it
// keeps serving every transport while it reports not ready (/readyz, idmint_ready, gRPC
// health), so load balancers and Kubernetes endpoints stop sending it requests before it
// stops accepting them. Readiness reads the flag; the gRPC health service hears it at once.
export class Drain {
  private started = false;
  private readonly listeners = new Set<() => void>();

  get draining(): boolean {
    return this.started;
  }

  /** Starts draining; false when it had started already. */
  begin(): boolean {
    if (this.started) return false;
    this.started = true;
    for (const fn of this.listeners) fn();
    return true;
  }

  /** Calls fn when draining begins; returns a function that stops listening. */
  onBegin(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
