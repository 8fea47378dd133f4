// A loopback TCP proxy that can hold a server's replies: while `hold()` is on, what clients
// send still reaches the server (which runs it), but what the server answers is kept back, in
// order, until `release()`. For a read that has happened on the server but whose answer has
// not reached the process yet (a slow network, a busy process).
import type { Socket } from 'node:net';
import { LoopbackProxy } from './loopback-proxy.js';

export class ReplyHoldProxy extends LoopbackProxy {
  private holding = false;
  private readonly queued: { readonly client: Socket; readonly chunk: Buffer }[] = [];
  /** Reply chunks kept back since the proxy started. */
  heldChunks = 0;

  static start(targetPort: number, targetHost = '127.0.0.1'): Promise<ReplyHoldProxy> {
    return new ReplyHoldProxy(targetPort, targetHost).listen();
  }

  protected accept(client: Socket): void {
    const upstream = this.connectUpstream(client);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      if (!this.holding) {
        client.write(chunk);
        return;
      }
      this.queued.push({ client, chunk });
      this.heldChunks++;
    });
  }

  /** From now on the server's replies are kept back. */
  hold(): void {
    this.holding = true;
  }

  /** Delivers every reply kept back, in order, and lets replies through again. */
  release(): void {
    this.holding = false;
    for (const { client, chunk } of this.queued.splice(0)) if (!client.destroyed) client.write(chunk);
  }

  override async close(): Promise<void> {
    this.release();
    await super.close();
  }
}
