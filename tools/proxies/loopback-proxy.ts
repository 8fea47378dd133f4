// What every test proxy shares: a TCP server on a free loopback port in front of a real server
// (Redis, MySQL), the connection to the target for each client, the sockets of both sides
// tracked while open, and a close that drops them all. Each proxy adds what it does to the
// bytes in between (block, delay, hold, freeze).
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export abstract class LoopbackProxy {
  private server?: Server;
  private listening = 0;
  /** Sockets of both sides, while open. */
  protected readonly sockets = new Set<Socket>();

  protected constructor(
    protected targetPort: number,
    protected readonly targetHost = '127.0.0.1',
  ) {}

  /** The loopback port clients connect to. */
  get port(): number {
    return this.listening;
  }

  /** Starts listening; every client accepted goes to `accept`. */
  protected async listen(): Promise<this> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.server = server;
    this.listening = (server.address() as AddressInfo).port;
    return this;
  }

  protected abstract accept(client: Socket): void;

  /** Keeps s in `sockets` until it closes; its errors are ignored (its close tells the other side). */
  protected track(s: Socket): Socket {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
    s.on('error', () => undefined);
    return s;
  }

  /** The client's connection to the target: both tracked, and either side's close closes the other. */
  protected connectUpstream(client: Socket): Socket {
    const upstream = connect(this.targetPort, this.targetHost);
    this.track(client);
    this.track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    return upstream;
  }

  /** Drops every connection and stops listening. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}
