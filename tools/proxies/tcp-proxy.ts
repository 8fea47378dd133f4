// A loopback TCP proxy in front of a real server, for cutting a service off without touching
// it: `block()` drops every connection and leaves new ones hanging unanswered (as a network
// partition does); `unblock()` lets traffic through again; `retarget()` sends every new
// connection to another server and drops the old ones (a failover behind one address).
import type { Socket } from 'node:net';
import { LoopbackProxy } from './loopback-proxy.js';

export class TcpProxy extends LoopbackProxy {
  private blocked = false;
  private readonly held = new Set<Socket>();

  static start(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    return new TcpProxy(targetPort, targetHost).listen();
  }

  /** From now on connections go to targetPort; the open ones are dropped. */
  retarget(targetPort: number): void {
    this.targetPort = targetPort;
    for (const s of this.sockets) s.destroy();
  }

  protected accept(client: Socket): void {
    if (this.blocked) {
      client.on('error', () => undefined);
      this.held.add(client);
      client.once('close', () => this.held.delete(client));
      return;
    }
    const upstream = this.connectUpstream(client);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  block(): void {
    this.blocked = true;
    for (const s of this.sockets) s.destroy();
  }

  unblock(): void {
    this.blocked = false;
    for (const s of this.held) s.destroy();
  }

  override async close(): Promise<void> {
    this.block();
    this.unblock();
    await super.close();
  }
}
