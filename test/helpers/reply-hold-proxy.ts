// A loopback TCP proxy that can hold a server's replies: while `hold()` is on, what clients
// send still reaches the server (which runs it), but what the server answers is kept back, in
// order, until `release()`. For a read that has happened on the server but whose answer has
// not reached the process yet (a slow network, a busy process).
import { connect, createServer, type Server, type Socket } from 'node:net';

export class ReplyHoldProxy {
  private holding = false;
  private readonly queued: { readonly client: Socket; readonly chunk: Buffer }[] = [];
  private readonly sockets = new Set<Socket>();
  /** Reply chunks kept back since the proxy started. */
  heldChunks = 0;

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<ReplyHoldProxy> {
    let self: ReplyHoldProxy | undefined;
    const server = createServer((client) => self!.accept(client, targetHost, targetPort));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new ReplyHoldProxy(server, (server.address() as { port: number }).port);
    return self;
  }

  private accept(client: Socket, host: string, port: number): void {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
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

  async close(): Promise<void> {
    this.release();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
