// A loopback TCP proxy in front of a real server, for cutting a service off without touching
// it: `block()` drops every connection and leaves new ones hanging unanswered (as a network
// partition does); `unblock()` lets traffic through again; `retarget()` sends every new
// connection to another server and drops the old ones (a failover behind one address).
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private blocked = false;
  private readonly pairs = new Set<Socket>();
  private readonly held = new Set<Socket>();

  private constructor(private readonly server: Server, readonly port: number, private targetPort: number) {}

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    let self: TcpProxy | undefined;
    const server = createServer((client) => self!.accept(client, targetHost, self!.targetPort));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    self = new TcpProxy(server, (server.address() as { port: number }).port, targetPort);
    return self;
  }

  /** From now on connections go to targetPort; the open ones are dropped. */
  retarget(targetPort: number): void {
    this.targetPort = targetPort;
    for (const s of this.pairs) s.destroy();
  }

  private accept(client: Socket, host: string, port: number): void {
    client.on('error', () => undefined);
    if (this.blocked) {
      this.held.add(client);
      client.once('close', () => this.held.delete(client));
      return;
    }
    const upstream = connect(port, host);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
    for (const s of [client, upstream]) {
      this.pairs.add(s);
      s.once('close', () => this.pairs.delete(s));
    }
  }

  block(): void {
    this.blocked = true;
    for (const s of this.pairs) s.destroy();
  }

  unblock(): void {
    this.blocked = false;
    for (const s of this.held) s.destroy();
  }

  async close(): Promise<void> {
    this.block();
    this.unblock();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
