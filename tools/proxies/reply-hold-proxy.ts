// A loopback TCP proxy that can hold a server's replies: while `hold()` is on, what clients
// send still reaches the server (which runs it), but what the server answers is kept back, in
// order, until `release()`. For a read that has happened on the server but whose answer has
// not reached the process yet (a slow network, a busy process). `holdNew()` keeps back only the
// replies of connections opened from then on: connections already open (a subscription) go on
// as before, while every new one waits (a server slow to answer new clients); `holdNew(n)` lets
// the first n reply chunks of each such connection through (a handshake answered, what follows not).
import type { Socket } from 'node:net';
import { LoopbackProxy } from './loopback-proxy.js';

export class ReplyHoldProxy extends LoopbackProxy {
  private holding = false;
  private holdingNew = false;
  /** Reply chunks let through on each connection opened while holdingNew is on, before its replies are held. */
  private passFirst = 0;
  /** Connections opened while holdingNew was on, and the reply chunks each was let through so far. */
  private readonly heldNew = new WeakMap<Socket, number>();
  private readonly queued: { readonly client: Socket; readonly chunk: Buffer }[] = [];
  /** Reply chunks kept back since the proxy started. */
  heldChunks = 0;

  static start(targetPort: number, targetHost = '127.0.0.1'): Promise<ReplyHoldProxy> {
    return new ReplyHoldProxy(targetPort, targetHost).listen();
  }

  protected accept(client: Socket): void {
    const upstream = this.connectUpstream(client);
    if (this.holdingNew) this.heldNew.set(client, 0);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      const passed = this.holdingNew ? this.heldNew.get(client) : undefined;
      if (!this.holding && (passed === undefined || passed < this.passFirst)) {
        if (passed !== undefined) this.heldNew.set(client, passed + 1);
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

  /**
   * From now on the replies of connections opened from now on are kept back, after each one's
   * first passFirst chunks.
   */
  holdNew(passFirst = 0): void {
    this.holdingNew = true;
    this.passFirst = passFirst;
  }

  /** Delivers every reply kept back, in order, and lets replies through again. */
  release(): void {
    this.holding = false;
    this.holdingNew = false;
    this.passFirst = 0;
    for (const { client, chunk } of this.queued.splice(0)) if (!client.destroyed) client.write(chunk);
  }

  override async close(): Promise<void> {
    this.release();
    await super.close();
  }
}
